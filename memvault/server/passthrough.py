"""Every request that is not memvault's own, relayed to the upstream LLM server (`llm.api_base`).

A /v1/* path has the part after /v1/ appended to `llm.api_base`, any other path is appended whole (as
agent-cli's proxy forwards `/{path}`). The path is confined under the upstream's (`confined_url`), the
client's own credentials are never relayed, memvault's and mem0's namespaces are answered here and
never relayed (memvault.server.upstream.passthrough_refusal), and a scoped key reaches only
`GET /v1/models` this way.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from memvault.errors import UsageError
from memvault.server.auth import EVERYTHING, allowed_scopes, upstream_key
from memvault.server.errors import error_response
from memvault.server.proxy import server_keyed
from memvault.server.state import server_state
from memvault.server.upstream import passthrough_refusal, relayed_headers

passthrough_router = APIRouter()
CLIENT_ONLY_HEADERS = frozenset({"authorization", "x-api-key", "x-upstream-authorization", "cookie"})


@passthrough_router.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                              include_in_schema=False)
@passthrough_router.api_route("/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                              include_in_schema=False)
async def passthrough(path: str, request: Request):
    """Any other request, relayed to llm.api_base: a /v1/* path with the part after /v1/ appended to
    it, any other path whole (as agent-cli's proxy forwards `/{path}`)."""
    import httpx
    from starlette.background import BackgroundTask
    from starlette.responses import StreamingResponse

    state = server_state(request)
    settings = state.settings
    rest = confined_url("", request.scope.get("raw_path") or request.url.path.encode())  # "/models", resolved
    refused = passthrough_refusal(rest, settings.server.passthrough_paths)  # memvault's and mem0's paths: never
    if refused:
        return error_response(*refused, code={403: "forbidden", 404: "not_found", 501: "not_implemented"}[refused[0]])
    if allowed_scopes(request) is not EVERYTHING and not (request.method == "GET" and request.url.path == "/v1/models"):
        return error_response(403, "a scoped API key reaches the LLM only through /v1/chat/completions "
                              "and GET /v1/models", code="forbidden")
    base = settings.llm.api_base
    if not base:
        return error_response(502, f"no upstream address for {request.url.path[:80]}: set llm.api_base "
                              "(MEMVAULT_LLM_API_BASE)", code="no_upstream")
    target = base.rstrip("/") + rest
    headers = relayed_headers(request.headers, CLIENT_ONLY_HEADERS)
    key = upstream_key(request.headers, server_keyed(state), settings.llm.api_key)
    if key:
        headers["authorization"] = f"Bearer {key}"
    outgoing = state.http.build_request(request.method, target,
                                        params=request.query_params, headers=headers, content=await request.body())
    try:
        reply = await state.http.send(outgoing, stream=True)
    except httpx.HTTPError as exc:
        return error_response(502, f"upstream {base} unreachable: {type(exc).__name__}: {exc}", code="bad_gateway",
                              kind="upstream_error")
    return StreamingResponse(reply.aiter_raw(), status_code=reply.status_code,
                             headers=relayed_headers(reply.headers),
                             background=BackgroundTask(reply.aclose))


def confined_url(base: str, raw_path: bytes) -> str:
    """The upstream URL for a request: its path (after /v1/ for a /v1/... path), percent-decoded and
    its dot segments resolved, appended to `base`. A path that would leave base's path (`..%2F..%2Fother`),
    or that hides one more level of encoding or a backslash, is a 400: never a request that carries
    the key elsewhere on the upstream host."""
    from urllib.parse import quote, unquote_to_bytes

    try:
        decoded = unquote_to_bytes(raw_path.split(b"?", 1)[0]).decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the request path is not valid UTF-8") from None
    rest = decoded[3:] if decoded == "/v1" or decoded.startswith("/v1/") else decoded
    parts: list[str] = []
    for segment in rest.split("/"):
        if any(c in segment for c in "%\\\x00"):
            raise UsageError("the request path is encoded twice or has a backslash: refused")
        if segment.split(";", 1)[0] in ("..", ".") and segment not in ("..", "."):
            raise UsageError("the request path has a dot segment with parameters (`..;`): refused")
        if segment == "..":
            if not parts:
                raise UsageError("the request path leaves the upstream's API (llm.api_base): refused")
            parts.pop()
        elif segment not in ("", "."):
            parts.append(segment)
    tail = "/" if rest.endswith("/") and parts else ""
    return base.rstrip("/") + "/" + quote("/".join(parts), safe="/:@!$&'()*+,;=-._~") + tail
