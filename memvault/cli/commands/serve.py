"""`memvault serve`: the OpenAI-compatible memory proxy and the REST memory API, until Ctrl-C."""

from typing import Annotated

import typer

from memvault.cli.base import command
from memvault.cli.options import ConfigOpt, HostOpt, PortOpt, VaultOpt
from memvault.cli.output import say


@command("serve")
def serve(
    host: HostOpt = None, port: PortOpt = None,
    allow_reset: Annotated[bool, typer.Option("--allow-reset", help="Allow POST /v1/reset/ (soft-deletes "
                                              "everything).")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Serve the OpenAI-compatible memory proxy and the REST memory API until Ctrl-C.

    Point an OpenAI client's base_url at http://HOST:PORT/v1; the memory API is under /v1/memories/.

    Without server.api_key, the client's bearer token is passed on to the LLM as its API key.

    With server.api_key, clients must send it (Bearer or X-API-Key): it is never passed on.

    The LLM key then comes from an X-Upstream-Authorization header, llm.api_key, or the provider's variable.
    """
    from memvault import settings as settings_module
    from memvault.extras import require

    require("server")
    from memvault.server.run import serve as run_server
    from memvault.ui.app import mount as web_page

    flags = {"vault.path": str(vault) if vault else None, "server.host": host, "server.port": port,
             "server.allow_reset": True if allow_reset else None}
    settings = settings_module.load(config, flags)
    say(f"vault: {settings.vault.path}")
    try:
        run_server(settings, on_listening=lambda url: say(f"listening on {url}/v1 (Ctrl-C to stop)"), page=web_page)
    except KeyboardInterrupt:
        pass  # uvicorn has already shut down cleanly; a second Ctrl-C lands here
    say("memvault: server stopped")
