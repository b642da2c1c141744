"""The audit pages: the log of commits and the changes between two moments. Both show the whole
vault, so a scoped key cannot open them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Request

from memvault.shapes import BeforeTheVault
from memvault.ui.pages.door import Door, whole_vault
from memvault.ui.render import page, paging
from memvault.ui.views import diff_words, operations

CHANGES_DAYS = 7  # what the Changes page shows when no start is given: the last week


def add_routes(router: APIRouter, door: Door) -> None:
    @router.get("/log")
    @door.view
    def log(request: Request, operation: str = "", conversation: str = "", offset: int = 0, limit: int = 0,
            at: str = ""):
        whole_vault(request)
        moment = door.travelled(at)
        offset, limit = paging(offset, limit)
        commits = door.core().commits(offset + limit + 1, operation or None, conversation or None, moment)
        return page("log.html", **door.common(request, moment), title="Log", commits=commits[offset:offset + limit],
                    more=len(commits) > offset + limit, offset=offset, limit=limit, operation=operation,
                    conversation=conversation, operations=operations())

    @router.get("/changes")  # compares two moments of its own: takes no `at`
    @door.view
    def changes(request: Request, start: str = "", end: str = ""):
        whole_vault(request)
        core = door.core()
        since = start.strip() or (datetime.now(UTC).date() - timedelta(days=CHANGES_DAYS)).isoformat()
        try:
            first = core.resolve_as_of(since)
        except BeforeTheVault as exc:  # the vault is younger: all of it
            first = exc.first
        found = core.changes_between(first, end or None)
        return page("changes.html", **door.common(request), title="Changes", start=start, end=end, found=found,
                    default=not start.strip(), days=CHANGES_DAYS,
                    diffs=[diff_words(c.old, c.new) for c in found.changes])
