"""The applications: the `alpha2` command and its subcommands. They compose the three packages."""
