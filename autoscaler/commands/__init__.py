"""The ``autoscaler`` subcommands, one module each; ``autoscaler.cli`` registers the modules named here."""

COMMANDS = ["plan", "bench", "run", "snapshot"]
