"""`memvault config show|set|path`: the effective settings and where each came from."""

from typing import Annotated

import typer

from memvault.cli.app import app, command
from memvault.cli.options import ConfigOpt, JsonOpt
from memvault.cli.output import print_json, say, table

config_app = typer.Typer(help="Show or change settings (file < environment < flags).", no_args_is_help=True)
app.add_typer(config_app, name="config")
SECRET_KEYS = {"llm.api_key", "server.api_key", "server.keys"}


def shown(key: str, value) -> str:
    return "***" if key in SECRET_KEYS and value else value


@command("show", group=config_app)
def config_show(config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Print every setting's effective value and its source."""
    from memvault import settings as settings_module

    settings = settings_module.load(config)
    rows = [(key, shown(key, settings.get(key)), settings.sources.get(key, "default")) for key in settings.keys()]
    if json:
        print_json({key: {"value": value, "source": source} for key, value, source in rows})
    else:
        table(["key", "value", "source"], [list(row) for row in rows])


@command("set", group=config_app)
def config_set(
    key: Annotated[str, typer.Argument(help="section.name, e.g. llm.model", show_default=False)],
    value: Annotated[str, typer.Argument(help="The value (checked against the setting's type).", show_default=False)],
    config: ConfigOpt = None,
) -> None:
    """Write one setting into the config file."""
    from memvault import settings as settings_module

    path = settings_module.config_path(config)
    typed = settings_module.write_value(path, key, value)
    say(f"{key} = {shown(key, typed)!r} in {path}")


@command("path", group=config_app)
def config_path(config: ConfigOpt = None) -> None:
    """Print the config file's path (it need not exist yet)."""
    from memvault import settings as settings_module

    typer.echo(str(settings_module.config_path(config)))
