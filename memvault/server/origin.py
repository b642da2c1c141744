"""Requests a web page could forge: DNS rebinding and cross-site calls to a server on this machine.

A page on evil.example can make the browser send requests to 127.0.0.1 (through a name that rebinds
to it, or straight from its script): they carry `Host: evil.example:PORT` or `Origin:
https://evil.example`. So, for a server bound to loopback, the Host must name this machine
(127.0.0.1, localhost, [::1], or server.host; any port), else 421; and on any bind, a request with an
Origin that is neither loopback, nor the server's own (the /docs page), nor one of `server.cors_origins`
(the pages the operator lets call it; "*" for any) is refused with 403. The Host check stays whatever
the origins: CORS lets a page read answers, it never makes a rebound name this server.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from memvault.server.auth import is_loopback

LOOPBACK_NAMES = ("127.0.0.1", "::1", "localhost")


def host_name(value: str) -> str:
    """'127.0.0.1:8000' -> '127.0.0.1', '[::1]:8000' -> '::1', 'localhost' -> 'localhost'."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_refused(host: str | None, bind: str) -> bool:
    """Whether a loopback-bound server must refuse this Host header (no header: not a browser)."""
    if host is None or not is_loopback(bind):
        return False
    return host_name(host) not in {*LOOPBACK_NAMES, host_name(bind)}


def origin_refused(origin: str | None, host: str | None, allowed: list[str] | tuple[str, ...] = ()) -> bool:
    """Whether a request from this Origin must be refused: a page elsewhere than this machine, and
    not one of the `allowed` origins (server.cors_origins)."""
    if origin is None:
        return False
    if "*" in allowed or origin.strip().rstrip("/") in allowed:
        return False
    parts = urlsplit(origin.strip())
    if not parts.hostname:  # "null": a sandboxed or file:// page
        return True
    return not (is_loopback(parts.hostname) or parts.netloc.lower() == (host or "").strip().lower())


class BrowserGuard:
    """Pure ASGI: the Host and Origin checks above, before anything else runs."""

    def __init__(self, app, bind: str, cors_origins: list[str] | None = None) -> None:
        self.app = app
        self.bind = bind
        self.cors_origins = tuple(cors_origins or ())

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            from starlette.datastructures import Headers

            from memvault.server.errors import error_response

            headers = Headers(scope=scope)
            host = headers.get("host")
            if host_refused(host, self.bind):
                response = error_response(421, f"unknown Host {host[:80]!r}: this server answers to "
                                          "127.0.0.1, localhost and [::1] only", code="misdirected_request")
                await response(scope, receive, send)
                return
            if origin_refused(headers.get("origin"), host, self.cors_origins):
                response = error_response(403, f"requests from the web page at {headers['origin'][:80]!r} are "
                                          "refused (not in server.cors_origins)", code="forbidden_origin")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
