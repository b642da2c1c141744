"""`memvault config show|set|path`: the effective settings and where each came from."""

from typing import Annotated

import typer

from memvault.cli.base import command, group
from memvault.cli.options import ConfigOpt, JsonOpt
from memvault.cli.output import print_json, say, table

config_app = group("config", "Show or change settings (file < environment < flags).")
SECRET_KEYS = {"llm.api_key", "server.api_key", "server.keys"}


def shown(key: str, value):
    return "***" if key in SECRET_KEYS and value else value


def described(settings, key: str) -> str:
    """A value as a person reads it: "auto" says what it comes to with these settings."""
    value = shown(key, settings.get(key))
    if value is None and key == "retrieval.score_threshold":
        from memvault.shapes import threshold_for

        with_reranker = bool(settings.retrieval.reranker)
        which = "with" if with_reranker else "without"
        return f"auto: {threshold_for(None, with_reranker):.2g} ({which} a cross-encoder)"
    return "auto" if value is None else str(value)


@command("show", group=config_app)
def config_show(config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Print every setting's effective value and its source."""
    from memvault import settings as settings_module

    settings = settings_module.load(config)
    sources = {key: settings.sources.get(key, "default") for key in settings.keys()}
    if json:  # programs get the value itself: null for "auto"
        print_json({key: {"value": shown(key, settings.get(key)), "source": source} for key, source in sources.items()})
    else:
        table(["key", "value", "source"], [[key, described(settings, key), source] for key, source in sources.items()])


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
    say(f"{key} = {settings_module.AUTO if typed is None else repr(shown(key, typed))} in {path}")


@command("path", group=config_app)
def config_path(config: ConfigOpt = None) -> None:
    """Print the config file's path (it need not exist yet)."""
    from memvault import settings as settings_module

    typer.echo(str(settings_module.config_path(config)))
