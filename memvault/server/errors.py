"""Every error the server returns has one shape, OpenAI's: {"error": {"message", "type", "code"}},
with a one-line message, so OpenAI clients and plain HTTP clients read it the same way."""

from __future__ import annotations

from typing import Any

from memvault.errors import LLMError, MemvaultError, NotFoundError, UsageError

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 409: "conflict_error", 413: "invalid_request_error", 422: "invalid_request_error",
         429: "rate_limit_error"}


def clipped_line(text: str, limit: int = 300) -> str:
    """`text` with every run of whitespace (newlines too) made one space, cut to `limit` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def error_body(status: int, message: str, code: str | None = None, kind: str | None = None) -> dict[str, Any]:
    return {"error": {"message": clipped_line(message), "type": kind or TYPES.get(status, "api_error"),
                      "code": code if code is not None else str(status)}}


def error_response(status: int, message: str, code: str | None = None, kind: str | None = None):
    from starlette.responses import JSONResponse

    return JSONResponse(error_body(status, message, code, kind), status_code=status)


def status_of_memvault_error(exc: MemvaultError) -> int:
    """400 for bad requests (scopes, names, empty text), 404 unknown ids, 502 when the LLM failed."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, UsageError) or type(exc).__name__ in ("ScopeError", "AmbiguousIdError"):
        return 400
    if isinstance(exc, LLMError):
        return 502
    return 500


def upstream_error(exc: Exception) -> tuple[int, str, str | None]:
    """(status, message, code) for an exception raised by litellm: the upstream's own status when it
    answered, 502 when it could not be reached, 504 when it timed out."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    if name in ("Timeout", "APITimeoutError"):
        status = 504
    elif never_answered(exc) or not isinstance(status, int) or not 400 <= status <= 599:
        status = 502
    message = getattr(exc, "message", None) or str(exc) or name
    from memvault.curate.llm import LITELLM_PREFIX  # one pattern for the proxy's errors and curation's

    message = LITELLM_PREFIX.sub(r"\1: ", clipped_line(message), count=1)
    code = getattr(exc, "code", None)
    return status, f"upstream LLM error: {message}", str(code) if code else None


def never_answered(exc: BaseException) -> bool:
    """Whether the upstream could not be reached. litellm reports a refused connection as an
    InternalServerError with status 500, as if the upstream had answered 500: its cause tells."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:  # a chain can loop back on itself
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return any(type(link).__name__ == "APIConnectionError" for link in chain)


def validation_message(errors: list[dict]) -> str:
    """FastAPI's list of validation errors as one line: `body.messages: Field required; ...`."""
    parts = []
    for item in errors[:5]:
        where = ".".join(str(p) for p in item.get("loc", ()) if p != "body") or "request"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "invalid request: " + "; ".join(parts) + more


def install_handlers(app) -> None:
    """Turn memvault errors, validation errors and HTTP errors into the one error shape."""
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException

    @app.exception_handler(MemvaultError)
    async def memvault_error(_request, exc: MemvaultError):
        return error_response(status_of_memvault_error(exc), str(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request, exc: RequestValidationError):
        return error_response(422, validation_message(exc.errors()), code="invalid_request")

    @app.exception_handler(HTTPException)
    async def http_error(_request, exc: HTTPException):
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(RecursionError)
    async def too_deep(_request, _exc: RecursionError):
        # json.loads recurses once per level: a query-string filter nested 3,000 deep ends here.
        return error_response(400, "invalid request: JSON nested too deeply")
