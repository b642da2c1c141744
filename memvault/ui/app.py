"""The page as an app: `mount` puts it at /ui in `memvault serve` (given to server.app.create_app by
the CLI, behind the server's keys and guards), `create_app` makes the app of `memvault ui` (the same
guards, the page alone; run.py serves it)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager
from typing import Any

from memvault.settings import Settings
from memvault.ui import PREFIX


def mount(app, get_core: Callable[[], Any]) -> type:
    """The pages and their static files at /ui (before any catch-all route). Returns the middleware
    (`security.BasicKey`) to add after the key check's, so a browser's Basic password is read first."""
    from importlib.resources import files

    from starlette.staticfiles import StaticFiles

    from memvault.ui.routes import make_router
    from memvault.ui.security import BasicKey, Csrf

    app.mount(PREFIX + "/static", StaticFiles(directory=str(files("memvault.ui") / "static")), name="ui-static")
    app.include_router(make_router(get_core, Csrf()))
    return BasicKey


def create_app(settings: Settings):
    """`memvault ui`'s app: the vault opened (and its index caught up) at start, closed at the end."""
    import asyncio

    from fastapi import FastAPI
    from starlette.responses import RedirectResponse

    from memvault.core import Memvault
    from memvault.server.auth import ApiKeyMiddleware
    from memvault.server.limits import BodyLimit
    from memvault.server.origin import BrowserGuard

    opened: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(_app):
        core = await asyncio.to_thread(Memvault.open, settings)
        await asyncio.to_thread(core.reindex)
        opened["core"] = core
        try:
            yield
        finally:
            core.close()

    app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/", include_in_schema=False)
    def home():
        return RedirectResponse(PREFIX + "/", status_code=307)

    app.add_middleware(BodyLimit, max_bytes=settings.limits.max_request_bytes)
    app.add_middleware(ApiKeyMiddleware, api_key=settings.server.api_key, keys=settings.server.keys)
    app.add_middleware(mount(app, lambda: opened["core"]))
    app.add_middleware(BrowserGuard, bind=settings.server.host, cors_origins=[])
    return app
