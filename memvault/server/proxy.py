"""The OpenAI-compatible proxy: chat completions with memory, and every other /v1/* path passed through.

A chat completion: retrieve and inject (MemoryChat.prepare, in a worker thread), forward to the
upstream through litellm's async client (the event loop never waits on the LLM), write both turns'
files, and answer; the turns' commit (shared with concurrent requests) and then their curation
follow in the background (turns.py). Streaming answers are relayed chunk by chunk as they arrive;
the turns are written when the stream ends, before its final `[DONE]`.

The model: the request's `model`, else `llm.model`. A bare name (e.g. "llama3" from an OpenAI
client) is sent to `llm.api_base` as an OpenAI-compatible model. The API key: see memvault.server.auth.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import UsageError
from memvault.server.app import ServerState, server_state
from memvault.server.auth import upstream_key
from memvault.server.errors import error_body, error_response, upstream_error

if TYPE_CHECKING:
    from memvault.converse import ChatTurn, MemoryChat

log = logging.getLogger("memvault.server")
router = APIRouter(tags=["chat"])
passthrough_router = APIRouter()
MEMORY_FIELDS = {"memory_id", "memory_top_k", "memory_recency_weight", "memory_score_threshold"}
# Headers that describe one hop of a connection, or that we set ourselves: never copied across.
HOP_HEADERS = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
               "transfer-encoding", "upgrade", "host", "content-length"}
CLIENT_ONLY_HEADERS = {"authorization", "x-api-key", "x-upstream-authorization", "cookie"}


class ChatCompletionRequest(BaseModel):
    """An OpenAI chat completion request (every OpenAI field is accepted and forwarded) plus the
    memory fields, which are used here and never forwarded."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(None, description="Model for this request; default: the server's llm.model.")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    memory_id: str = Field("default", description="The conversation whose memories are used and extended.")
    memory_top_k: int | None = Field(None, ge=1, le=100, description="Memories to inject (default: retrieval.top_k).")
    memory_recency_weight: float | None = Field(None, ge=0, le=1)
    memory_score_threshold: float | None = Field(None, ge=0, le=1)


def litellm_model(model: str, api_base: str) -> str:
    """The model string for litellm: a name litellm cannot place is an OpenAI-compatible model at
    `api_base` (what OpenAI clients of a local server send, e.g. "smollm2")."""
    from memvault.curate.llm import import_litellm

    if not api_base or model.startswith("openai/"):
        return model
    try:
        import_litellm().get_llm_provider(model)
        return model
    except Exception:  # noqa: BLE001 - litellm's "LLM Provider NOT provided"
        return f"openai/{model}"


def upstream_request(state: ServerState, body: ChatCompletionRequest, request: Request) -> dict[str, Any]:
    """litellm.acompletion arguments (messages excepted): the client's options minus memory fields."""
    settings = state.settings
    model = body.model or settings.llm.model
    if not model:
        raise UsageError("no model: give `model` in the request or set llm.model / MEMVAULT_LLM_MODEL")
    options = body.model_dump(exclude=MEMORY_FIELDS | {"messages", "model", "stream"}, exclude_unset=True)
    kwargs: dict[str, Any] = {**options, "model": litellm_model(model, settings.llm.api_base),
                              "timeout": options.get("timeout", settings.llm.timeout),
                              "max_retries": 0}  # the client decides whether to retry, not the proxy
    if settings.llm.api_base:
        kwargs["api_base"] = settings.llm.api_base
    key = upstream_key(request.headers, settings.server.api_key, settings.llm.api_key)
    if not key and settings.llm.api_base and kwargs["model"].startswith("openai/") \
            and not os.environ.get("OPENAI_API_KEY"):
        key = "none"  # local OpenAI-compatible servers want no key, but the OpenAI SDK insists on one
    if key:
        kwargs["api_key"] = key
    return kwargs


def curator(state: ServerState, api_key: str | None):
    """The LLM that curates the turns: the configured llm.model (no configured model: turns are
    stored, not curated; storing the message again as a fact would only duplicate the turn)."""
    import dataclasses

    from memvault.curate.llm import LLMClient

    llm = state.settings.llm
    if not llm.model:
        return None
    return LLMClient(dataclasses.replace(llm, model=litellm_model(llm.model, llm.api_base),
                                         api_key=llm.api_key or api_key or ""))


def new_session(state: ServerState, body: ChatCompletionRequest) -> MemoryChat:
    from memvault.converse import MemoryChat
    from memvault.vault.layout import check_conversation

    check_conversation(body.memory_id)  # a bad name is a 400 before anything is sent or stored
    retrieval = {"top_k": body.memory_top_k, "recency_weight": body.memory_recency_weight,
                 "score_threshold": body.memory_score_threshold}
    return MemoryChat(state.core, body.memory_id, retrieval=retrieval)


def finish_turn(state: ServerState, session: MemoryChat, turn: ChatTurn, messages: list[dict], answer: str,
                api_key: str | None) -> None:
    """Write the turns now (blocking: run it in a thread); their commit, then their curation, follow
    in the background (memvault.server.turns)."""
    from memvault.converse import last_user_text

    entries = session.turn_entries(turn, last_user_text(messages), answer)
    llm = curator(state, api_key)
    then = queued = None
    if llm is not None and turn.user_turn is not None:
        queued = {"scopes": session.scopes, "messages": messages}  # on disk until curated: a stop resumes it

        def curate() -> None:
            session.curate(turn, messages, llm, background=False)
            state.turns.curated(turn.user_turn.id)
            for problem in session.errors:
                log.warning("memory_id %s: %s", session.conversation, problem)

        def then() -> None:
            state.submit_curation(curate)

    state.turns.store(session.conversation, entries, then, curation=queued)


