"""The router of the web page: every page group's routes (memvault.ui.pages) under /ui, in one place.

Every page but `changes` (which compares two moments of its own) takes `at`: a date, time or commit,
resolved once per request (`Door.travelled`), and shows the vault as it was then; its links keep `at`
(render.link), a banner says so, and no edit form is shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from memvault.ui import PREFIX
from memvault.ui.pages import audit, browse, editing, finding, workspace
from memvault.ui.pages.door import Door
from memvault.ui.security import Csrf

GROUPS = (browse, finding, audit, workspace, editing)


def make_router(get_core: Callable[[], Any], csrf: Csrf) -> APIRouter:
    """The pages over the vault `get_core()` returns (called per request: serve opens it at start)."""
    router = APIRouter(prefix=PREFIX, include_in_schema=False)
    door = Door(get_core, csrf)
    for group in GROUPS:
        group.add_routes(router, door)
    return router
