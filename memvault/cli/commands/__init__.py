"""CLI commands, one small module per group; importing this package registers them all."""

from memvault.cli.commands import entries, history, init  # noqa: F401
