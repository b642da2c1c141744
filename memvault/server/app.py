"""The FastAPI application: one vault, one `Memory`, a watcher and a curation worker per server.

    app = create_app(settings, page)  # served by memvault.server.run (uvicorn)

Routes: /v1/chat/completions (proxy.py), /v1/memories/... and /v1/reset/ (memories.py), mem0's own
paths /memories, /search, /v1/ping/, /v3/memories/... (mem0_routes.py), /health,
and any other path passed through to the upstream LLM server (llm.api_base), as agent-cli's proxy does.
`memvault serve` also gives it the web page (`page`: memvault.ui.app.mount), which the server never
imports: the page is built on the server's guards, not the other way round.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

from memvault import __version__
from memvault.server.state import ServerState, server_state
from memvault.settings import Settings

DESCRIPTION = """A persistent memory for LLMs, over HTTP.

* `POST /v1/chat/completions`: OpenAI-compatible; memories are retrieved and injected into the last
  user message, the turns are stored (one git commit) and curated in the background. Extra request
  fields: `memory_id` (the conversation, default "default"), `memory_top_k`, `memory_recency_weight`,
  `memory_score_threshold`. Non-streaming answers carry `memory_hits`. Other fields are forwarded
  (vendors' own, `extra_body`), but a field that routes or keys the request (`base_url`, `api_key`,
  ...) is a 400 naming it.
* `/v1/memories/...`: the mem0-style memory API (add, search, list, get, update, delete, history).
  An id outside the scopes a request names (`user_id`, `agent_id`, `run_id`) is a 404.
* Any other path (e.g. `GET /v1/models`) is passed through to `llm.api_base` (never outside it).
* Browsers: pages from the origins in `server.cors_origins` may call the server (CORS; none by default).

Auth: when the server has an API key, send it as `Authorization: Bearer <key>` or `X-API-Key`; the
LLM key then comes from `X-Upstream-Authorization`, `llm.api_key` or the provider's environment.
Without a server key, the bearer token is passed through to the LLM as its API key. A scoped key
(`server.keys`) reaches only its own scopes, on every route and in `memory_id`.
"""


@asynccontextmanager
async def lifespan(app: FastAPI):
    import httpx

    state: ServerState = app.state.server
    await asyncio.to_thread(state.start)
    state.http = httpx.AsyncClient(timeout=state.settings.llm.timeout)
    try:
        yield
    finally:
        await state.http.aclose()
        await asyncio.to_thread(state.stop)


def health(state: ServerState) -> dict[str, Any]:
    """Versions, paths and models in use, and how many entries are searchable."""
    core = state.core
    index = core.index_summary()
    settings = state.settings
    return {
        "status": "ok",
        "version": __version__,
        "vault": str(core.root),
        "embedder": index["embedder"],
        "reranker": settings.retrieval.reranker or None,
        "llm_model": settings.llm.model or None,
        "llm_api_base": settings.llm.api_base or None,
        "index_size": index["size"],
        "watching": bool(state.watcher and state.watcher.is_alive()),
        "auth": bool(settings.server.api_key or settings.server.keys),
        # agent-cli's memory proxy's own fields, for its clients and scripts:
        "memory_store": str(core.root),
        "openai_base_url": settings.llm.api_base or None,
        "default_top_k": str(settings.retrieval.top_k),
    }


DOCS_ASSETS = "/docs-assets"


def serve_docs(app: FastAPI) -> None:
    """/docs: Swagger UI with its script and style served from here (the fastapi-offline package ships
    them), so the page makes no request beyond this server. No online validator badge either."""
    from importlib.resources import files

    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount(DOCS_ASSETS, StaticFiles(directory=str(files("fastapi_offline") / "static")), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request):
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(openapi_url=f"{root}{app.openapi_url}", title="memvault API",
                                   swagger_js_url=f"{root}{DOCS_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{root}{DOCS_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{root}{DOCS_ASSETS}/favicon.png",
                                   swagger_ui_parameters={"validatorUrl": None})


def create_app(settings: Settings, page=None) -> FastAPI:
    """The application for these settings (the vault is opened when it starts serving). `page(app,
    get_core)` mounts a web page behind the keys and guards and returns its middleware, read before the
    key check (memvault.ui.app.mount: the page at /ui, and its browsers' Basic password)."""
    from memvault.server import mem0_routes, memories, passthrough, proxy
    from memvault.server.auth import ApiKeyMiddleware
    from memvault.server.errors import install_handlers
    from memvault.server.limits import BodyLimit
    from memvault.server.origin import BrowserGuard

    app = FastAPI(title="memvault", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)  # FastAPI's pages load their scripts from a CDN
    serve_docs(app)
    app.state.server = ServerState(settings)
    install_handlers(app)

    @app.get("/health", tags=["server"], summary="Server, vault and model status")
    async def get_health(request: Request) -> dict[str, Any]:
        from memvault.server.auth import EVERYTHING, allowed_scopes

        status = await asyncio.to_thread(health, server_state(request))
        if allowed_scopes(request) is not EVERYTHING:  # a scoped key: not where the vault and the LLM are
            status.update(vault=None, llm_api_base=None, memory_store=None, openai_base_url=None)
        return status

    app.include_router(memories.router)
    app.include_router(mem0_routes.router)  # mem0's own paths (OSS server, hosted client): before the passthrough
    app.include_router(proxy.router)
    page_middleware = page(app, lambda: app.state.server.core) if page else None  # before the passthrough
    app.include_router(passthrough.passthrough_router)  # last: it takes every /v1/* path left over
    app.add_middleware(memories.TrailingSlash)
    app.add_middleware(BodyLimit, max_bytes=settings.limits.max_request_bytes)
    app.add_middleware(ApiKeyMiddleware, api_key=settings.server.api_key, keys=settings.server.keys)
    if page_middleware:  # the web page's browsers send the key as a Basic password: read before the check
        app.add_middleware(page_middleware)
    origins = settings.server.cors_origin_list
    if origins:  # outside the key check: a browser's preflight carries no key, and is answered here
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["*"], allow_headers=["*"],
                           expose_headers=["Server-Timing"], max_age=600)
    app.add_middleware(BrowserGuard, bind=settings.server.host, cors_origins=origins)  # outermost: DNS
    # rebinding, pages from origins not allowed
    return app
