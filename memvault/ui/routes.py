"""The pages, each a thin door: parse the request, make one or two facade calls, render a template.

A memvault error becomes an error page with the status the REST API would give (never a
traceback); a scoped key sees only its scopes, and not the vault-wide pages (log, changes, core
files, journal) whose texts would cross them.

Every page but `changes` (which compares two moments of its own) takes `at`: a date, time or commit,
resolved once per request (`moment`), and shows the vault as it was then; its links keep `at`
(render.link), a banner says so, and no edit form is shown."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Form, Request
from starlette.responses import RedirectResponse

from memvault.errors import EntryFormatError, MemvaultError, NotFoundError, UsageError
from memvault.ui import PREFIX
from memvault.ui.render import conversation_path, page, paging, url
from memvault.ui.security import HEADERS, Csrf, foreign_write
from memvault.ui.views import diff_words, entry_row, explain_rows, operations, provenance, workspace_links
from memvault.vault.timetravel import BeforeTheVault

STILL = ("/changes",)  # the pages that do not show the vault as of one moment
CHANGES_DAYS = 7  # what the Changes page shows when no start is given: the last week
UNCHANGED = "unchanged"  # `saved=` after a save that changed nothing (no commit was made)
ROLES = ("memory", "user", "assistant", "session", "rule", "summary", "core", "journal")


class Forbidden(MemvaultError):
    exit_code = 1


def saved(updated: Any, before: Any) -> str:
    """What the page says after an edit: one commit, or nothing changed (the facade made none)."""
    return UNCHANGED if updated == before else "1"


def scopes_of(request: Request) -> dict[str, Any]:
    """The scopes the request's key confines it to ({} for the server key or no key)."""
    from memvault.server.auth import EVERYTHING, allowed_scopes, confine

    allowed = allowed_scopes(request)
    return {} if allowed is EVERYTHING else confine(allowed, {})


def whole_vault(request: Request) -> None:
    if scopes_of(request):
        raise Forbidden("this page shows the whole vault: a scoped key cannot open it")


