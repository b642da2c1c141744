"""The `memvault` program: the typer application with every command registered (see cli/base.py)."""

from memvault.cli import commands  # noqa: F401 - importing the command modules registers them on `app`
from memvault.cli.base import app


def main() -> None:
    app()
