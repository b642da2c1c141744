"""Running the MCP server: over stdio (an agent spawns `memvault mcp`) or streamable HTTP.

HTTP follows `memvault serve`'s rules (memvault.server.auth): 127.0.0.1 by default, any other address
only with `server.api_key`, and with a key set every request must carry it (Bearer or X-API-Key).
Scoped keys (`server.keys`) are not accepted here: MCP tools are not confined to scopes yet, so a
server configured with scoped keys only (no `server.api_key`) refuses to serve MCP over HTTP rather than
serve it open.
"""

from __future__ import annotations

from memvault.errors import ConfigError, MemvaultError
from memvault.server.auth import ApiKeyMiddleware, check_bind
from memvault.server.run import base_url, listen
from memvault.settings import Settings

MCP_PATH = "/mcp"


def run_stdio(settings: Settings) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    from memvault.mcp.server import build_server

    server = build_server(settings)
    try:
        server.run("stdio")
    finally:
        server.memory_tools.end_session()  # the client closed the pipe: its session is over


def http_app(settings: Settings, host: str, server=None):
    """The streamable-HTTP ASGI app at /mcp, behind the API key when one is set (`server`: the MCP
    server to serve, built from `settings` when not given)."""
    from memvault.mcp.server import build_server

    if settings.server.keys and not settings.server.api_key:
        raise ConfigError("memvault mcp does not take scoped keys (server.keys): set server.api_key for MCP over HTTP")
    app = (server or build_server(settings)).streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    return ApiKeyMiddleware(app, settings.server.api_key) if settings.server.api_key else app


def run_http(settings: Settings, host: str, port: int, on_listening=None) -> None:
    """Serve streamable HTTP on host:port until interrupted; `on_listening(url)` gets the endpoint."""
    import uvicorn

    from memvault.mcp.server import build_server

    check_bind(host, settings.server.api_key)
    mcp_server = build_server(settings)
    app = http_app(settings, host, mcp_server)
    sock = listen(host, port)
    if on_listening:
        on_listening(base_url(sock) + MCP_PATH)
    config = uvicorn.Config(app, host=host, port=sock.getsockname()[1], log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        mcp_server.memory_tools.end_session()  # the server stops: every session it served ends
    if not server.started:
        raise MemvaultError("the MCP server did not start (see the log above)")
