"""Running the server: bind a socket (one-line errors for refused binds), then uvicorn.

    serve(settings)                       # blocks until Ctrl-C (`memvault serve`)
    with running(settings) as base_url:   # in a background thread, for tests and benchmarks
        ...
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from memvault.errors import ConfigError, MemvaultError
from memvault.server.auth import check_bind
from memvault.settings import Settings

START_TIMEOUT = 600.0  # start-up reconciles the index with the files: a first index of a big vault takes long


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one), or a one-line ConfigError."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def uvicorn_server(settings: Settings, sock: socket.socket, log_level: str = "info", app=None, page=None):
    """uvicorn for the server's app (with `page`: server.app.create_app) or `app` (`memvault ui`'s) on `sock`."""
    import uvicorn

    if app is None:
        from memvault.server.app import create_app

        app = create_app(settings, page)
    # host and port only label the log line ("running on ..."): uvicorn serves the socket given to run().
    config = uvicorn.Config(app, host=settings.server.host, port=sock.getsockname()[1],
                            log_level=log_level, timeout_graceful_shutdown=10, lifespan="on")
    return uvicorn.Server(config)


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{'[' + host + ']' if ':' in host else host}:{port}"


def serve(settings: Settings, log_level: str = "info", on_listening=None, page=None) -> None:
    """Serve until interrupted. Refuses a non-loopback address without an API key.
    `on_listening(url)` is told the address once the socket listens (port 0: the port chosen); `page`
    is a web page to mount (server.app.create_app)."""
    check_bind(settings.server.host, settings.server.api_key)
    sock = listen(settings.server.host, settings.server.port)
    if settings.llm.local_model:  # the proxy forwards to memvault's own model server: up before the first client
        from memvault.curate.llm import served_locally

        settings.llm = served_locally(settings.llm)
    if on_listening:
        on_listening(base_url(sock))
    server = uvicorn_server(settings, sock, log_level, page=page)
    state = server.config.app.state.server
    state.hurry = lambda: server.force_exit  # uvicorn sets it on a second Ctrl-C
    try:
        server.run(sockets=[sock])  # (uvicorn raises the Ctrl-C again once it has stopped)
    finally:
        if state.abandoned:
            # A second stop: what is unfinished is on disk (turn files, the curation queue, a transaction's
            # intent) and the next start finishes it; a curation thread still running must not hold the exit.
            sys.stderr.write("memvault: stopped; queued curations resume at the next start\n")
            sys.stderr.flush()
            os._exit(130)
    if not server.started:  # start-up failed (the vault, the index): uvicorn has logged why
        raise MemvaultError("the server did not start (see the log above)")


@contextmanager
def running(settings: Settings, log_level: str = "warning", app=None) -> Iterator[str]:
    """The server (or `app`) in a background thread on settings.server.host (port 0: a free port); yields
    its base URL ("http://127.0.0.1:PORT") once it answers, stops it (lifespan shutdown) on exit."""
    check_bind(settings.server.host, settings.server.api_key)
    sock = listen(settings.server.host, settings.server.port)
    server = uvicorn_server(settings, sock, log_level, app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="memvault-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise MemvaultError("the server did not start")
        time.sleep(0.05)
    try:
        yield base_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
