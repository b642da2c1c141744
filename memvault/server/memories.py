"""The mem0-style REST API: /v1/memories/... and /v1/reset/, each a thin call to the server's `Memory`.

Answers are the shapes `memvault.api.Memory` returns (mem0's). Errors: 400 for a missing scope or a
malformed argument, 404 for an unknown id or one outside the scopes the request names, 403 for a
scope the request's key may not reach or a reset the server does not allow, 422 for a request that
does not validate, 502 when the LLM failed.

Scopes are boundaries: every route works in the scopes the request names (query or body), confined
to what its key may reach (memvault.server.auth.confine). Memory calls block (embedding, git), so
each runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import AliasChoices, BaseModel, Field, model_validator

from memvault.errors import NotFoundError, UsageError
from memvault.server.auth import EVERYTHING, allowed_scopes, confine
from memvault.server.state import server_state
from memvault.shapes import filter_from_json

router = APIRouter(prefix="/v1", tags=["memories"])
PREFIXES = ("/v1/memories", "/v1/reset", "/v1/ping", "/v3/memories")  # /v3, /v1/ping: mem0_routes


class Message(BaseModel):
    role: str = "user"
    content: str | list[dict[str, Any]] = Field(description="The text, or OpenAI content parts (the text parts are "
                                                            "read: an image is not a memory).")
    name: str | None = Field(None, description="Who said it: kept as the memory's actor_id (infer=false).")


class Scopes(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class NullIsOmitted(BaseModel):
    """A body where an explicit null means "not given", as mem0's OSS server reads its bodies (it
    drops None values before calling Memory): `"infer": null` is infer's default, not a 422."""

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items()
                    if value is not None or cls._null_allowed(key)}
        return data

    @classmethod
    def _null_allowed(cls, key: str) -> bool:
        known = cls.model_fields.get(key)
        return known is None or known.default is None  # where null is the default, passing it changes nothing


class AddRequest(NullIsOmitted, Scopes):
    messages: list[Message] | str = Field(description="A string, or chat messages {role, content}.")
    metadata: dict[str, Any] | None = None
    infer: bool = Field(True, description="Extract and reconcile facts with the LLM; false: store as given.")
    prompt: str | None = Field(None, description="Custom fact-extraction prompt for this call.")
    expiration_date: str | None = Field(None, description="YYYY-MM-DD: hidden from search and lists after it.")
    memory_type: str | None = Field(None, description="Only mem0's 'procedural_memory'.")

    def options(self) -> dict[str, Any]:
        """Memory.add's arguments beside the messages and the scopes."""
        return {"metadata": self.metadata, "infer": self.infer, "prompt": self.prompt,
                "expiration_date": self.expiration_date, "memory_type": self.memory_type}

    def chat(self) -> str | list[dict]:
        return self.messages if isinstance(self.messages, str) else [
            m.model_dump(exclude_none=True) for m in self.messages]


class SearchRequest(Scopes):
    query: str = Field(min_length=1)
    limit: int = Field(20, ge=1, le=1000, validation_alias=AliasChoices("limit", "top_k"))
    threshold: float | None = Field(None, ge=0, le=1)
    filters: dict[str, Any] | None = Field(None, description="mem0 filter expression (eq, in, contains, AND...).")


class SearchQuery(Scopes):
    query: str = Field(min_length=1, validation_alias=AliasChoices("query", "q"), description="Also as `q`.")
    limit: int = Field(20, ge=1, le=1000, validation_alias=AliasChoices("limit", "top_k"))
    threshold: float | None = Field(None, ge=0, le=1)
    filters: str | None = Field(None, description="mem0 filter expression as JSON.")


class ListQuery(Scopes):
    limit: int = Field(20, ge=1, le=10000, validation_alias=AliasChoices("limit", "top_k"))
    filters: str | None = Field(None, description="mem0 filter expression as JSON.")
    show_expired: bool = Field(False, description="Include memories past their expiration_date.")


class UpdateRequest(Scopes):
    text: str | None = Field(None, min_length=1, validation_alias=AliasChoices("text", "data", "memory"),
                             description="The new text (also accepted as `data` or `memory`).")
    metadata: dict[str, Any] | None = None
    expiration_date: str | None = Field(None, description="YYYY-MM-DD; null clears it.")

    def options(self) -> dict[str, Any]:
        """Memory.update's keyword arguments (an expiration_date left out is left as it is)."""
        given = {"expiration_date": self.expiration_date} if "expiration_date" in self.model_fields_set else {}
        return {"text": self.text, "metadata": self.metadata, **given}


def request_scopes(request: Request, *given: Scopes) -> dict[str, Any]:
    """The scopes this request works in: those it names (query and body must agree), confined to
    what its key may reach."""
    named: dict[str, Any] = {}
    for scopes in given:
        for name, value in scopes.model_dump(include=set(Scopes.model_fields)).items():
            if value in (None, ""):
                continue
            if named.setdefault(name, value) != value:
                raise UsageError(f"{name} differs between the query ({named[name]!r}) and the body ({value!r})")
    return confine(allowed_scopes(request), {"user_id": None, "agent_id": None, "run_id": None, **named})


