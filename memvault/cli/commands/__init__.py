"""CLI commands, one small module per group; importing this package registers them all."""

from memvault.cli.commands import chat, config, entries, history, index, init, maintenance, search  # noqa: F401
