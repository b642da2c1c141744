"""CLI commands, one small module per group; importing this package registers them all."""

from memvault.cli.commands import config, entries, history, init, maintenance  # noqa: F401
