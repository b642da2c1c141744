"""The library facade: one object that every surface (CLI, HTTP server, Python API) calls.

It opens what a call needs and nothing more: listing never loads a model, adding verbatim never
imports the LLM client. Writes go through the vault's transactions; the index follows them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import EntryFormatError, MemvaultError, NotFoundError, UsageError
from memvault.index.keeper import IndexKeeper
from memvault.settings import RetrievalSettings, Settings
from memvault.vault import layout
from memvault.vault.entry import Entry, check_scopes, check_text, now
from memvault.vault.gc import GcPlan, parse_age, plan_eviction, plan_purge
from memvault.vault.history import Event, memory_events
from memvault.vault.store import Change, Vault

if TYPE_CHECKING:
    from memvault.curate.ingest import Placement


@dataclass
class AddResult:
    """What an add did: mem0-style events, and notes on anything that degraded."""

    events: list = field(default_factory=list)  # MemoryEvent
    notes: list[str] = field(default_factory=list)
    turn: Entry | None = None
    curated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"results": [e.to_dict() for e in self.events], "notes": self.notes,
                "turn_id": self.turn.id if self.turn else None, "curated": self.curated}


def as_messages(messages: str | dict | list) -> list[dict]:
    """mem0 accepts a string, one message, or a list of messages."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise UsageError("messages must be a string, a message {role, content}, or a list of messages")
    return [m for m in messages if str(m.get("content") or "").strip()]


@dataclass
class Listing:
    entries: list[tuple[PurePosixPath, Entry]] = field(default_factory=list)
    broken: list[EntryFormatError] = field(default_factory=list)


def clean_text(text: str, max_chars: int | None = None) -> str:
    text = (text or "").strip()
    if not text:
        raise UsageError("the memory text is empty")
    if "\x00" in text:
        raise UsageError("the memory text contains a NUL character")
    return check_text(text, max_chars=max_chars)  # no lone surrogates, at most limits.max_text_chars


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


def matches(entry: Entry, conversation: str | None, role: str | None, scopes: dict[str, str]) -> bool:
    return ((conversation is None or entry.conversation_id == conversation)
            and (role is None or entry.role == role)
            and all(getattr(entry, key) == value for key, value in scopes.items()))