def hit_dict(hit) -> dict[str, Any]:
    return {"id": hit.id, "role": hit.role, "text": hit.text, "created_at": hit.created_at.isoformat(),
            "score": round(hit.score, 6)}


@router.post("/v1/chat/completions", summary="Chat completion with memory (OpenAI-compatible)")
async def chat_completions(body: ChatCompletionRequest, request: Request):
    from memvault.curate.llm import import_litellm, message_text

    state = server_state(request)
    litellm = await asyncio.to_thread(import_litellm)  # imported once (slow); a no-op afterwards
    kwargs = upstream_request(state, body, request)
    session = new_session(state, body)
    started = time.perf_counter()
    turn = await asyncio.to_thread(session.prepare, body.messages)
    retrieved = time.perf_counter()
    try:
        response = await litellm.acompletion(messages=turn.messages, stream=body.stream, **kwargs)
        if body.stream:
            chunks = response.__aiter__()
            first = await anext(chunks, None)  # an upstream that fails at once still gets a proper status
    except Exception as exc:  # noqa: BLE001 - the upstream's failure, relayed as the upstream's error
        status, message, code = upstream_error(exc)
        return error_response(status, message, code)
    if body.stream:
        from starlette.responses import StreamingResponse

        return StreamingResponse(relay(state, session, turn, body.messages, first, chunks, kwargs.get("api_key")),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    answered = time.perf_counter()
    data = response.model_dump()
    problem = await store_turn(state, session, turn, body.messages, message_text(response), kwargs.get("api_key"))
    data["memory_hits"] = [hit_dict(hit) for hit in turn.hits]
    if problem:
        data["memory_error"] = problem
    # Where the time went (the proxy's own cost is retrieve + store), for clients and benchmarks.
    timing = {"retrieve": retrieved - started, "llm": answered - retrieved, "store": time.perf_counter() - answered}
    server_timing = ", ".join(f"{name};dur={seconds * 1000:.1f}" for name, seconds in timing.items())
    return JSONResponse(data, headers={"Server-Timing": server_timing})


def sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


async def relay(state: ServerState, session: MemoryChat, turn: ChatTurn, messages: list[dict], first, chunks,
                api_key: str | None):
    """Server-sent events: each upstream chunk as it arrives; the turns stored at the end."""
    from memvault.curate.llm import delta_text

    pieces: list[str] = []
    try:
        chunk = first
        while chunk is not None:
            pieces.append(delta_text(chunk))
            yield sse(chunk.model_dump_json(exclude_none=True))
            chunk = await anext(chunks, None)
    except Exception as exc:  # noqa: BLE001 - the stream broke upstream: tell the client in-band
        status, message, code = upstream_error(exc)
        yield sse(json.dumps(error_body(status, message, code)))
    except BaseException:  # the client went away (cancelled): still keep what was said
        keep_partial_turn(state, session, turn, messages, "".join(pieces), api_key)
        raise
    problem = await store_turn(state, session, turn, messages, "".join(pieces), api_key)
    if problem:
        yield f": {problem}\n\n".encode()  # an SSE comment: the answer is out, only its storage failed
    yield b"data: [DONE]\n\n"


def keep_partial_turn(state: ServerState, session: MemoryChat, turn: ChatTurn, messages: list[dict], answer: str,
                      api_key: str | None) -> None:
    """finish_turn for a stream the client left: on the event loop (a cancelled task cannot await),
    which costs the few milliseconds of writing two small files."""
    from memvault.errors import MemvaultError

    try:
        finish_turn(state, session, turn, messages, answer, api_key)
    except MemvaultError as exc:
        log.error("memory_id %s: the turn was not stored: %s", session.conversation, exc)


async def store_turn(state: ServerState, session: MemoryChat, turn: ChatTurn, messages: list[dict], answer: str,
                     api_key: str | None) -> str | None:
    """finish_turn in a thread; a failure is logged and returned as one line (the client still gets
    the answer it waited for)."""
    from memvault.errors import MemvaultError

    try:
        await asyncio.to_thread(finish_turn, state, session, turn, messages, answer, api_key)
    except MemvaultError as exc:
        log.error("memory_id %s: the turn was not stored: %s", session.conversation, exc)
        return f"the turn was not stored in memory: {exc}"
    return None


@passthrough_router.api_route("/v1/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                              include_in_schema=False)
async def passthrough(path: str, request: Request):
    """Any other /v1/* request, relayed to llm.api_base (the path after /v1/ appended to it)."""
    import httpx
    from starlette.background import BackgroundTask
    from starlette.responses import StreamingResponse

    state = server_state(request)
    settings = state.settings
    base = settings.llm.api_base
    if not base:
        return error_response(502, f"no upstream address for /v1/{path}: set llm.api_base (MEMVAULT_LLM_API_BASE)",
                              code="no_upstream")
    headers = {k: v for k, v in request.headers.items() if k not in HOP_HEADERS | CLIENT_ONLY_HEADERS}
    key = upstream_key(request.headers, settings.server.api_key, settings.llm.api_key)
    if key:
        headers["authorization"] = f"Bearer {key}"
    outgoing = state.http.build_request(request.method, base.rstrip("/") + "/" + path,
                                        params=request.query_params, headers=headers, content=await request.body())
    try:
        reply = await state.http.send(outgoing, stream=True)
    except httpx.HTTPError as exc:
        return error_response(502, f"upstream {base} unreachable: {type(exc).__name__}: {exc}", code="bad_gateway")
    return StreamingResponse(reply.aiter_raw(), status_code=reply.status_code,
                             headers={k: v for k, v in reply.headers.items() if k not in HOP_HEADERS},
                             background=BackgroundTask(reply.aclose))
