"""Who may talk to the server, and which key goes on to the LLM.

- The server binds 127.0.0.1 by default. Binding any other address needs an API key
  (`server.api_key` / MEMVAULT_API_KEY): `check_bind` refuses to start otherwise.
- With a key set, every request must carry it, as `Authorization: Bearer <key>` or `X-API-Key: <key>`.
- The LLM key: without a server key, the client's bearer token is passed through to the LLM (clients
  such as the OpenAI SDK send their key that way). With a server key, that token is the server's own
  key and is never forwarded: the LLM key then comes from `X-Upstream-Authorization` if the client
  sends one, else from `llm.api_key` or the provider's own environment variable (OPENAI_API_KEY...).
  `X-Upstream-Authorization` takes precedence in both cases.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from memvault.errors import ConfigError

UPSTREAM_HEADER = "x-upstream-authorization"
LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def check_bind(host: str, api_key: str) -> None:
    """Refuse to listen beyond this machine without a key."""
    if not is_loopback(host) and not api_key:
        raise ConfigError(f"refusing to bind {host} without an API key: set server.api_key or MEMVAULT_API_KEY "
                          "(or bind 127.0.0.1)")


def bearer(value: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` value (a bare token is taken as is)."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip() if scheme.lower() == "bearer" else value.strip()
    return token or None


def presented_key(headers: Any) -> str | None:
    return headers.get("x-api-key") or bearer(headers.get("authorization"))


def key_matches(presented: str | None, expected: str) -> bool:
    # compare_digest: the time taken says nothing about how much of the key was right.
    return presented is not None and hmac.compare_digest(presented.encode(), expected.encode())


def upstream_key(headers: Any, server_key: str, configured_key: str) -> str | None:
    """The API key to send to the LLM for this request, or None to let litellm use its environment."""
    explicit = bearer(headers.get(UPSTREAM_HEADER))
    if explicit:
        return explicit
    if not server_key:
        passed = bearer(headers.get("authorization"))
        if passed:
            return passed
    return configured_key or None


class ApiKeyMiddleware:
    """Pure ASGI: every HTTP request needs the key (checked before routing, so passthrough routes too)."""

    def __init__(self, app, api_key: str) -> None:
        self.app = app
        self.api_key = api_key

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not self.api_key:
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers

        if key_matches(presented_key(Headers(scope=scope)), self.api_key):
            await self.app(scope, receive, send)
            return
        from memvault.server.errors import error_response

        response = error_response(401, "missing or wrong API key: send Authorization: Bearer <key> or X-API-Key",
                                  code="invalid_api_key")
        await response(scope, receive, send)
