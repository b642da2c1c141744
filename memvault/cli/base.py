"""The typer application object and what every command module uses: the `command` decorator (errors
caught here once), opening the vault, reading TEXT. Command modules import this, never cli/app.py,
which imports them all to register them."""

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import click
import typer
from typer.models import CommandInfo

from memvault import __version__
from memvault.cli.lazy import LazyGroup, loaded, register
from memvault.errors import MemvaultError
from memvault.extras import MissingExtraError

app = typer.Typer(
    name="memvault",
    help="A persistent memory for LLMs that you can read, edit and audit: markdown files in git.",
    no_args_is_help=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    suggest_commands=False,  # click already says "Did you mean ...?": typer's own would say it twice
    # Plain click help: typer's rich help imports rich.markdown and markdown-it, which alone cost more
    # than the 0.3 s that `--help` and every TAB completion may take.
    rich_markup_mode=None,
    cls=LazyGroup,  # each command is built when used, not at every start (cli/lazy.py)
)


def version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"memvault {__version__}\n")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True,
                                 help="Print the version and exit."),
    directory: Optional[Path] = typer.Option(None, "-C", help="Run as if memvault was started in PATH (as git -C).",
                                             metavar="PATH", show_default=False),
    vault: Optional[Path] = typer.Option(None, "--vault", help="Vault folder for the command (its own --vault wins).",
                                         show_default=False),
    config: Optional[Path] = typer.Option(None, "--config", help="Config file for the command (its own --config "
                                          "wins).", show_default=False),
) -> None:
    """A persistent memory for LLMs that you can read, edit and audit: markdown files in git."""
    if directory is not None:
        try:
            os.chdir(directory)
        except OSError as exc:
            raise typer.BadParameter(f"cannot change to {directory}: {exc.strerror}", param_hint="-C") from None
    given = {name: value for name, value in (("vault", vault), ("config", config)) if value is not None}
    if given:
        ctx.default_map = command_defaults(ctx.command, given)


def command_defaults(group: Any, given: dict[str, Any]) -> dict[str, Any]:
    """click's default_map for every command under `group` that takes these options: `memvault --vault
    P add x` is `memvault add x --vault P` (an option given after the command still wins)."""
    defaults: dict[str, Any] = {}
    for name, sub in getattr(group, "commands", {}).items():
        if getattr(sub, "commands", None):
            defaults[name] = command_defaults(sub, given)
        else:
            params = {param.name for param in loaded(sub).params}
            defaults[name] = {key: value for key, value in given.items() if key in params}
    return defaults


def command(name: str, group: typer.Typer | None = None, **kwargs: Any) -> Callable:
    """Register a command whose memvault errors become one line on stderr and an exit code (on `app`,
    or on a `group`; typer builds it when it is first used: cli/lazy.py)."""

    def register_command(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            from memvault.cli.output import error

            try:
                return fn(*a, **kw)
            except MissingExtraError as exc:  # "memvault serve needs the server extra: pip install ..."
                error(exc.said_by(click.get_current_context().command_path))
                raise typer.Exit(exc.exit_code) from None
            except MemvaultError as exc:
                error(str(exc))
                raise typer.Exit(exc.exit_code) from None
            except KeyboardInterrupt:
                sys.stderr.write("\nmemvault: interrupted\n")
                raise typer.Exit(130) from None
            except BrokenPipeError:
                # The reader of a pipe went away (| head): not an error worth a word.
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                raise typer.Exit(0) from None
            except (typer.Exit, typer.Abort, SystemExit):
                raise
            except Exception as exc:  # a bug: say so in one line unless asked for the traceback
                if os.environ.get("MEMVAULT_DEBUG"):
                    raise
                error(f"internal error: {type(exc).__name__}: {exc} (set MEMVAULT_DEBUG=1 for the traceback)")
                raise typer.Exit(1) from None

        register((group or app).info.name, CommandInfo(name, callback=wrapper, **kwargs))
        return wrapper

    return register_command


def group(name: str, help: str) -> typer.Typer:
    """A command group under `memvault` (`memvault NAME COMMAND`), its commands registered by `command`."""
    commands = typer.Typer(name=name, help=help, no_args_is_help=True, cls=LazyGroup)
    app.add_typer(commands)
    return commands


def open_memvault(vault: Path | None, config: Path | None, create: bool = False, **flags: Any):
    """Settings from every source (flags last), then the vault they name."""
    from memvault import settings as settings_module
    from memvault.core import Memvault

    flag_values = {"vault.path": str(vault) if vault else None, **flags}
    settings = settings_module.load(config, flag_values)
    return Memvault.open(settings, create=create)


def read_text_argument(text: str | None) -> str:
    """TEXT, or standard input when TEXT is '-' or absent and input is piped."""
    if text == "-" or (text is None and not sys.stdin.isatty()):
        data = sys.stdin.buffer.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise MemvaultError("standard input is not UTF-8 text") from None
    if text is None:
        from memvault.errors import UsageError

        raise UsageError("no text given: pass TEXT, or '-' to read standard input")
    return text
