"""A cap on HTTP request bodies (limits.max_request_bytes): 413 before reading past it.

A 20 MB chat message or memory took gigabytes on its way through JSON parsing, validation and the
embedder; the cap stops it at the door. A declared Content-Length over the cap is refused without
reading a byte; a body that streams past it (chunked, or a lying header) is refused at the chunk
that crosses it.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from memvault.server.errors import error_response

MAX_PATH_BYTES = 8192  # a request line's target; OpenAI's and memvault's paths are a few dozen bytes


class RequestTooLarge(HTTPException):
    """Raised from `receive` when a body crosses the cap. An HTTPException, so FastAPI's body
    parsing lets it through as it is (it turns other errors into "error parsing the body")."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than limits.max_request_bytes ({limit:,} bytes)")


class BodyLimit:
    """ASGI middleware: HTTP requests whose body exceeds `max_bytes` get a 413 JSON error."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        malformed = malformed_request(scope)
        if malformed:
            await close_with(error_response(*malformed), scope, receive, send)
            return
        if declared_length(scope) > self.max_bytes:
            await self.refuse(scope, receive, send)
            return
        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise RequestTooLarge(self.max_bytes)
            return message

        async def watched_send(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except ClientDisconnect:
            return  # gone mid-body (or its body could not be parsed: a chunk size of 20 hex digits): no one to answer
        except RequestTooLarge:
            if started:  # a streaming route already answered: nothing more can be said
                raise
            await self.refuse(scope, receive, send)

    async def refuse(self, scope, receive, send) -> None:
        exc = RequestTooLarge(self.max_bytes)
        await close_with(error_response(exc.status_code, exc.detail), scope, receive, send)


async def close_with(response, scope, receive, send) -> None:
    # The client may still be sending: ask the server to drop the connection after the answer.
    response.headers["Connection"] = "close"
    await response(scope, receive, send)


def malformed_request(scope) -> tuple[int, str] | None:
    """(status, message) for a request no route should see: a path longer than MAX_PATH_BYTES (414), or
    both Content-Length and Transfer-Encoding (400: RFC 9112 §6.1, the shape of request smuggling)."""
    path = scope.get("raw_path") or scope.get("path", "").encode()
    if len(path) + len(scope.get("query_string", b"")) > MAX_PATH_BYTES:
        return 414, f"the request's path and query are longer than {MAX_PATH_BYTES:,} bytes"
    names = {name for name, _ in scope.get("headers", ())}
    if b"content-length" in names and b"transfer-encoding" in names:
        return 400, "the request has both Content-Length and Transfer-Encoding: refused (RFC 9112 section 6.1)"
    return None


def declared_length(scope) -> int:
    """The request's Content-Length, or -1 when it has none (or an unreadable one)."""
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return -1
    return -1
