"""The OpenAI-compatible proxy: chat completions with memory, and every other /v1/* path passed through.

A chat completion: retrieve and inject (MemoryChat.prepare, in a worker thread), forward to the
upstream through litellm's async client (the event loop never waits on the LLM), write both turns'
files, and answer; the turns' commit (shared with concurrent requests) and then their curation
follow in the background (turns.py). Streaming answers are relayed chunk by chunk as they arrive;
the turns are written when the stream ends, before its final `[DONE]`.

The model: the request's `model`, else `llm.model`, always on the configured provider and host (a
bare "llama3" from an OpenAI client is an OpenAI-compatible model at `llm.api_base`; see
memvault.server.upstream.client_model). The API key: see memvault.server.auth. Every other path:
memvault.server.passthrough.

The client never chooses where the operator's key goes: a field that would route the request, key it,
or run something inside litellm (`api_base`, `api_key`, `extra_headers`, callbacks...: memvault.server.
request_fields) is refused with a 400 that names it; every other field (OpenAI's parameters, llama.cpp's
`cache_prompt`, vLLM's `guided_json`...) is forwarded to the upstream as sent. A passed-through path
stays under `llm.api_base`'s path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from memvault.converse.degenerate import good_part
from memvault.curate.llm import upstream_api_key
from memvault.errors import MemvaultError, UsageError
from memvault.server.auth import EVERYTHING, allowed_scopes, confine, upstream_key
from memvault.server.errors import error_body, error_response, upstream_error
from memvault.server.state import ServerState, server_state
from memvault.server.upstream import client_model, curator
from memvault.settings import MEMORY_MODES

if TYPE_CHECKING:
    from memvault.converse import ChatTurn, MemoryChat

log = logging.getLogger("memvault.server")
router = APIRouter(tags=["chat"])
MEMORY_FIELDS = {"memory_id", "memory_top_k", "memory_recency_weight", "memory_score_threshold", "memory_mode",
                 "memory_task"}
class ChatCompletionRequest(BaseModel):
    """An OpenAI chat completion request (its other fields are forwarded, but those that route or key
    the request: `forwarded_options`) plus the memory fields, which are used here and never forwarded."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(None, description="Model for this request; default: the server's llm.model.")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False
    memory_id: str = Field("default", description="The conversation whose memories are used and extended: any "
                           "text, kept as sent (its folder is a safe name made from it).")
    memory_top_k: int | None = Field(None, ge=0, le=100, description="Memories to inject (default: retrieval.top_k; "
                                     "0: none, retrieval off; the turns are still kept).")
    memory_recency_weight: float | None = Field(None, ge=0, le=1)
    memory_score_threshold: float | None = Field(None, ge=0, le=1)
    memory_mode: str = Field("normal", description="normal, or incognito (alias guest): memory is neither read "
                             "nor written, and no turn, fact or session state is stored.")
    memory_task: bool = Field(False, description="The client's own housekeeping (a title, tags, follow-ups...): "
                              "forwarded as sent, without memory, and never stored. Open WebUI's are known.")


def upstream_request(state: ServerState, body: ChatCompletionRequest, request: Request) -> dict[str, Any]:
    """litellm.acompletion arguments (messages excepted): the client's options minus memory fields."""
    settings = state.settings
    options = forwarded_options(body)
    kwargs: dict[str, Any] = {**options, "model": client_model(body.model, settings.llm),
                              "timeout": settings.llm.timeout,
                              "max_retries": 0}  # the client decides whether to retry, not the proxy
    if not {"max_tokens", "max_completion_tokens"} & set(options):  # a small model can loop until its context ends
        kwargs["max_tokens"] = settings.llm.max_tokens
    if settings.llm.api_base:
        kwargs["api_base"] = settings.llm.api_base
    key = upstream_api_key(kwargs["model"], settings.llm.api_base,
                           upstream_key(request.headers, server_keyed(state), settings.llm.api_key))
    if key:
        kwargs["api_key"] = key
    return kwargs


