"""Commands that typer turns into click commands only when one is used.

typer converts every registered command at each start, reading each function's signature and
annotations: for memvault's ~45 commands that was a third of `memvault --help` and of every TAB.
Here a group knows its commands by name and docstring alone, which is all `memvault --help` and a
TAB on a command name need; typer builds a command when it is run, asked for its help or completed.
"""

import inspect
from typing import Any

import click
from typer.core import TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo

# group name ("memvault", "rules", ...) -> command name -> what typer builds the command from, in order
PENDING: dict[str, dict[str, CommandInfo]] = {}


def register(group: str, info: CommandInfo) -> None:
    PENDING.setdefault(group, {})[info.name] = info


class LazyCommand(click.Command):
    """A command known by its name and help, built by typer the first time it is used."""

    def __init__(self, info: CommandInfo, rich_markup_mode: Any) -> None:
        # typer takes a command's help from its docstring the same way: the listing reads as before
        super().__init__(info.name, help=inspect.getdoc(info.callback), short_help=info.short_help,
                         hidden=info.hidden, deprecated=info.deprecated)
        self.info, self.rich_markup_mode = info, rich_markup_mode
        self.built: click.Command | None = None

    def load(self) -> click.Command:
        if self.built is None:  # pretty_exceptions_short: typer's default (memvault turns pretty exceptions off)
            self.built = get_command_from_info(self.info, pretty_exceptions_short=True,
                                               rich_markup_mode=self.rich_markup_mode)
        return self.built

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        # click runs, helps and completes a subcommand through the context made here: its command is the built one
        return self.load().make_context(info_name, args, parent=parent, **extra)


def loaded(command: click.Command) -> click.Command:
    """The full click command (with its parameters), built now if it was not yet."""
    return command.load() if isinstance(command, LazyCommand) else command


class LazyGroup(TyperGroup):
    """A typer group whose registered commands (memvault.cli.base.command) wait to be used to be built."""

    def __init__(self, *, name: str | None = None, commands: Any = None, **attrs: Any) -> None:
        pending = {command: LazyCommand(info, attrs.get("rich_markup_mode"))
                   for command, info in PENDING.get(name or "", {}).items()}
        super().__init__(name=name, commands={**pending, **(commands or {})}, **attrs)
