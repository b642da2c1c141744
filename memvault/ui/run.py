"""Running `memvault ui`: check the bind and the vault, listen, open the browser, serve until Ctrl-C."""

from __future__ import annotations

from memvault.settings import Settings
from memvault.ui import PREFIX


def serve(settings: Settings, open_browser: bool = True, on_listening=None) -> None:
    """Serve the page until interrupted; refuses a non-loopback address without a key."""
    from memvault.core import Memvault
    from memvault.errors import MemvaultError
    from memvault.server.auth import check_bind
    from memvault.server.run import base_url, listen, uvicorn_server
    from memvault.ui.app import create_app

    check_bind(settings.server.host, settings.server.api_key or "".join(settings.server.keys))
    Memvault.open(settings).close()  # a missing or broken vault: one clear line before anything listens
    sock = listen(settings.server.host, settings.server.port)
    url = base_url(sock) + PREFIX + "/"
    if on_listening:
        on_listening(url)
    server = uvicorn_server(settings, sock, "warning", create_app(settings))
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    server.run(sockets=[sock])
    if not server.started:
        raise MemvaultError("the page's server did not start (see the log above)")