class Memvault:
    """A vault and what is derived from it, configured by one Settings object."""

    def __init__(self, settings: Settings, vault: Vault) -> None:
        self.settings = settings
        self.vault = vault
        self.keeper = IndexKeeper(vault, self.embedder)
        vault.on_recovered = self.keeper.journal_paths  # files a crashed write left and recovery put back

    def close(self) -> None:
        self.keeper.close()

    # -- models and index (loaded on first need) ----------------------------------------------------
    def embedder(self):
        from memvault.models.embedders import load_embedder

        embedder = self.settings.embedder
        return load_embedder(embedder.model, embedder.batch_size, embedder.api_base)

    def reranker(self):
        from memvault.models.reranker import load_reranker

        return load_reranker(self.settings.retrieval.reranker)

    @property
    def on_progress(self):
        """callable(done, total) shown during long syncs (the CLI sets it)."""
        return self.keeper.on_progress

    @on_progress.setter
    def on_progress(self, callback) -> None:
        self.keeper.on_progress = callback

    @property
    def on_notice(self):
        """callable(message) for things a person should know (index rebuilt...)."""
        return self.keeper.on_notice

    @on_notice.setter
    def on_notice(self, callback) -> None:
        self.keeper.on_notice = callback

    def open_index(self):
        """The index file, opened (created or repaired if need be) but not yet caught up."""
        return self.keeper.open()

    def index(self):
        """The index, caught up with every write (see memvault.index.keeper)."""
        return self.keeper.current()

    def reindex(self, full: bool = False, wait: float | None = None):
        """Bring the index in step with the files, embedding only what changed (`full`: everything).
        `wait`: how long to wait for the vault's lock (LockBusyError after it; default: the usual)."""
        return self.keeper.reindex(full, wait)

    def resync_paths(self, paths: Collection[PurePosixPath], skip: Collection[str] = ()) -> None:
        """Catch the index up with these files after they changed on disk (a watcher's report);
        `skip`: paths whose indexing is under way elsewhere (turns written and not yet committed)."""
        self.keeper.resync(paths, skip)

    def watch(self, on_change: Callable[[frozenset[PurePosixPath]], None], stop_event=None, ready=None) -> None:
        """Call `on_change(paths)` after each burst of file changes in the vault, until `stop_event`."""
        from memvault.index.watch import watch

        watch(self.vault, on_change, stop_event=stop_event, ready=ready)

    def index_summary(self) -> dict[str, Any]:
        """The model the index was built with, and how many entries are searchable."""
        with self.keeper.caught_up() as index:
            return {"embedder": index.identity, "size": index.count()}

    def has_facts_from(self, turn_id: str) -> bool:
        """True when the index holds a fact taken from this turn (its curation was committed)."""
        with self.keeper.caught_up() as index:
            return index.count("e.role = 'memory' AND e.source = ?", (turn_id,)) > 0

    @classmethod
    def open(cls, settings: Settings, create: bool = False, use_enclosing_repo: bool = False) -> Memvault:
        path = settings.vault.path
        vault = Vault.init(path, use_enclosing_repo) if create else Vault.open(path)
        vault.max_file_bytes = settings.limits.max_file_bytes
        return cls(settings, vault)

    # -- writing -------------------------------------------------------------------------------
    def add_entries(self, entries: list[Entry], subject: str, operation: str = "add") -> list[Entry]:
        """Store new entries in one commit."""
        conversation = entries[0].conversation_id if entries else None
        with self.vault.transaction(operation, subject, conversation) as tx:
            for entry in entries:
                tx.write(entry, event="ADD")
        self.keeper.record(tx.changes)
        return entries

    def write_turns(self, entries: list[Entry]) -> list[Change]:
        """Write chat turns' files now, durable but not committed: a client need not wait for git.
        `commit_turns` commits them later (many requests' turns in one commit); should the process
        stop before that, `commit_leftover_turns` at the next start does."""
        return self.vault.write_new(entries)

    def commit_turns(self, written: list[Change], subject: str, conversation: str | None = None) -> None:
        """Commit turn files `write_turns` wrote (any number of batches at once), then index them."""
        self.keeper.record(self.vault.commit_written(written, subject, "chat", conversation))

    def commit_leftover_turns(self) -> int:
        """Commit turn files a hard stop left written but uncommitted (untracked, or staged new);
        returns how many. Temporary files of atomic writes are never turns: old ones are removed."""
        self.vault.remove_temp_files()
        written = []
        for code, path in self.vault.git.status():
            rel = PurePosixPath(path)
            if code != "??" and code[0] != "A":
                continue  # tracked already: a person's edit or removal is theirs to commit
            if not layout.is_entry_path(rel) or "turns" not in rel.parts or layout.is_deleted_path(rel):
                continue
            try:
                written.append(Change(rel, None, self.vault.read(rel)))
            except MemvaultError:
                continue  # not a readable entry: doctor reports it, we leave it alone
        if written:
            self.commit_turns(written, f"memvault serve: {len(written)} turn file(s) written before a stop, "
                              "committed now")
        return len(written)

    def add_verbatim(self, text: str, conversation: str = "default", role: str = "memory",
                     scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> Entry:
        """Store the text as given, as one fact (or turn), in one commit."""
        text = self.clean_text(text)
        entry = Entry(text=text, role=role, conversation_id=layout.check_conversation(conversation),
                      metadata=dict(metadata or {}), **check_scopes(scopes))
        self.add_entries([entry], f"memvault add: {short(text)} [{entry.id[:8]}]")
        return entry

    def clean_text(self, text: str) -> str:
        return clean_text(text, self.settings.limits.max_text_chars)

    def llm(self):
        """The configured LLM client, or None when no model is configured."""
        if not self.settings.llm.model:
            return None
        from memvault.curate.llm import LLMClient

        return LLMClient(self.settings.llm)

    def add(self, messages: str | dict | list, conversation: str | None = None,
            scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
            prompt: str | None = None, llm=None, turn: Entry | None = None) -> AddResult:
        """Remember what the user said: with an LLM, extract and reconcile facts (one commit with the
        user turn, the facts, tombstones and the rolling summary); without one, store it as given.

        `turn`: the user turn is already stored (chat persists turns first); it becomes the source."""
        from memvault.curate.ingest import MemoryEvent, Placement

        scopes = check_scopes(scopes)
        conversation = layout.check_conversation(conversation or layout.scope_conversation(
            scopes.get("user_id"), scopes.get("agent_id"), scopes.get("run_id")))
        chat = as_messages(messages)
        if not chat:
            raise UsageError("the memory text is empty")
        llm = llm or (self.llm() if infer else None)
        if llm is None:
            entries = [Entry(text=self.clean_text(str(m["content"])), conversation_id=conversation,
                             metadata={**(metadata or {}), **({"role": m["role"]} if len(chat) > 1 else {})},
                             **scopes) for m in chat]
            subject = (f"memvault add: {short(entries[0].text)} [{entries[0].id[:8]}]" if len(entries) == 1
                       else f"memvault add: {len(entries)} memories")
            self.add_entries(entries, subject)
            notes = [] if not infer else ["no LLM configured (set llm.model): stored the text as given"]
            return AddResult([MemoryEvent("ADD", e.id, None, e.text) for e in entries], notes)
        return self._curated_add(llm, chat, Placement(conversation, scopes, dict(metadata or {})), prompt, turn)

    def _curated_add(self, llm, chat: list[dict], place: Placement, prompt: str | None,
                     turn: Entry | None) -> AddResult:
        from memvault.curate.extract import last_user_text
        from memvault.curate.ingest import StoredFacts, apply_curation, plan_curation

        conversation = place.conversation
        latest = last_user_text(chat)
        if turn is None and latest.strip():
            turn = Entry(text=self.clean_text(latest), role="user", conversation_id=conversation, **place.scopes)

        def neighbours_of(fact: str) -> list[tuple[str, str]]:
            hits = self.search(fact, conversation, place.scopes, {"role": "memory"}, top_k=5, score_threshold=0.0,
                               recency_weight=0.0, mmr_lambda=1.0, include_global=False)
            return [(h.id, h.text) for h in hits]

        previous = self.vault.summary(conversation)
        curation = plan_curation(llm, chat, conversation, StoredFacts(neighbours_of),
                                 previous.text if previous else None, prompt)
        learned = sum(1 for d in curation.plan.decisions if d.event != "NONE")
        subject = f"memvault add: {learned} change(s) from \"{short(latest, 40)}\""
        with self.vault.transaction("add", subject, conversation) as tx:
            if turn is not None and self.vault.path_of(turn.id) is None:
                tx.write(turn, event="TURN")
            source = turn.id if turn else None
            events = apply_curation(tx, curation, dataclasses.replace(place, source=source), self.live_entry, previous)
        self.keeper.record(tx.changes)
        return AddResult(events, curation.notes, turn, curated=True)

    def live_entry(self, memory_id: str) -> Entry | None:
        rel = self.vault.path_of(memory_id)
        if rel is None or layout.is_deleted_path(rel):
            return None
        try:
            return self.vault.read(rel)
        except EntryFormatError:
            return None

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               replacement: Entry | None = None) -> Entry:
        """Rewrite a live memory in place (same id): git keeps the old text."""
        _, entry = self.get_live(memory_id)
        if replacement is not None:
            if replacement.id != entry.id:
                raise UsageError(f"the id of a memory cannot be changed (was {entry.id}, now {replacement.id})")
            if replacement.conversation_id != entry.conversation_id:
                raise UsageError("a memory cannot be moved to another conversation by editing it")
            if replacement.role != entry.role:
                raise UsageError("the role of a memory cannot be changed by editing it")
            updated = replacement.replace(text=self.clean_text(replacement.text), updated_at=now(),
                                          created_at=entry.created_at)
        else:
            updated = entry.replace(text=self.clean_text(text) if text is not None else entry.text,
                                    metadata={**entry.metadata, **(metadata or {})}, updated_at=now())
        with self.vault.transaction("update", f"memvault update: {short(updated.text)} [{entry.id[:8]}]",
                                    entry.conversation_id) as tx:
            tx.write(updated, event="UPDATE")
        self.keeper.record(tx.changes)
        return updated

    def delete(self, memory_ids: Iterable[str]) -> list[Entry]:
        """Soft-delete memories: each moves to deleted/ as a tombstone, all in one commit."""
        found = (self.get_live(memory_id)[1] for memory_id in memory_ids)
        targets = list({entry.id: entry for entry in found}.values())  # an id named twice is deleted once
        if not targets:
            return []
        subject = (f"memvault rm: {short(targets[0].text)} [{targets[0].id[:8]}]" if len(targets) == 1
                   else f"memvault rm: {len(targets)} memories")
        conversations = {t.conversation_id for t in targets}
        with self.vault.transaction("delete", subject, conversations.pop() if len(conversations) == 1 else None) as tx:
            for entry in targets:
                tx.soft_delete(entry)
        self.keeper.record(tx.changes)
        return targets

    def gc(self, max_entries: int | None = None, purge_older_than: str | None = None, dry_run: bool = False,
           git_gc: bool = True) -> GcPlan:
        """Evict the oldest facts and turns above the limit (soft), purge old tombstones, compact git."""
        limit = max_entries or self.settings.vault.max_entries
        live, tombstones = [], []
        for rel, item in self.vault.iter_entries(include_deleted=True):
            if isinstance(item, Entry):
                (tombstones if item.deleted else live).append((rel, item))
        plan = GcPlan(evict=plan_eviction([e for _, e in live], limit))
        if purge_older_than:
            plan.purge = plan_purge(tombstones, parse_age(purge_older_than), now())
        if dry_run:
            return plan
        if plan.evict or plan.purge:
            subject = f"memvault gc: evicted {len(plan.evict)}, purged {len(plan.purge)}"
            with self.vault.transaction("gc", subject) as tx:
                # Planned before the lock: another writer may have deleted or purged some since.
                plan.evict = [entry for entry in plan.evict if self.vault.is_live(entry.id)]
                plan.purge = [(rel, entry) for rel, entry in plan.purge if (self.vault.root / rel).is_file()]
                for entry in plan.evict:
                    tx.soft_delete(entry, event="EVICT")
                for rel, entry in plan.purge:
                    tx.purge(rel, entry.id)
            self.keeper.record(tx.changes)
        if git_gc:
            self.vault.git.repo.git.gc("--quiet")
        self.keeper.compact()
        return plan

    def search(self, query: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
               filters: dict | None = None, include_global: bool = True, as_of: str | None = None,
               **overrides: Any) -> list:
        """The retrieval pipeline (docs/architecture.md, Retrieval) over `conversation` and `global`
        (all conversations when None); `overrides` replace retrieval settings for this call (see
        RetrievalOverrides). `as_of` (a date, time or commit) searches the vault as it was then."""
        from memvault.retrieve.search import conversations_for, embed_query, search

        if conversation is not None:
            layout.check_conversation(conversation)
        retrieval = RetrievalOverrides.of(overrides).applied_to(self.settings.retrieval)
        scopes = check_scopes(scopes)
        conversations = conversations_for(conversation) if include_global or conversation is None else [conversation]
        # The model runs outside the index lock: it is most of a search's time, and threads can share it.
        query_vector = embed_query(self.embedder(), query) if isinstance(query, str) and query.strip() else None
        if as_of is not None:  # the past's own cached index (memvault.index.past); today's is not opened
            from memvault.index.past import past_index
            from memvault.vault.timetravel import resolve

            past = resolve(self.vault.git, as_of)
            with past_index(self.vault, self.embedder(), past) as index:
                return search(index, self.embedder(), self.reranker(), query, retrieval, conversations, scopes,
                              filters, now=past.moment, query_vector=query_vector)
        with self.keeper.caught_up() as index:
            return search(index, self.embedder(), self.reranker(), query, retrieval, conversations, scopes, filters,
                          query_vector=query_vector)

    # -- reading -------------------------------------------------------------------------------
    def get(self, memory_id: str, include_deleted: bool = True) -> tuple[PurePosixPath, Entry]:
        return self.vault.resolve(memory_id, include_deleted=include_deleted)

    def get_live(self, memory_id: str) -> tuple[PurePosixPath, Entry]:
        rel, entry = self.vault.resolve(memory_id, include_deleted=True)
        if entry.deleted:
            raise NotFoundError(f"memory {entry.id[:8]} is deleted (see `memvault history {entry.id[:8]}`)")
        return rel, entry

    def list(self, conversation: str | None = None, role: str | None = None, scopes: dict[str, Any] | None = None,
             include_deleted: bool = False, limit: int = 0) -> Listing:
        """Entries oldest first; `limit` > 0: only the newest `limit`, reading as few files as it can
        (files that fail to parse are then reported only among those read)."""
        scopes = check_scopes(scopes)
        if limit > 0:
            return self._newest(conversation, role, scopes, include_deleted, limit)
        listing = Listing()
        for rel, item in self.vault.iter_entries(include_deleted, conversation):
            if isinstance(item, EntryFormatError):
                listing.broken.append(item)
            elif matches(item, None, role, scopes):
                listing.entries.append((rel, item))
        listing.entries.sort(key=lambda pair: pair[1].created_at)
        return listing

    def _newest(self, conversation, role, scopes, include_deleted, limit) -> Listing:
        import heapq

        listing = Listing()
        newest: list[float] = []  # a min-heap of the `limit` newest creation times found so far
        for rel, created in self.vault.newest_entry_files(include_deleted, conversation):
            if created is not None and len(newest) >= limit and created + 0.001 <= newest[0]:
                break  # every file left was created before the ones found (names are to the millisecond)
            try:
                entry = self.vault.read(rel)
            except EntryFormatError as exc:
                listing.broken.append(exc)
                continue
            if matches(entry, None, role, scopes):
                listing.entries.append((rel, entry))
                heapq.heappush(newest, entry.created_at.timestamp())
                if len(newest) > limit:
                    heapq.heappop(newest)
        listing.entries.sort(key=lambda pair: pair[1].created_at)
        listing.entries = listing.entries[-limit:]
        return listing

    def history(self, memory_id: str) -> list[Event]:
        rel, entry = self.get(memory_id)
        return memory_events(self.vault.git, entry.id)

    def push(self, remote: str | None = None) -> str:
        with self.vault.lock():
            return self.vault.git.push(remote or self.settings.vault.git_remote or None)

    def pull(self, remote: str | None = None):
        """Pull others' commits, then bring the index in step with the files that arrived."""
        from memvault.vault.git import PullClash

        try:
            with self.vault.lock():
                self.vault.git.pull(remote or self.settings.vault.git_remote or None)
        except PullClash:
            self.reindex()  # what arrived is in the files: the index follows them, then the error is told
            raise
        return self.reindex()

    def log(self, limit: int = 20) -> list:
        return self.vault.git.log(limit=limit)

    # -- listing by filter and reset (for the mem0-style Python API, memvault.api) -------------------
    def select(self, scopes: dict[str, Any] | None = None, filters: dict | None = None, role: str | None = "memory",
               limit: int | None = None) -> list[dict[str, Any]]:
        """Index rows of live entries whose given scopes all match and that pass a mem0 filter
        expression, newest first; nothing is embedded. Summaries are never listed (as in search)."""
        from memvault.retrieve.filters import and_where, compile_filter, scope_where

        where, params = and_where(scope_where(None, check_scopes(scopes)), compile_filter(filters),
                                  ("e.role = ?", [role]) if role else ("1", []))
        with self.keeper.caught_up() as index:
            return index.select(where, params, limit)

    def reset(self) -> int:
        """Soft-delete every live entry (facts, turns, summaries) in one commit, then rebuild the index
        from the files. Files with broken front matter are left alone. Returns how many were deleted."""
        with self.vault.transaction("reset", "memvault reset: soft-deleted every entry") as tx:
            # Listed under the vault lock, so an entry another process writes meanwhile is included.
            for entry in [item for _, item in self.vault.iter_entries() if isinstance(item, Entry)]:
                tx.soft_delete(entry)
        self.keeper.record(tx.changes)
        self.reindex(full=True)
        return len(tx.events)


def short(text: str, width: int = 50) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
