"""`memvault mcp`: the memory as a Model Context Protocol server for agents (stdio, or HTTP with --http)."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command
from memvault.cli.options import ConfigOpt, VaultOpt
from memvault.cli.output import say
from memvault.errors import UsageError

MCP_PORT = 8766  # next to `serve`'s 8765, so both can run


@command("mcp")
def mcp(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of "
                                       "stdio.")] = False,
    host: Annotated[Optional[str], typer.Option("--host", help="With --http: address to bind (default 127.0.0.1; "
                                                "any other needs server.api_key / MEMVAULT_API_KEY).",
                                                show_default=False)] = None,
    port: Annotated[Optional[int], typer.Option("--port", "-p", min=0, max=65535, help=f"With --http: port "
                                                f"(default {MCP_PORT}; 0: any free port).", show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Serve the memory to agents over the Model Context Protocol (MCP).

    By default over stdio: an MCP client (Claude Desktop, Claude Code, Cursor...) starts `memvault mcp`
    itself. Tools: remember, recall, get_memory, list_memories, update_memory, forget, memory_history,
    list_rules, add_rule, scratchpad_write, scratchpad_read, scratchpad_list, read_core, update_core.

    With --http, streamable HTTP at http://HOST:PORT/mcp until Ctrl-C; with server.api_key set, clients
    must send it (Authorization: Bearer KEY).
    """
    from memvault import settings as settings_module
    from memvault.extras import require

    require("mcp")
    from memvault.mcp.transport import run_http, run_stdio

    if not http and (host is not None or port is not None):
        raise UsageError("--host and --port go with --http (stdio has no address)")
    settings = settings_module.load(config, {"vault.path": str(vault) if vault else None, "server.host": host})
    if not http:
        run_stdio(settings)  # stdout is the protocol: nothing else may be printed there
        return
    say(f"vault: {settings.vault.path}")
    try:
        run_http(settings, settings.server.host, MCP_PORT if port is None else port,
                 on_listening=lambda url: say(f"MCP over streamable HTTP at {url} (Ctrl-C to stop)"))
    except KeyboardInterrupt:
        pass
    say("memvault: MCP server stopped")