def forwarded_options(body: ChatCompletionRequest) -> dict[str, Any]:
    """The client's fields for the upstream: all but the memory fields, `extra_body` merged in (as the
    openai client sends it); a field that routes or keys the request is refused, by name."""
    from memvault.server.request_fields import refused_fields

    options = dict(body.model_extra or {})
    if "extra_body" in options:  # litellm would merge it into the body: its fields are checked the same way
        nested = options.pop("extra_body")
        if not isinstance(nested, dict):
            raise UsageError("extra_body must be a JSON object of request fields")
        options = {**nested, **options}
    refused = refused_fields(options)
    if refused:
        shown = ", ".join(name[:40] for name in refused[:5])
        raise UsageError(f"refused request field: {shown} (it would choose where the request goes, which key or "
                         "credentials it carries, or what litellm runs; the server decides those; memory fields: "
                         + ", ".join(sorted(MEMORY_FIELDS)) + ")")
    return options


def server_keyed(state: ServerState) -> bool:
    """Whether the server has keys of its own (a client's bearer token is then never passed on)."""
    return bool(state.settings.server.api_key or state.settings.server.keys)


def new_session(state: ServerState, body: ChatCompletionRequest, request: Request,
                api_key: str | None = None) -> MemoryChat:
    from memvault.converse import MemoryChat
    from memvault.server.client_tasks import client_task

    allowed = allowed_scopes(request)
    conversation, scopes = memory_place(body.memory_id, allowed)
    retrieval = {"top_k": body.memory_top_k, "recency_weight": body.memory_recency_weight,
                 "score_threshold": body.memory_score_threshold}
    if body.memory_mode not in MEMORY_MODES:
        raise UsageError(f"unknown memory_mode {body.memory_mode[:40]!r} (expected one of {', '.join(MEMORY_MODES)})")
    task = client_task(body.messages, body.memory_task, state.settings.proxy.task_markers)
    if task:  # forwarded without memory: a client's title or tags are not the user's words
        log.info("memory_id %s: a client task (%s), forwarded without memory", body.memory_id[:80], task)
    # The configured LLM writes the `[compacted]` summary of a long history; the core files are the
    # vault owner's, so a key confined to a scope never gets them.
    return MemoryChat(state.core, conversation, scopes=scopes, retrieval=retrieval,
                      use_memory=not (MEMORY_MODES[body.memory_mode] or task),
                      llm=curator(state.settings.llm, api_key), core=allowed is EVERYTHING)


def memory_place(memory_id: str, allowed) -> tuple[str, dict[str, str]]:
    """(conversation id, scopes) of a chat's memory_id. Any printable memory_id works: the turns
    carry it as sent, and live in the safe folder `layout.folder_for` makes of it ("My Chat" ->
    My_Chat-<hash>_). A scoped key's conversations live inside its scope: '<scope folder>+chat-<memory_id>',
    every turn stamped with the scope, and the search filtered on it, so no memory_id (e.g. "user-bob")
    reaches another scope's conversation. A bad id is a 400 before anything is sent or stored."""
    from memvault.shapes import check_conversation_id, conversation_for_scopes

    memory_id = check_conversation_id(memory_id)
    if allowed is EVERYTHING:
        return memory_id, {}
    scopes = {name: value for name, value in confine(allowed, {}).items() if value}
    folder = conversation_for_scopes(scopes)
    return check_conversation_id(f"{folder}+chat-{memory_id}"), scopes


@dataclass
class ProxyTurn:
    """One chat completion on its way through the proxy, from retrieval to the stored turns."""

    state: ServerState
    session: MemoryChat  # the conversation's memory: retrieval done, turns to write
    turn: ChatTurn  # what was sent upstream and what it used
    messages: list[dict]  # the client's messages, as it sent them


