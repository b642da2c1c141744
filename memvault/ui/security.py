"""What keeps the page safe in a browser.

- Every answer carries a Content-Security-Policy: scripts and styles only from this server (no inline
  script can run, whatever a stored text holds), no plugins, no framing, forms post only here.
- A write (POST) must come from the page itself: its Origin (or Referer) names this server's own
  Host, a Sec-Fetch-Site header (when sent) says same-origin, and the form carries the CSRF token,
  an HMAC of a secret made when the app starts: a page elsewhere can neither read nor guess it.
- Browsers cannot send a bearer key on a link, so under /ui a key is also accepted as the password
  of HTTP Basic auth (the browser asks for it once): `BasicKey` turns it into X-API-Key before the
  server's key check (server/auth.py) sees the request, and asks for it on a 401.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from memvault.ui import PREFIX

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "form-action 'self'; base-uri 'none'; frame-ancestors 'none'; object-src 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class Csrf:
    """The token forms carry: one per app (per process), checked in constant time."""

    def __init__(self, secret: bytes | None = None) -> None:
        self.secret = secret or secrets.token_bytes(32)

    @property
    def token(self) -> str:
        return hmac.new(self.secret, b"memvault-ui-write", hashlib.sha256).hexdigest()

    def valid(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self.token.encode())


def foreign_write(headers, token_ok: bool) -> str | None:
    """Why a POST must be refused (None: it comes from this page, with its token)."""
    host = (headers.get("host") or "").strip().lower()
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"a write from another site ({site}) is refused"
    origin = headers.get("origin") or headers.get("referer")
    if not origin or origin == "null":
        return "a write without an Origin or Referer header is refused"
    if urlsplit(origin).netloc.lower() != host:
        return f"a write from the page at {origin[:80]!r} is refused: only this server's own pages may write"
    if not token_ok:
        return "the form's CSRF token is missing or wrong: reload the page and try again"
    return None


def basic_password(value: str | None) -> str | None:
    """The password of an `Authorization: Basic ...` header, None for any other header."""
    if not value or not value.lower().startswith("basic "):
        return None
    try:
        decoded = base64.b64decode(value[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded.partition(":")[2] or None


class BasicKey:
    """Pure ASGI, outside the key check: under /ui, a Basic password is the API key; a 401 there asks
    the browser for it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return
        headers = [(k, v) for k, v in scope.get("headers", [])]
        password = basic_password(next((v.decode("latin-1") for k, v in headers if k == b"authorization"), None))
        if password is not None:
            headers = [(k, v) for k, v in headers if k not in (b"authorization", b"x-api-key")]
            headers.append((b"x-api-key", password.encode("utf-8")))
            scope = {**scope, "headers": headers}

        async def asking(message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"www-authenticate", b'Basic realm="memvault", charset="UTF-8"')]}
            await send(message)

        await self.app(scope, receive, asking)
