"""`memvault ui`: the web page to browse, search, audit and edit the vault, until Ctrl-C."""

from typing import Annotated

import typer

from memvault.cli.base import command
from memvault.cli.options import ConfigOpt, HostOpt, PortOpt, VaultOpt
from memvault.cli.output import say


@command("ui")
def ui(
    host: HostOpt = None, port: PortOpt = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Do not open the page in a browser.")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Serve the vault's web page (browse, search, history, time travel, edit) until Ctrl-C.

    With a key (server.api_key), the browser asks for it: any user name, the key as password.
    """
    from memvault import settings as settings_module
    from memvault.extras import require

    require("ui")
    from memvault.ui.run import serve

    flags = {"vault.path": str(vault) if vault else None, "server.host": host, "server.port": port}
    settings = settings_module.load(config, flags)
    try:
        serve(settings, open_browser=not no_browser,
              on_listening=lambda url: say(f"the page of {settings.vault.path}: {url} (Ctrl-C to stop)"))
    except KeyboardInterrupt:
        pass
    say("memvault: page stopped")
