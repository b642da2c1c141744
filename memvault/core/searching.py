"""Searching: the retrieval pipeline over the index, and listing index rows by filter."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memvault.core.caller import walls
from memvault.errors import UsageError
from memvault.settings import RetrievalSettings
from memvault.vault.format import layout
from memvault.vault.format.entry import SCOPE_KEYS

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.vault.git.timetravel import PastCommit


@dataclass(frozen=True)
class RetrievalOverrides:
    """Retrieval settings replaced for one search (a value of None keeps the configured one).
    Built by `of`, which refuses a name that is not a retrieval setting (a typo would otherwise
    be silently ignored or surface as a TypeError) and a number that is not finite."""

    values: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, overrides: dict[str, Any] | None) -> RetrievalOverrides:
        import math

        known = [f.name for f in dataclasses.fields(RetrievalSettings)]
        for name, value in (overrides or {}).items():
            if name not in known:
                raise UsageError(f"unknown retrieval setting {name!r} (expected one of {', '.join(known)})")
            if isinstance(value, float) and not math.isfinite(value):  # nan passes every range check
                raise UsageError(f"{name} must be a finite number, got {value!r}")
        return cls({name: value for name, value in (overrides or {}).items() if value is not None})

    def applied_to(self, retrieval: RetrievalSettings) -> RetrievalSettings:
        return dataclasses.replace(retrieval, **self.values)


HELD = threading.local()  # the past index a thread has open (index_as_of)


class Searching:
    """Queries over the index (caught up with every write first)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper

    def resolve_as_of(self, as_of: str | PastCommit | None) -> PastCommit | None:
        """The commit a date, time or commit name stands for (None stays None): resolved once, a
        search and its relations read the same past."""
        from memvault.vault.git.timetravel import PastCommit, resolve

        return as_of if as_of is None or isinstance(as_of, PastCommit) else resolve(self.vault.git, as_of)

    @contextmanager
    def index_as_of(self, as_of: str | PastCommit | None, ranking: bool = True) -> Iterator[tuple[Any, Any]]:
        """(index, the moment it stands for): today's, caught up with every write (moment None: now),
        or for `as_of` a past's view (memvault.index.past_view: today's index read as it stands, never
        caught up nor written, with what changed since hidden and the commit's versions beside it), or
        where it cannot serve the past's own cached index (memvault.index.past).
        Without `ranking` (reads that list, count or walk the graph) the past is only its rows
        (memvault.index.past_rows): no vectors to embed, a first visit costs a git diff, not a build.
        Nested in this thread, the past opened outside is used again when it serves (a page of several
        reads of one past opens it once)."""
        past = self.resolve_as_of(as_of)
        if past is None:
            with self.keeper.caught_up() as index:
                yield index, None
            return
        outer = getattr(HELD, "past", None)
        if outer is not None and outer[0] == (id(self), past.sha) and (outer[2] or not ranking):
            yield outer[1], past.moment
            return
        if ranking:
            from memvault.index.past import past_index
            from memvault.index.past_view import past_view

            embedder = self.storage.embedder()
            # Today's index with what changed since hidden, else (no usable index today, or most of it
            # changed since) the past's own index, built once.
            opened = past_view(self.vault, embedder, past) or past_index(self.vault, embedder, past)
            held = opened  # closed when the block ends
        else:
            from memvault.index.past_rows import past_rows

            opened = past_rows(self.vault, past)
            held = opened.lock  # kept for the next page: only this thread reads it meanwhile
        with held:
            HELD.past = ((id(self), past.sha), opened, ranking)
            try:
                yield opened, past.moment
            finally:
                HELD.past = outer

    @contextmanager
    def holding_past(self, as_of: PastCommit | None) -> Iterator[None]:
        """Keep the past `as_of` stands for open while the block runs (nothing for today): a search and
        the relations beside it read one past, opened once (`index_as_of` nests)."""
        if as_of is None:
            yield
            return
        with self.index_as_of(as_of):
            yield

    def search(self, query: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
               filters: dict | None = None, include_global: bool = True, as_of: str | PastCommit | None = None,
               show_expired: bool = False, follow_owner: bool = False, **overrides: Any) -> list:
        """The retrieval pipeline (docs/architecture.md, Retrieval) over `conversation` and `global`
        (all conversations when None); `overrides` replace retrieval settings for this call (see
        RetrievalOverrides). `as_of` (a date, time or commit) searches the vault as it was then.
        Memories past their expiration_date are left out unless `show_expired`, on every door.
        `follow_owner` (a prompt's search): with `retrieval.follow_user`, the facts of the owner's other
        conversations too (owner_reach)."""
        from memvault.retrieve.filters import unexpired
        from memvault.retrieve.search import conversations_for, embed_query, search

        if conversation is not None:
            conversation = layout.check_conversation_id(conversation)
        retrieval = RetrievalOverrides.of(overrides).applied_to(self.settings.retrieval)
        scopes = walls(scopes)
        conversations = conversations_for(conversation) if include_global or conversation is None else [conversation]
        owner = owner_reach(retrieval, scopes) if follow_owner else None
        # The model runs outside the index lock: it is most of a search's time, and threads can share it.
        query_vector = embed_query(self.storage.embedder(), query) if isinstance(query, str) and query.strip() else None
        with self.index_as_of(as_of) as (index, moment):
            return search(index, self.storage.embedder(), self.storage.reranker(), query, retrieval, conversations,
                          scopes, unexpired(filters, show_expired), now=moment, query_vector=query_vector, owner=owner)

    def select(self, scopes: dict[str, Any] | None = None, filters: dict | None = None, role: str | None = "memory",
               limit: int | None = None, show_expired: bool = False) -> list[dict[str, Any]]:
        """Index rows of live entries whose given scopes all match and that pass a mem0 filter
        expression, newest first; nothing is embedded. Summaries are never listed (as in search),
        nor memories past their expiration_date unless `show_expired`."""
        from memvault.retrieve.filters import and_where, compile_filter, scope_where, unexpired

        where, params = and_where(scope_where(None, walls(scopes)),
                                  compile_filter(unexpired(filters, show_expired)),
                                  ("e.role = ?", [role]) if role else ("1", []))
        with self.keeper.caught_up() as index:
            return index.select(where, params, limit)

    def entities(self, within: dict[str, tuple[str, ...]] | None = None) -> list[dict[str, Any]]:
        """The users, agents and runs that own live memories (mem0's entities), most memories first:
        per kind ("user", "agent", "run") and id, how many memories, and the first and last time one
        was written (epoch seconds). `within` (scope -> the ids allowed, a scoped key's walls): only
        memories whose scopes lie inside them count."""
        parts, params = ["e.role = 'memory'"], []
        for name, ids in (within or {}).items():
            if name not in SCOPE_KEYS:
                raise UsageError(f"unknown scope {name!r}")
            parts.append(f"e.{name} IN ({', '.join('?' * len(ids))})" if ids else "0")
            params.extend(ids)
        where = " AND ".join(parts)
        found = []
        with self.keeper.caught_up() as index:
            for name in SCOPE_KEYS:
                rows = index.conn.execute(
                    f"SELECT e.{name}, count(*), min(e.created_at), max(max(e.created_at, e.updated_at)) "
                    f"FROM entries e WHERE {where} AND e.{name} IS NOT NULL GROUP BY e.{name}", params).fetchall()
                found += [{"type": name.removesuffix("_id"), "id": value, "total_memories": count,
                           "created_at": first, "updated_at": last} for value, count, first, last in rows]
        return sorted(found, key=lambda item: (-item["total_memories"], item["type"], item["id"]))


def owner_reach(retrieval: RetrievalSettings, scopes: dict[str, str]):
    """What a prompt's search reaches beyond its conversation (retrieve.search.OwnerReach): the facts,
    and with `follow_user_turns` the user turns, of every conversation of the same owner; None when
    `follow_user` is off."""
    from memvault.retrieve.search import OwnerReach

    if not retrieval.follow_user:
        return None
    roles = ("memory", "user") if retrieval.follow_user_turns else ("memory",)
    return OwnerReach(walls(scopes, person=True), roles)
