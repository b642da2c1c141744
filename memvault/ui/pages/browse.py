"""Browsing: the overview, the list of memories, a conversation, one memory with its history."""

from __future__ import annotations

import functools

from fastapi import APIRouter, Request

from memvault.errors import NotFoundError
from memvault.ui.pages.door import Door, key_scopes
from memvault.ui.render import page, paging
from memvault.ui.views import diff_words, entry_row, provenance

ROLES = ("memory", "user", "assistant", "session", "rule", "summary", "core", "journal")


def add_routes(router: APIRouter, door: Door) -> None:
    @router.get("/")
    @door.view
    def overview(request: Request, at: str = ""):
        from memvault.shapes import layout

        core, moment = door.core(), door.travelled(at)
        scoped = bool(key_scopes(request))
        return page("overview.html", **door.common(request, moment), title="Overview",
                    data=core.overview(key_scopes(request), moment),
                    core_names=() if scoped else layout.CORE_NAMES,
                    days=[] if scoped else core.journal_days(14, moment))

    @router.get("/memories")
    @door.view
    def memories(request: Request, conversation: str = "", role: str = "memory", offset: int = 0,
                 limit: int = 0, at: str = ""):
        core, moment = door.core(), door.travelled(at)
        offset, limit = paging(offset, limit)
        role = role if role in ROLES else None
        if moment:  # the past's files, only the page's read (no past index to build for a list)
            found, _ = core.entries_as_of(moment, conversation or None, role, key_scopes(request), offset, limit)
        else:
            found = core.rows_page(conversation or None, role, key_scopes(request), offset, limit)
        rows = [entry_row(item) for item in found.items]
        return page("memories.html", **door.common(request, moment), title="Memories", rows=rows, found=found,
                    conversation=conversation, role=role or "", roles=ROLES)

    @router.get("/c/{conversation}")
    @door.view
    def conversation_page(request: Request, conversation: str, offset: int = 0, limit: int = 0, at: str = ""):
        core, moment = door.core(), door.travelled(at)
        conversation = core.conversation_named(conversation)
        scopes = key_scopes(request)
        offset, limit = paging(offset, limit)
        listed = functools.partial(core.rows_page, conversation, scopes=scopes, offset=0, as_of=moment)
        with core.index_as_of(moment, ranking=False):  # the past's rows read once for the page's three reads
            timeline = core.timeline(conversation, scopes, offset, limit, moment)
            sessions, rules = listed(role="session", limit=20), listed(role="rule", limit=100)
        return page("conversation.html", **door.common(request, moment), title=conversation,
                    conversation=conversation, timeline=timeline, rows=[entry_row(i) for i in timeline.items],
                    summary=None if scopes else core.summary(conversation, moment),
                    sessions=[entry_row(r) for r in sessions.items], rules=[entry_row(r) for r in rules.items])

    @router.get("/m/{memory_id}")
    @door.view
    def memory(request: Request, memory_id: str, at: str = "", saved: str = ""):
        core, moment = door.core(), door.travelled(at)
        if moment:
            rel, entry, content, _ = core.entry_as_of(memory_id, moment)
        else:
            rel, entry, content = core.entry_file(memory_id)
        core.require_scopes(entry, key_scopes(request))
        try:
            events = core.history(entry.id, moment)  # as of a past moment: its history up to then
        except NotFoundError:  # purged since the moment shown: its past file is all there is
            events = []
        return page("memory.html", **door.common(request, moment), title=f"Memory {entry.id[:8]}", entry=entry,
                    rel=rel, content=content, saved=saved, events=events,
                    diffs=[diff_words(e.old_memory, e.new_memory) for e in events],
                    provenance=provenance(entry, events))