def make_router(get_core: Callable[[], Any], csrf: Csrf) -> APIRouter:
    """The pages over the vault `get_core()` returns (called per request: serve opens it at start)."""
    router = APIRouter(prefix=PREFIX, include_in_schema=False)

    def view(handler: Callable) -> Callable:
        """Run a page handler with the core; errors become an error page."""

        @functools.wraps(handler)
        def run(request: Request, *args: Any, **kwargs: Any):
            from starlette.exceptions import HTTPException

            from memvault.server.errors import status_of_memvault_error

            started = time.perf_counter()
            try:
                response = handler(request, *args, **kwargs)
            except BeforeTheVault as exc:  # "as of" a day before the vault: not an error of the page
                shown = common(request)
                earliest = url(shown["path"], **dict(shown["kept"]),
                               at=exc.first.sha[:12]) if exc.first else ""
                response = page("before.html", status_of_memvault_error(exc), **shown, title="Before the vault",
                                asked=exc.when, first=exc.first, earliest=earliest)
            except Forbidden as exc:
                response = failed(request, 403, str(exc))
            except MemvaultError as exc:
                response = failed(request, status_of_memvault_error(exc), str(exc))
            except HTTPException as exc:
                response = failed(request, exc.status_code, str(exc.detail))
            # the page's own time (facade calls and template), for the browser's dev tools and bench_ui.py
            response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
            return response

        return run

    def failed(request: Request, status: int, message: str):
        return page("error.html", status, **common(request), title="Error", message=message)

    def common(request: Request, moment: Any = None) -> dict[str, Any]:
        """What every template shows: the moment viewed (None: now), the time box, the CSRF token."""
        from urllib.parse import quote

        path = quote(request.url.path.removeprefix(PREFIX) or "/")  # a conversation's name may hold anything
        still = path.startswith(STILL)
        # the page's own parameters, kept when the time box (or "back to now") moves it to another moment
        kept = [] if still else [(key, value) for key, value in request.query_params.multi_items()
                                 if key not in ("at", "offset", "saved")]
        return {"csrf": csrf.token, "at": moment.asked if moment else "", "moment": moment, "path": path,
                "scoped": bool(scopes_of(request)), "kept": kept, "now": url(path, **dict(kept)),
                # the time box reloads a page that can show the past, else opens the list as of then
                "travel": "/memories" if still else path}

    def travelled(at: str) -> Any:
        """The past moment `at` names (None for now): resolved once, every read of the page sees the same."""
        return get_core().resolve_as_of(at.strip() or None)

    def checked_write(request: Request, token: str | None) -> None:
        reason = foreign_write(request.headers, csrf.valid(token))
        if reason:
            raise Forbidden(reason)

    def written(request: Request, token: str, memory_id: str, live: bool = True) -> tuple[Any, Any]:
        """(core, the memory) for a write on it: from this page, with the token, within the key's scopes."""
        checked_write(request, token)
        core = get_core()
        _, entry = core.get_live(memory_id) if live else core.get(memory_id)
        return core, core.require_scopes(entry, scopes_of(request))

    def moved(path: str, **params: Any) -> RedirectResponse:
        return RedirectResponse(url(path, **params), status_code=303, headers=HEADERS)

    # -- browse -----------------------------------------------------------------------------------
    @router.get("/")
    @view
    def overview(request: Request, at: str = ""):
        from memvault.vault import layout

        core, moment = get_core(), travelled(at)
        scoped = bool(scopes_of(request))
        return page("overview.html", **common(request, moment), title="Overview",
                    data=core.overview(scopes_of(request), moment),
                    core_names=() if scoped else layout.CORE_NAMES,
                    days=[] if scoped else core.journal_days(14, moment))

    @router.get("/memories")
    @view
    def memories(request: Request, conversation: str = "", role: str = "memory", offset: int = 0,
                 limit: int = 0, at: str = ""):
        core, moment = get_core(), travelled(at)
        offset, limit = paging(offset, limit)
        role = role if role in ROLES else None
        if moment:  # the past's files, only the page's read (no past index to build for a list)
            found, _ = core.entries_as_of(moment, conversation or None, role, scopes_of(request), offset, limit)
        else:
            found = core.rows_page(conversation or None, role, scopes_of(request), offset, limit)
        rows = [entry_row(item) for item in found.items]
        return page("memories.html", **common(request, moment), title="Memories", rows=rows, found=found,
                    conversation=conversation, role=role or "", roles=ROLES)

    @router.get("/c/{conversation}")
    @view
    def conversation_page(request: Request, conversation: str, offset: int = 0, limit: int = 0, at: str = ""):
        core, moment = get_core(), travelled(at)
        conversation = core.conversation_named(conversation)
        scopes = scopes_of(request)
        offset, limit = paging(offset, limit)
        listed = functools.partial(core.rows_page, conversation, scopes=scopes, offset=0, as_of=moment)
        with core.index_as_of(moment, ranking=False):  # the past's rows read once for the page's three reads
            timeline = core.timeline(conversation, scopes, offset, limit, moment)
            sessions, rules = listed(role="session", limit=20), listed(role="rule", limit=100)
        return page("conversation.html", **common(request, moment), title=conversation, conversation=conversation,
                    timeline=timeline, rows=[entry_row(i) for i in timeline.items],
                    summary=None if scopes else core.summary(conversation, moment),
                    sessions=[entry_row(r) for r in sessions.items], rules=[entry_row(r) for r in rules.items])

    @router.get("/m/{memory_id}")
    @view
    def memory(request: Request, memory_id: str, at: str = "", saved: str = ""):
        core, moment = get_core(), travelled(at)
        if moment:
            rel, entry, content, _ = core.entry_as_of(memory_id, moment)
        else:
            rel, entry, content = core.entry_file(memory_id)
        core.require_scopes(entry, scopes_of(request))
        try:
            events = core.history(entry.id, moment)  # as of a past moment: its history up to then
        except NotFoundError:  # purged since the moment shown: its past file is all there is
            events = []
        return page("memory.html", **common(request, moment), title=f"Memory {entry.id[:8]}", entry=entry, rel=rel,
                    content=content, saved=saved, events=events,
                    diffs=[diff_words(e.old_memory, e.new_memory) for e in events],
                    provenance=provenance(entry, events))

    # -- search -------------------------------------------------------------------------------------
    @router.get("/search")
    @view
    def search(request: Request, q: str = "", conversation: str = "", at: str = ""):
        core, moment = get_core(), travelled(at)
        hits, relations = [], []
        if q.strip():
            hits = core.search(q, conversation or None, scopes_of(request), as_of=moment)
            relations = core.relations(q, conversation or None, scopes_of(request), as_of=moment)
        wanted = any(h.role in ("core", "journal") for h in hits)
        links = workspace_links(core.journal_days(366, moment)) if wanted else {}
        return page("search.html", **common(request, moment), title="Search", q=q, conversation=conversation,
                    hits=hits, links={h.id: links.get(h.id, f"/m/{h.id}") for h in hits},
                    stages=[explain_rows(hit) for hit in hits], relations=relations)

    # -- audit --------------------------------------------------------------------------------------
    @router.get("/log")
    @view
    def log(request: Request, operation: str = "", conversation: str = "", offset: int = 0, limit: int = 0,
            at: str = ""):
        whole_vault(request)
        moment = travelled(at)
        offset, limit = paging(offset, limit)
        commits = get_core().commits(offset + limit + 1, operation or None, conversation or None, moment)
        return page("log.html", **common(request, moment), title="Log", commits=commits[offset:offset + limit],
                    more=len(commits) > offset + limit, offset=offset, limit=limit, operation=operation,
                    conversation=conversation, operations=operations())

    @router.get("/changes")
    @view
    def changes(request: Request, start: str = "", end: str = ""):
        whole_vault(request)
        core = get_core()
        since = start.strip() or (datetime.now(UTC).date() - timedelta(days=CHANGES_DAYS)).isoformat()
        try:
            first = core.resolve_as_of(since)
        except BeforeTheVault as exc:  # the vault is younger: all of it
            first = exc.first
        found = core.changes_between(first, end or None)
        return page("changes.html", **common(request), title="Changes", start=start, end=end, found=found,
                    default=not start.strip(), days=CHANGES_DAYS,
                    diffs=[diff_words(c.old, c.new) for c in found.changes])

    # -- the graph ----------------------------------------------------------------------------------
    @router.get("/graph")
    @view
    def graph(request: Request, entity: str = "", depth: int = 1, conversation: str = "", at: str = ""):
        from memvault.ui.graph_svg import layout

        moment = travelled(at)
        found = drawing = None
        if entity.strip():
            found = get_core().graph(entity, depth, conversation or None, scopes_of(request), moment)
            drawing = layout(found)
        return page("graph.html", **common(request, moment), title="Graph", entity=entity, depth=depth,
                    conversation=conversation, found=found, drawing=drawing)

    # -- core files and the daily log ---------------------------------------------------------------
    @router.get("/core/{name}")
    @view
    def core_file(request: Request, name: str, saved: str = "", at: str = ""):
        whole_vault(request)
        moment = travelled(at)
        rel, text = get_core().read_core(name, moment)
        return page("core.html", **common(request, moment), title=rel.name, rel=rel, name=rel.stem, text=text,
                    saved=saved)

    @router.get("/journal/{day}")
    @view
    def journal(request: Request, day: str, at: str = ""):
        whole_vault(request)
        moment = travelled(at)
        rel, text = get_core().journal(day, moment)
        return page("journal.html", **common(request, moment), title=f"Journal {day}", rel=rel, day=day, text=text)

    # -- edit (POST: same origin and the CSRF token) ------------------------------------------------
    @router.post("/m/{memory_id}/text")
    @view
    def edit_text(request: Request, memory_id: str, text: str = Form(""), csrf_token: str = Form("")):
        core, entry = written(request, csrf_token, memory_id)
        return moved(f"/m/{entry.id}", saved=saved(core.update(entry.id, text=text), entry))

    @router.post("/m/{memory_id}/file")
    @view
    def edit_file(request: Request, memory_id: str, content: str = Form(""), csrf_token: str = Form("")):
        from memvault.vault.markdown import parse

        core, entry = written(request, csrf_token, memory_id)
        try:  # validated as `memvault edit` validates the file a person saved
            replacement = core.require_scopes(parse(content, "the edited file"), scopes_of(request))
            updated = core.update(entry.id, replacement=replacement)
        except (EntryFormatError, UsageError) as exc:
            raise UsageError(f"{exc}; nothing changed") from None
        return moved(f"/m/{entry.id}", saved=saved(updated, entry))

    @router.post("/m/{memory_id}/delete")
    @view
    def delete(request: Request, memory_id: str, csrf_token: str = Form("")):
        core, entry = written(request, csrf_token, memory_id)
        core.delete([entry.id])
        return moved(f"/m/{entry.id}", saved="deleted")

    @router.post("/m/{memory_id}/restore")
    @view
    def restore(request: Request, memory_id: str, csrf_token: str = Form("")):
        core, entry = written(request, csrf_token, memory_id, live=False)
        core.restore(entry.id)
        return moved(f"/m/{entry.id}", saved="restored")

    @router.post("/m/{memory_id}/erase")
    @view
    def erase(request: Request, memory_id: str, confirm: str = Form(""), csrf_token: str = Form("")):
        # `Memvault.erase` removes the memory from every commit: irreversible, so the id is typed back first.
        core, entry = written(request, csrf_token, memory_id, live=False)
        if confirm.strip() != entry.id[:8]:
            raise UsageError(f"type the memory's short id ({entry.id[:8]}) to confirm erasing it")
        core.erase([entry.id], reason="erased from the web page")
        return moved("/memories", saved="erased")

    @router.post("/core/{name}")
    @view
    def save_core(request: Request, name: str, text: str = Form(""), csrf_token: str = Form("")):
        checked_write(request, csrf_token)
        whole_vault(request)
        rel, changed = get_core().update_core(name, text.replace("\r\n", "\n"))
        return moved(f"/core/{rel.stem}", saved="1" if changed else UNCHANGED)

    @router.post("/c/{conversation}/rules")
    @view
    def add_rule(request: Request, conversation: str, text: str = Form(""), csrf_token: str = Form("")):
        checked_write(request, csrf_token)
        core = get_core()
        conversation = core.conversation_named(conversation)
        core.add_rule(text, conversation, scopes_of(request))
        return moved(conversation_path(conversation))

    @router.post("/rules/{rule_id}/remove")
    @view
    def remove_rule(request: Request, rule_id: str, csrf_token: str = Form("")):
        core, entry = written(request, csrf_token, rule_id)
        core.remove_rule(entry.id)
        return moved(conversation_path(entry.conversation_id))

    return router
