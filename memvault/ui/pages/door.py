"""What every page of one router shares: the core (fetched per request), the CSRF token, the error
page, the moment a page shows, and the checks of a write.

A memvault error becomes an error page with the status the REST API would give (never a
traceback); a scoped key sees only its scopes, and not the vault-wide pages (log, changes, core
files, journal) whose texts would cross them."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from fastapi import Request
from starlette.responses import RedirectResponse

from memvault.errors import MemvaultError
from memvault.shapes import BeforeTheVault
from memvault.ui import PREFIX
from memvault.ui.render import page, url
from memvault.ui.security import HEADERS, Csrf, foreign_write

STILL = ("/changes",)  # the pages that do not show the vault as of one moment
UNCHANGED = "unchanged"  # `saved=` after a save that changed nothing (no commit was made)


class Forbidden(MemvaultError):
    exit_code = 1


def saved(updated: Any, before: Any) -> str:
    """What the page says after an edit: one commit, or nothing changed (the facade made none)."""
    return UNCHANGED if updated == before else "1"


def key_scopes(request: Request) -> dict[str, Any]:
    """The scopes the request's key confines it to ({} for the server key or no key)."""
    from memvault.server.auth import EVERYTHING, allowed_scopes, confine

    allowed = allowed_scopes(request)
    return {} if allowed is EVERYTHING else confine(allowed, {})


def whole_vault(request: Request) -> None:
    if key_scopes(request):
        raise Forbidden("this page shows the whole vault: a scoped key cannot open it")


def moved(path: str, **params: Any) -> RedirectResponse:
    """Where a write sends the browser next (303: the page is then read with GET)."""
    return RedirectResponse(url(path, **params), status_code=303, headers=HEADERS)


class Door:
    """The pages' shared part over the vault `get_core()` returns (called per request: serve opens
    it at start)."""

    def __init__(self, get_core: Callable[[], Any], csrf: Csrf) -> None:
        self.core = get_core
        self.csrf = csrf

    def view(self, handler: Callable) -> Callable:
        """Run a page handler with the core; errors become an error page."""

        @functools.wraps(handler)
        def run(request: Request, *args: Any, **kwargs: Any):
            from starlette.exceptions import HTTPException

            from memvault.server.errors import status_of_memvault_error

            started = time.perf_counter()
            try:
                response = handler(request, *args, **kwargs)
            except BeforeTheVault as exc:  # "as of" a day before the vault: not an error of the page
                shown = self.common(request)
                earliest = url(shown["path"], **dict(shown["kept"]),
                               at=exc.first.sha[:12]) if exc.first else ""
                response = page("before.html", status_of_memvault_error(exc), **shown, title="Before the vault",
                                asked=exc.when, first=exc.first, earliest=earliest)
            except Forbidden as exc:
                response = self.failed(request, 403, str(exc))
            except MemvaultError as exc:
                response = self.failed(request, status_of_memvault_error(exc), str(exc))
            except HTTPException as exc:
                response = self.failed(request, exc.status_code, str(exc.detail))
            # the page's own time (facade calls and template), for the browser's dev tools and bench_ui.py
            response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
            return response

        return run

    def failed(self, request: Request, status: int, message: str):
        return page("error.html", status, **self.common(request), title="Error", message=message)

    def common(self, request: Request, moment: Any = None) -> dict[str, Any]:
        """What every template shows: the moment viewed (None: now), the time box, the CSRF token."""
        from urllib.parse import quote

        path = quote(request.url.path.removeprefix(PREFIX) or "/")  # a conversation's name may hold anything
        still = path.startswith(STILL)
        # the page's own parameters, kept when the time box (or "back to now") moves it to another moment
        kept = [] if still else [(key, value) for key, value in request.query_params.multi_items()
                                 if key not in ("at", "offset", "saved")]
        return {"csrf": self.csrf.token, "at": moment.asked if moment else "", "moment": moment, "path": path,
                "scoped": bool(key_scopes(request)), "kept": kept, "now": url(path, **dict(kept)),
                # the time box reloads a page that can show the past, else opens the list as of then
                "travel": "/memories" if still else path}

    def travelled(self, at: str) -> Any:
        """The past moment `at` names (None for now): resolved once, every read of the page sees the same."""
        return self.core().resolve_as_of(at.strip() or None)

    def checked_write(self, request: Request, token: str | None) -> None:
        reason = foreign_write(request.headers, self.csrf.valid(token))
        if reason:
            raise Forbidden(reason)

    def written(self, request: Request, token: str, memory_id: str, live: bool = True) -> tuple[Any, Any]:
        """(core, the memory) for a write on it: from this page, with the token, within the key's scopes."""
        self.checked_write(request, token)
        core = self.core()
        _, entry = core.get_live(memory_id) if live else core.get(memory_id)
        return core, core.require_scopes(entry, key_scopes(request))