def finish_turn(chat: ProxyTurn, answer: str) -> None:
    """Write the turns now (blocking: run it in a thread); their commit, then their curation, follow
    in the background (memvault.server.turns)."""
    from memvault.core.messages import last_user_text

    state, session, turn, messages = chat.state, chat.session, chat.turn, chat.messages
    entries = session.turn_entries(turn, last_user_text(messages), answer)
    if entries:
        state.sessions.add(session.conversation)  # its session ends when idle, or at shutdown
    llm = session.llm  # the curator `new_session` made with this request's upstream key
    then = queued = None
    if llm is not None and turn.user_turn is not None:
        queued = {"scopes": session.scopes, "messages": messages}  # on disk until curated: a stop resumes it

        def curate() -> None:
            before = len(session.errors)
            session.curate(turn, messages, llm, background=False)
            if len(session.errors) > before:  # it failed: the turn stays queued and is tried again
                raise MemvaultError(session.errors.pop())

        def then() -> None:
            state.curate_turn(turn.user_turn.id, curate)

    state.turns.store(session.conversation, entries, then, curation=queued)


def hit_dict(hit) -> dict[str, Any]:
    """A memory hit as the answer's `memory_hits` lists it: `content` as agent-cli's proxy names the
    text (its clients read that), `text` as memvault's API does."""
    return {"id": hit.id, "role": hit.role, "text": hit.text, "content": hit.text,
            "created_at": hit.created_at.isoformat(), "score": round(hit.score, 6)}


_litellm = None  # the module, once imported


async def imported_litellm():
    """litellm, imported in a worker thread the first time (seconds: the event loop must not wait),
    then at once (a thread hop per request costs more CPU than the rest of this function)."""
    global _litellm
    if _litellm is None:
        from memvault.curate.llm import import_litellm

        _litellm = await asyncio.to_thread(import_litellm)
    return _litellm


@router.post("/v1/chat/completions", summary="Chat completion with memory (OpenAI-compatible)")
@router.post("/v1/chat/completions/", include_in_schema=False)  # not the memory-less pass-through
async def chat_completions(body: ChatCompletionRequest, request: Request):
    from memvault.curate.llm import message_text

    state = server_state(request)
    litellm = await imported_litellm()
    kwargs = upstream_request(state, body, request)
    session = new_session(state, body, request, kwargs.get("api_key"))
    started = time.perf_counter()
    answer_tokens = kwargs.get("max_completion_tokens") or kwargs.get("max_tokens")
    turn = await asyncio.to_thread(session.prepare, body.messages, kwargs["model"], answer_tokens)
    chat = ProxyTurn(state, session, turn, body.messages)
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

        return StreamingResponse(relay(chat, first, chunks),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                          **dropped_header(refused_since(chat))})
    answered = time.perf_counter()
    data = response.model_dump()
    said = message_text(response)
    answer, cut = good_part(said, state.settings.limits.max_text_chars)
    if cut is not None:  # the client sees the loop's first round, memory keeps what came before it
        data["choices"][0]["message"]["content"] = said[:cut.shown]
        data["choices"][0]["finish_reason"] = "length"
        data["memory_cut"] = note_cut(chat, cut)
    problem = await store_turn(chat, answer)
    data["memory_hits"] = [hit_dict(hit) for hit in turn.hits]
    dropped = refused_since(chat)
    data["memory_dropped"] = dropped
    if problem:
        data["memory_error"] = problem
    # Where the time went (the proxy's own cost is retrieve + store), for clients and benchmarks.
    timing = {"retrieve": retrieved - started, "llm": answered - retrieved, "store": time.perf_counter() - answered}
    server_timing = ", ".join(f"{name};dur={seconds * 1000:.1f}" for name, seconds in timing.items())
    return JSONResponse(data, headers={"Server-Timing": server_timing, **dropped_header(dropped)})


DROPPED_HEADER = "X-Memvault-Dropped"
MAX_HEADER_CHARS = 4000  # what every HTTP client and proxy accepts in one header
HEADER_TEXT_CHARS = 120


def refused_since(chat: ProxyTurn) -> list[dict[str, Any]]:
    """The facts of this conversation memvault refused since its last answer, each with its reason
    (memvault.curate.refusals). A turn is curated after its answer has gone out, so its refusals
    come with the conversation's next answer; `memvault log -o refused` lists them all at once."""
    committer = chat.state.turns
    if committer is None or not chat.session.use_memory:
        return []
    return [refusal.to_dict() for refusal in committer.refusals.take(chat.session.conversation)]


