"""The FastAPI application: one vault, one `Memory`, a watcher and a curation worker per server.

    app = create_app(settings)      # served by memvault.server.run (uvicorn)

Routes: /v1/chat/completions (proxy.py), /v1/memories/... and /v1/reset/ (memories.py), /health,
and any other /v1/* path passed through to the upstream LLM server (llm.api_base).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

from memvault import __version__
from memvault.settings import Settings

log = logging.getLogger("memvault.server")
DESCRIPTION = """A persistent memory for LLMs, over HTTP.

* `POST /v1/chat/completions`: OpenAI-compatible; memories are retrieved and injected into the last
  user message, the turns are stored (one git commit) and curated in the background. Extra request
  fields: `memory_id` (the conversation, default "default"), `memory_top_k`, `memory_recency_weight`,
  `memory_score_threshold`. Non-streaming answers carry `memory_hits`. Only OpenAI chat parameters are
  forwarded: any other field (`base_url`, `api_key`, ...) is a 400.
* `/v1/memories/...`: the mem0-style memory API (add, search, list, get, update, delete, history).
  An id outside the scopes a request names (`user_id`, `agent_id`, `run_id`) is a 404.
* Any other `/v1/*` path (e.g. `GET /v1/models`) is passed through to `llm.api_base` (never outside it).

Auth: when the server has an API key, send it as `Authorization: Bearer <key>` or `X-API-Key`; the
LLM key then comes from `X-Upstream-Authorization`, `llm.api_key` or the provider's environment.
Without a server key, the bearer token is passed through to the LLM as its API key. A scoped key
(`server.keys`) reaches only its own scopes, on every route and in `memory_id`.
"""


class ServerState:
    """What the routes share: settings, the Memory (and its Memvault), an HTTP client for passthrough,
    the turn committer, the one curation worker (curations run one at a time, after the answer is
    out) and the watcher."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory = None  # memvault.api.Memory, opened at start-up
        self.http = None  # httpx.AsyncClient
        self.curation = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memvault-curate")
        self.turns = None  # memvault.server.turns.TurnCommitter, started with the server
        self.stop_watching = threading.Event()
        self.watcher: threading.Thread | None = None

    @property
    def core(self):
        """The Memvault under the Memory: one index connection and one lock serve both APIs."""
        return self.memory._core

    def start(self) -> None:
        """Open the vault (created if missing), catch the index up with the files, start watching."""
        from memvault.api import Memory
        from memvault.errors import MemvaultError
        from memvault.server.proxy import curator
        from memvault.server.turns import TurnCommitter, commit_leftovers, resume_curation
        from memvault.server.watching import start_watcher

        self.memory = Memory(settings=self.settings)
        try:
            left = commit_leftovers(self.core)
            if left:
                log.warning("committed %d turn file(s) written before the last stop", left)
        except MemvaultError as exc:  # the files stay on disk: the next start (or `doctor --fix`) commits them
            log.error("turn files written before the last stop are not committed: %s", exc)
        self.core.reindex()  # files edited while the server was down become searchable now
        self.turns = TurnCommitter(self.core)
        resumed = resume_curation(self.core, self.turns.curations, curator(self, None), self.submit_curation)
        if resumed:
            log.warning("resuming the curation of %d turn(s) a stop interrupted", resumed)
        self.watcher = start_watcher(self.core, self.stop_watching, own=self.turns.in_flight)
        if self.settings.llm.model or self.settings.llm.api_base:
            # litellm takes seconds to import: pay for it now, in the background, not in the first request.
            threading.Thread(target=warm_litellm, name="memvault-litellm-import", daemon=True).start()

    def stop(self) -> None:
        """Stop watching, commit the last turns, let queued curations finish (they hold what was
        learned), close the vault."""
        self.stop_watching.set()
        if self.watcher is not None:
            self.watcher.join(timeout=10)
        if self.turns is not None:
            self.turns.close()  # commits the last turns and queues their curation
        self.curation.shutdown(wait=True)
        if self.memory is not None:
            self.memory.close()

    def submit_curation(self, work) -> None:
        def run() -> None:
            try:
                work()
            except Exception:  # noqa: BLE001 - the turns are already stored; say why curation failed
                log.exception("background curation failed")

        try:
            self.curation.submit(run)
        except RuntimeError:  # shutting down: the turns are stored, only curation is skipped
            log.warning("server stopping: curation of the last turn skipped")


def warm_litellm() -> None:
    from memvault.curate.llm import import_litellm

    try:
        import_litellm()
    except Exception:  # noqa: BLE001 - the first request will report it
        log.exception("importing litellm failed")


def server_state(request: Request) -> ServerState:
    return request.app.state.server


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
    with core._index_lock:
        index = core.index()
        size = index.count()
    settings = state.settings
    return {
        "status": "ok",
        "version": __version__,
        "vault": str(core.vault.root),
        "embedder": index.identity,
        "reranker": settings.retrieval.reranker or None,
        "llm_model": settings.llm.model or None,
        "llm_api_base": settings.llm.api_base or None,
        "index_size": size,
        "watching": bool(state.watcher and state.watcher.is_alive()),
        "auth": bool(settings.server.api_key or settings.server.keys),
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


def create_app(settings: Settings) -> FastAPI:
    """The application for these settings (the vault is opened when it starts serving)."""
    from memvault.server import memories, proxy
    from memvault.server.auth import ApiKeyMiddleware
    from memvault.server.errors import install_handlers
    from memvault.server.limits import BodyLimit

    app = FastAPI(title="memvault", version=__version__, description=DESCRIPTION, lifespan=lifespan,
                  docs_url=None, redoc_url=None)  # FastAPI's pages load their scripts from a CDN
    serve_docs(app)
    app.state.server = ServerState(settings)
    install_handlers(app)

    @app.get("/health", tags=["server"], summary="Server, vault and model status")
    async def get_health(request: Request) -> dict[str, Any]:
        return await asyncio.to_thread(health, server_state(request))

    app.include_router(memories.router)
    app.include_router(proxy.router)
    app.include_router(proxy.passthrough_router)  # last: it takes every /v1/* path left over
    app.add_middleware(memories.TrailingSlash)
    app.add_middleware(BodyLimit, max_bytes=settings.limits.max_request_bytes)
    app.add_middleware(ApiKeyMiddleware, api_key=settings.server.api_key,  # outermost: checked first
                       keys=settings.server.keys)
    return app
