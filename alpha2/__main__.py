"""`python -m alpha2` runs the `alpha2` command."""

import sys

from alpha2.apps.cli import main

sys.exit(main())