def dropped_header(dropped: list[dict[str, Any]]) -> dict[str, str]:
    """`X-Memvault-Dropped`: the refusals as JSON (ASCII, texts shortened), for clients that read
    headers only (a streaming answer's body has no field for them); none when nothing was refused."""
    shown = [{"memory": item["memory"][:HEADER_TEXT_CHARS], "reason": item["reason"][:HEADER_TEXT_CHARS]}
             for item in dropped]
    while shown:
        value = json.dumps({"count": len(dropped), "dropped": shown}, ensure_ascii=True)
        if len(value) <= MAX_HEADER_CHARS:
            return {DROPPED_HEADER: value}
        shown.pop()
    return {DROPPED_HEADER: json.dumps({"count": len(dropped), "dropped": []})} if dropped else {}


def sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


async def relay(chat: ProxyTurn, first, chunks):
    """Server-sent events: each upstream chunk as it arrives; the turns stored at the end. An answer
    that degenerates (memvault.converse.degenerate) is stopped there: the upstream request is closed,
    the client gets a last chunk with finish_reason "length", and the turn keeps what came before the loop."""
    from memvault.converse.degenerate import LoopWatch
    from memvault.curate.llm import delta_text

    pieces: list[str] = []
    watch = LoopWatch(chat.state.settings.limits.max_text_chars)
    cut = None
    try:
        chunk = first
        while chunk is not None:
            pieces.append(delta_text(chunk))
            if (cut := watch.feed(pieces[-1])) is not None:
                await close_upstream(chunks)
                yield sse(json.dumps(final_chunk(chunk)))
                yield f": {note_cut(chat, cut)}\n\n".encode()
                break
            yield sse(chunk.model_dump_json(exclude_none=True))
            chunk = await anext(chunks, None)
    except Exception as exc:  # noqa: BLE001 - the stream broke upstream: tell the client in-band
        status, message, code = upstream_error(exc)
        yield sse(json.dumps(error_body(status, message, code)))
    except BaseException:  # the client went away (cancelled): still keep what was said
        keep_partial_turn(chat, good_part("".join(pieces))[0])
        raise
    answer = "".join(pieces)
    cut = cut or watch.finish()  # the answer's last line may close a loop too
    problem = await store_turn(chat, answer[:cut.keep].rstrip() if cut else answer)
    if problem:
        yield f": {problem}\n\n".encode()  # an SSE comment: the answer is out, only its storage failed
    yield b"data: [DONE]\n\n"


def final_chunk(chunk) -> dict[str, Any]:
    """The chunk that ends a stopped stream (finish_reason "length", as for an answer cut by max_tokens)."""
    data = chunk.model_dump(exclude_none=True)
    data["choices"] = [{"index": 0, "delta": {}, "finish_reason": "length"}]
    return data


async def close_upstream(chunks) -> None:
    """Close the upstream's stream (its HTTP response): a looping model stops generating for us."""
    try:
        await chunks.aclose()
    except Exception:  # noqa: BLE001 - closing is best effort; the answer is already stopped
        log.debug("closing the upstream stream failed", exc_info=True)


def note_cut(chat: ProxyTurn, cut) -> str:
    """Log a stopped answer; the one line the client is told."""
    note = f"memvault stopped the answer: {cut.reason}; only the {cut.keep} characters before it may be stored"
    log.warning("memory_id %s: %s", chat.session.conversation, note)
    return note


def keep_partial_turn(chat: ProxyTurn, answer: str) -> None:
    """finish_turn for a stream the client left: on the event loop (a cancelled task cannot await),
    which costs the few milliseconds of writing two small files."""
    from memvault.errors import MemvaultError

    try:
        finish_turn(chat, answer)
    except MemvaultError as exc:
        log.error("memory_id %s: the turn was not stored: %s", chat.session.conversation, exc)


async def store_turn(chat: ProxyTurn, answer: str) -> str | None:
    """finish_turn in a thread; a failure is logged and returned as one line (the client still gets
    the answer it waited for)."""
    from memvault.errors import MemvaultError

    try:
        await asyncio.to_thread(finish_turn, chat, answer)
    except MemvaultError as exc:
        log.error("memory_id %s: the turn was not stored: %s", chat.session.conversation, exc)
        return f"the turn was not stored in memory: {exc}"
    return None
