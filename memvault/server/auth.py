"""Who may talk to the server, and which key goes on to the LLM.

- The server binds 127.0.0.1 by default. Binding any other address needs an API key
  (`server.api_key` / MEMVAULT_API_KEY): `check_bind` refuses to start otherwise.
- With a key set, every request must carry it, as `Authorization: Bearer <key>` or `X-API-Key: <key>`.
- The LLM key: without a server key, the client's bearer token is passed through to the LLM (clients
  such as the OpenAI SDK send their key that way). With a server key, that token is the server's own
  key and is never forwarded: the LLM key then comes from `X-Upstream-Authorization` if the client
  sends one, else from `llm.api_key` or the provider's own environment variable (OPENAI_API_KEY...).
  `X-Upstream-Authorization` takes precedence in both cases.
- Scoped keys (`server.keys`: key -> allowed user/agent/run ids): a request with one reaches only
  those scopes, on every memory route and in the proxy's `memory_id` (`confine`); the server key
  (`server.api_key`) reaches everything. Scoped keys are memvault's own: never forwarded either.
"""

from __future__ import annotations

import hashlib
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
    """The token of an `Authorization: Bearer <token>` value (or `Token <token>`, as mem0's
    MemoryClient sends it; a bare token is taken as is)."""
    if not value:
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip() if scheme.lower() in ("bearer", "token") else value.strip()
    return token or None


def presented_key(headers: Any) -> str | None:
    return headers.get("x-api-key") or bearer(headers.get("authorization"))


def key_matches(presented: str | None, expected: str) -> bool:
    # compare_digest of fixed-length digests: the time taken says nothing about how much of the key
    # was right, nor how long it is.
    if presented is None or not expected:
        return False
    return hmac.compare_digest(hashlib.sha256(presented.encode()).digest(), hashlib.sha256(expected.encode()).digest())


Allowed = dict[str, tuple[str, ...]]  # scope name -> the ids a scoped key may use
EVERYTHING = None  # what the server key (or no key at all) may reach
STATE_NAME = "memvault_allowed"


def identify(presented: str | None, api_key: str, keys: dict[str, Allowed]) -> tuple[bool, Allowed | None]:
    """(accepted, what the key may reach: EVERYTHING or its scopes). Every key is compared, so the
    time taken does not say which one matched."""
    allowed: Allowed | None = EVERYTHING
    accepted = key_matches(presented, api_key)
    for key, scopes in keys.items():
        if key_matches(presented, key) and not accepted:
            accepted, allowed = True, scopes
    return accepted, allowed


def allowed_scopes(request: Any) -> Allowed | None:
    """What the request's key may reach (set by ApiKeyMiddleware): EVERYTHING or a scoped key's ids."""
    return request.scope.get("state", {}).get(STATE_NAME, EVERYTHING)


def confine(allowed: Allowed | None, named: dict[str, Any]) -> dict[str, Any]:
    """The scopes a request works in. With a scoped key, each scope the key restricts must be named
    with an id it allows (403 otherwise), or is implied when the key allows exactly one id."""
    from starlette.exceptions import HTTPException

    if allowed is EVERYTHING:
        return named
    scopes = dict(named)
    for name, ids in allowed.items():
        value = named.get(name)
        if value is None or value == "":
            if len(ids) != 1:
                raise HTTPException(400, f"this API key reaches several {name} values: name one ({', '.join(ids)})")
            scopes[name] = ids[0]
        elif value not in ids:
            raise HTTPException(403, f"this API key may not use {name} {str(value)[:40]!r}")
    return scopes


def upstream_key(headers: Any, keyed: Any, configured_key: str) -> str | None:
    """The API key to send to the LLM for this request, or None to let litellm use its environment.
    `keyed`: whether the server has keys of its own (its bearer token is then never passed on)."""
    explicit = bearer(headers.get(UPSTREAM_HEADER))
    if explicit:
        return explicit
    if not keyed:
        passed = bearer(headers.get("authorization"))
        if passed:
            return passed
    return configured_key or None


class ApiKeyMiddleware:
    """Pure ASGI: every HTTP request needs a key (checked before routing, so passthrough routes too);
    what a scoped key may reach is left in the request's state for the routes (`allowed_scopes`)."""

    def __init__(self, app, api_key: str, keys: dict[str, Allowed] | None = None) -> None:
        self.app = app
        self.api_key = api_key
        self.keys = keys or {}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not (self.api_key or self.keys):
            await self.app(scope, receive, send)
            return
        from starlette.datastructures import Headers

        accepted, allowed = identify(presented_key(Headers(scope=scope)), self.api_key, self.keys)
        if accepted:
            scope = {**scope, "state": {**scope.get("state", {}), STATE_NAME: allowed}}
            await self.app(scope, receive, send)
            return
        from memvault.server.errors import error_response

        response = error_response(401, "missing or wrong API key: send Authorization: Bearer <key> or X-API-Key",
                                  code="invalid_api_key")
        await response(scope, receive, send)