async def call(request: Request, method: str, *args: Any, **kwargs: Any) -> Any:
    """`Memory.<method>(...)` in a worker thread."""
    memory = server_state(request).memory
    return await asyncio.to_thread(getattr(memory, method), *args, **kwargs)


@router.post("/memories/", summary="Add memories (curated by the LLM unless infer=false)")
async def add_memories(body: AddRequest, request: Request) -> dict[str, Any]:
    return await call(request, "add", body.chat(), **request_scopes(request, body), **body.options())


@router.get("/memories/search/", summary="Search memories (query parameters)")
async def search_memories(params: Annotated[SearchQuery, Query()], request: Request) -> dict[str, Any]:
    return await call(request, "search", params.query, **request_scopes(request, params), limit=params.limit,
                      threshold=params.threshold, filters=filter_from_json(params.filters))


@router.post("/memories/search/", summary="Search memories (JSON body, as mem0's server takes it)")
async def search_memories_post(body: SearchRequest, request: Request) -> dict[str, Any]:
    return await call(request, "search", body.query, **request_scopes(request, body), limit=body.limit,
                      threshold=body.threshold, filters=body.filters)


@router.get("/memories/", summary="List the memories of a scope")
async def list_memories(params: Annotated[ListQuery, Query()], request: Request) -> dict[str, Any]:
    return await call(request, "get_all", **request_scopes(request, params), limit=params.limit,
                      filters=filter_from_json(params.filters), show_expired=params.show_expired)


class DeleteQuery(Scopes):
    erase: bool | None = Field(None, description="Remove from every commit, irreversibly (memvault erase); "
                                                 "default: the server's vault.delete. A scoped key erases only "
                                                 "its own scopes.")


@router.delete("/memories/", summary="Delete every memory of a scope (soft: git keeps them; erase=true: gone)")
async def delete_memories(params: Annotated[DeleteQuery, Query()], request: Request) -> dict[str, Any]:
    return await call(request, "delete_all", **request_scopes(request, params), erase=params.erase)


@router.get("/memories/{memory_id}/", summary="Get one memory (404 outside the scopes named)")
async def get_memory(memory_id: str, params: Annotated[Scopes, Query()], request: Request) -> dict[str, Any]:
    found = await call(request, "get", memory_id, **request_scopes(request, params))
    if found is None:
        raise NotFoundError(f"Memory with id {memory_id[:80]} not found")
    return found


@router.put("/memories/{memory_id}/", summary="Rewrite a memory's text in place (same id)")
async def update_memory(memory_id: str, body: UpdateRequest, params: Annotated[Scopes, Query()],
                        request: Request) -> dict[str, Any]:
    return await call(request, "update", memory_id, **body.options(), **request_scopes(request, params, body))


@router.delete("/memories/{memory_id}/", summary="Delete one memory (soft: git keeps it; erase=true: gone)")
async def delete_memory(memory_id: str, params: Annotated[DeleteQuery, Query()], request: Request) -> dict[str, Any]:
    return await call(request, "delete", memory_id, **request_scopes(request, params), erase=params.erase)


@router.get("/memories/{memory_id}/history/", summary="A memory's ADD / UPDATE / DELETE events, from git")
async def memory_history(memory_id: str, params: Annotated[Scopes, Query()], request: Request
                         ) -> list[dict[str, Any]]:
    events = await call(request, "history", memory_id, **request_scopes(request, params))
    if not events:  # every memory that exists, or existed, has at least its ADD
        raise NotFoundError(f"Memory with id {memory_id[:80]} not found")
    return events


@router.post("/reset/", summary="Soft-delete everything (only with server.allow_reset)")
async def reset(request: Request) -> dict[str, Any]:
    from memvault.server.errors import error_response

    if not server_state(request).settings.server.allow_reset:
        return error_response(403, "reset is disabled on this server: start it with --allow-reset "
                                   "(server.allow_reset)", code="reset_disabled")
    if allowed_scopes(request) is not EVERYTHING:
        return error_response(403, "reset needs the server key (server.api_key): this key reaches only its scopes",
                              code="reset_forbidden")
    await call(request, "reset")
    return {"message": "Memories reset successfully!"}


class TrailingSlash:
    """`/v1/memories` and `/v1/memories/ID` are served as `/v1/memories/` and `/v1/memories/ID/`
    (rewritten, not redirected: the /v1/* passthrough would otherwise take them to the upstream)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(PREFIXES) and not path.endswith("/"):
            scope = {**scope, "path": path + "/", "raw_path": (scope.get("raw_path") or path.encode()) + b"/"}
        await self.app(scope, receive, send)
