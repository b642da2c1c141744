"""mem0's own REST paths, so mem0's clients work against `memvault serve` unchanged.

- mem0's OSS server (its `server/main.py`): `POST/GET/DELETE /memories`, `GET/PUT/DELETE
  /memories/{id}`, `GET /memories/{id}/history`, `POST /search`, `POST /reset`, `POST /configure`,
  `GET /entities`, `DELETE /entities/{type}/{id}`.
- What the hosted `MemoryClient` (mem0ai 2.x) calls: `GET /v1/ping/` at start-up, `POST
  /v3/memories/add/`, `POST /v3/memories/` (list, paginated), `POST /v3/memories/search/`, `GET
  /v1/entities/` (`users()`), `DELETE /v2/entities/{type}/{id}/` (`delete_users()`); it also
  uses `/v1/memories/{id}/...` and `DELETE /v1/memories/`, which memvault.server.memories serves.
- Entities (`GET /entities`, `DELETE /entities/{type}/{id}`): the users, agents and runs that own
  memories, read from memvault's scopes; deleting one is `delete_all` of that scope (its memories,
  turns and summaries; soft unless vault.delete is "erase"). A scoped key lists and deletes only its own ids.

Each route is a thin call to the server's `Memory`, under the same rules as /v1/memories: scopes
are boundaries (ids named in `filters` count, and a scoped key must name its ids plainly), errors
are 4xx JSON with mem0's `detail` beside memvault's `error`. `/configure` is refused: the LLM, its
key and the vault are the operator's to choose (docs/architecture.md, Trust boundaries), never a client's.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from memvault import __version__
from memvault.errors import MemvaultError
from memvault.server import memories
from memvault.server.auth import EVERYTHING, allowed_scopes
from memvault.server.memories import ListQuery, NullIsOmitted, Scopes, call, request_scopes
from memvault.shapes import SCOPE_KEYS

router = APIRouter(tags=["mem0"])
MAX_LISTED = 10_000  # what one paginated listing reads at most


def mem0_errors(route):
    """memvault's error response with mem0's `detail` (what mem0's clients read) beside `error`."""

    @functools.wraps(route)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        from starlette.exceptions import HTTPException
        from starlette.responses import JSONResponse

        from memvault.server.errors import clipped_line, error_body, status_of_memvault_error

        try:
            return await route(*args, **kwargs)
        except MemvaultError as exc:
            status, message = status_of_memvault_error(exc), str(exc)
        except HTTPException as exc:
            status, message = exc.status_code, str(exc.detail)
        return JSONResponse({"detail": clipped_line(message), **error_body(status, message)}, status_code=status)

    return wrapper


class SearchBody(NullIsOmitted, Scopes):
    query: str = Field(min_length=1)
    filters: dict[str, Any] | None = None
    top_k: int | None = Field(None, ge=0, le=1000)
    limit: int | None = Field(None, ge=0, le=1000)
    threshold: float | None = Field(None, ge=0, le=1)
    rerank: bool = True
    explain: bool = False
    show_expired: bool = False


class ListBody(NullIsOmitted, Scopes):
    filters: dict[str, Any] | None = None
    top_k: int | None = Field(None, ge=0, le=10000)
    show_expired: bool = False


class Page(BaseModel):
    page: int = Field(1, ge=1)
    page_size: int = Field(100, ge=1, le=1000)


def scopes_and_filters(request: Request, body: Scopes, filters: dict[str, Any] | None) -> tuple[dict, dict | None]:
    """The request's scopes (named at the top level or, as mem0 2.x does, plainly inside `filters`),
    confined to what its key may reach, and the rest of the filters. A scoped key must name its ids
    plainly: `{"user_id": "*"}` or `{"in": [...]}` could otherwise reach past it."""
    from starlette.exceptions import HTTPException

    rest = dict(filters or {})
    named = Scopes(**{key: str(rest.pop(key)) for key in SCOPE_KEYS
                      if isinstance(rest.get(key), (str, int)) and not isinstance(rest[key], bool)
                      and rest[key] != "*"})
    if allowed_scopes(request) is not EVERYTHING and any(key in rest for key in SCOPE_KEYS):
        raise HTTPException(403, "this API key must name its scope ids plainly (no '*' or operators in filters)")
    return request_scopes(request, body, named), rest or None


# -- the hosted MemoryClient's paths ------------------------------------------------------------------

@router.get("/v1/ping/", summary="What mem0's MemoryClient asks at start-up")
async def ping(request: Request) -> dict[str, Any]:
    # The client needs an organisation and a project to start: one memvault server is one of each.
    return {"status": "ok", "message": "memvault", "version": __version__, "user_email": None,
            "org_id": "memvault", "project_id": "memvault"}


# Where mem0's paths do what memvault's /v1 routes do, the same route functions serve them, with
# mem0's error shape (memvault.server.memories).
router.post("/v3/memories/add/", summary="Add memories (mem0 MemoryClient)")(mem0_errors(memories.add_memories))


@router.post("/v3/memories/", summary="List memories, paginated (mem0 MemoryClient)")
@mem0_errors
async def list_v3(body: ListBody, page: Annotated[Page, Query()], request: Request) -> dict[str, Any]:
    scopes, filters = scopes_and_filters(request, body, body.filters)
    found = await call(request, "get_all", **scopes, filters=filters, top_k=body.top_k or MAX_LISTED,
                       show_expired=body.show_expired)
    results = found["results"]
    start = (page.page - 1) * page.page_size
    following = str(request.url.include_query_params(page=page.page + 1)) if start + page.page_size < len(results) \
        else None
    before = str(request.url.include_query_params(page=page.page - 1)) if page.page > 1 else None
    return {"count": len(results), "next": following, "previous": before,
            "results": results[start:start + page.page_size]}


@router.post("/v3/memories/search/", summary="Search memories (mem0 MemoryClient)")
@router.post("/search", summary="Search memories (mem0 OSS server)")
@mem0_errors
async def search(body: SearchBody, request: Request) -> dict[str, Any]:
    scopes, filters = scopes_and_filters(request, body, body.filters)
    return await call(request, "search", body.query, **scopes, filters=filters, top_k=body.top_k, limit=body.limit,
                      threshold=body.threshold, rerank=body.rerank, explain=body.explain,
                      show_expired=body.show_expired)


# -- entities: the users, agents and runs that own memories (mem0's OSS server and MemoryClient) ---------

ENTITY_TYPES = {"user": "user_id", "agent": "agent_id", "run": "run_id"}


@router.get("/entities", summary="Users, agents and runs with memories (mem0 OSS server)")
@router.get("/entities/", include_in_schema=False)
@router.get("/v1/entities/", summary="Users, agents and runs with memories (mem0 MemoryClient.users)")
@router.get("/v1/entities", include_in_schema=False)
@mem0_errors
async def list_entities(request: Request) -> dict[str, Any]:
    results = await visible_entities(request)
    return {"count": len(results), "next": None, "previous": None, "results": results}


async def visible_entities(request: Request) -> list[dict[str, Any]]:
    """The entities this request's key may see (a scoped key: only the ids it may use), in mem0's shape."""
    import asyncio
    from datetime import UTC, datetime

    from memvault.server.state import server_state

    allowed = allowed_scopes(request)
    found = await asyncio.to_thread(server_state(request).core.entities, None if allowed is EVERYTHING else allowed)

    def iso(epoch: float | None) -> str | None:
        return datetime.fromtimestamp(epoch, UTC).isoformat() if epoch is not None else None

    return [{"id": item["id"], "name": item["id"], "type": item["type"], "total_memories": item["total_memories"],
             "created_at": iso(item["created_at"]), "updated_at": iso(item["updated_at"])} for item in found]


@router.delete("/entities/{entity_type}/{entity_id}", summary="Delete a user's, agent's or run's memories "
               "(mem0 OSS server)")
@router.delete("/v2/entities/{entity_type}/{entity_id}/", summary="Delete an entity (mem0 MemoryClient.delete_users)")
@router.delete("/v2/entities/{entity_type}/{entity_id}", include_in_schema=False)
@mem0_errors
async def delete_entity(entity_type: str, entity_id: str, request: Request) -> dict[str, Any]:
    from starlette.exceptions import HTTPException

    scope = ENTITY_TYPES.get(entity_type)
    if scope is None:
        raise HTTPException(400, f"unknown entity type {entity_type[:40]!r}: memvault's are user, agent and run")
    scopes = request_scopes(request, Scopes(**{scope: entity_id}))  # a scoped key: its own ids only (403)
    if not any(item["type"] == entity_type and item["id"] == entity_id for item in await visible_entities(request)):
        raise HTTPException(404, f"no {entity_type} {entity_id[:80]!r} with memories")
    await call(request, "delete_all", **scopes)
    return {"message": "Entity deleted successfully."}


# The hosted platform's other paths (batches, exports, summaries, feedback, profiles, the organisation's
# projects): memvault has no such thing. Answered here, for the pass-through would send
# them (memory texts and the client's key included) on to the LLM's address.
PLATFORM_ONLY = ("/v1/entities", "/v2/entities", "/v1/batch", "/v1/exports", "/v1/summary", "/v1/feedback",
                 "/v2/profiles", "/api/v1/orgs")


async def platform_only(request: Request) -> Any:
    from starlette.responses import JSONResponse

    from memvault.server.errors import error_body

    message = (f"{request.url.path[:80]} is a mem0 Platform feature memvault does not have: it serves "
               "add, search, get, list, update, delete and history")
    return JSONResponse({"detail": message, **error_body(501, message, code="not_implemented")}, status_code=501)


for prefix in PLATFORM_ONLY:
    router.add_api_route(prefix + "/{rest:path}", platform_only, include_in_schema=False,
                         methods=["GET", "POST", "PUT", "PATCH", "DELETE"])


# -- mem0's OSS server paths ---------------------------------------------------------------------------

router.post("/memories", summary="Create memories (mem0 OSS server)")(mem0_errors(memories.add_memories))


@router.get("/memories", summary="Get memories (mem0 OSS server)")
@mem0_errors
async def list_memories(params: Annotated[ListQuery, Query()], request: Request) -> dict[str, Any]:
    return await memories.list_memories(params, request)


@router.delete("/memories", summary="Delete all memories of a scope (mem0 OSS server)")
@mem0_errors
async def delete_memories(params: Annotated[Scopes, Query()], request: Request) -> dict[str, Any]:
    await call(request, "delete_all", **request_scopes(request, params))
    return {"message": "All relevant memories deleted"}


@router.get("/memories/{memory_id}", summary="Get a memory (mem0 OSS server: null when unknown)")
@mem0_errors
async def get_memory(memory_id: str, params: Annotated[Scopes, Query()], request: Request) -> dict[str, Any] | None:
    # mem0's server returns Memory.get's None as a 200 null; memvault's own /v1 path answers 404.
    return await call(request, "get", memory_id, **request_scopes(request, params))
router.put("/memories/{memory_id}", summary="Update a memory (mem0 OSS server)")(mem0_errors(memories.update_memory))


@router.delete("/memories/{memory_id}", summary="Delete a memory (mem0 OSS server)")
@mem0_errors
async def delete_memory(memory_id: str, params: Annotated[Scopes, Query()], request: Request) -> dict[str, Any]:
    await call(request, "delete", memory_id, **request_scopes(request, params))
    return {"message": "Memory deleted successfully"}


@router.get("/memories/{memory_id}/history", summary="A memory's history (mem0 OSS server)")
@mem0_errors
async def memory_history(memory_id: str, params: Annotated[Scopes, Query()], request: Request
                         ) -> list[dict[str, Any]]:
    return await call(request, "history", memory_id, **request_scopes(request, params))


@router.post("/reset", summary="Reset all memories (mem0 OSS server; only with server.allow_reset)")
@mem0_errors
async def reset_memories(request: Request) -> Any:
    from memvault.server.memories import reset

    answer = await reset(request)
    return {"message": "All memories reset"} if isinstance(answer, dict) else answer


@router.post("/configure", summary="Refused: the server's configuration is the operator's")
@mem0_errors
async def configure(request: Request) -> Any:
    from starlette.exceptions import HTTPException

    raise HTTPException(403, "memvault's configuration is the operator's (LLM, keys, vault): set it in the "
                             "config file or with `memvault config set`, then restart `memvault serve`")
