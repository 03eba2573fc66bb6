"""The `draguard` command: the dispatcher over every package's subcommands, and `serve`."""
