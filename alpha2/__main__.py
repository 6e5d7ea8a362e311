"""`python -m alpha2` runs the `alpha2` command."""

import sys

try:
    from alpha2.apps.cli import main
except KeyboardInterrupt:  # Ctrl-C before main() could install its handlers: the same one line
    print("alpha2: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
