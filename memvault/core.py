"""The library facade: one object that every surface (CLI, HTTP server, Python API) calls.

It opens what a call needs and nothing more: listing never loads a model, adding verbatim never
imports the LLM client. Writes go through the vault's transactions; the index follows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from memvault.errors import EntryFormatError, NotFoundError, UsageError
from memvault.settings import Settings
from memvault.vault import layout
from memvault.vault.entry import SCOPE_KEYS, Entry, now
from memvault.vault.gc import GcPlan, parse_age, plan_eviction, plan_purge
from memvault.vault.history import Event, memory_events
from memvault.vault.store import Change, Vault


@dataclass
class Listing:
    entries: list[tuple[PurePosixPath, Entry]] = field(default_factory=list)
    broken: list[EntryFormatError] = field(default_factory=list)


def clean_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise UsageError("the memory text is empty")
    if "\x00" in text:
        raise UsageError("the memory text contains a NUL character")
    return text


def check_scopes(scopes: dict[str, Any] | None) -> dict[str, str]:
    """Scope values as strings; unknown keys are refused so a typo never widens a search."""
    result: dict[str, str] = {}
    for key, value in (scopes or {}).items():
        if key not in SCOPE_KEYS:
            raise UsageError(f"unknown scope {key!r} (expected {', '.join(SCOPE_KEYS)})")
        if value is None or value == "":
            continue
        text = str(value)
        if len(text) > 200 or any(ord(c) < 32 for c in text):
            raise UsageError(f"invalid {key} {text[:40]!r}: at most 200 printable characters")
        result[key] = text
    return result


def matches(entry: Entry, conversation: str | None, role: str | None, scopes: dict[str, str]) -> bool:
    return ((conversation is None or entry.conversation_id == conversation)
            and (role is None or entry.role == role)
            and all(getattr(entry, key) == value for key, value in scopes.items()))


class Memvault:
    """A vault and what is derived from it, configured by one Settings object."""

    def __init__(self, settings: Settings, vault: Vault) -> None:
        self.settings = settings
        self.vault = vault

    @classmethod
    def open(cls, settings: Settings, create: bool = False) -> Memvault:
        path = settings.vault.path
        vault = Vault.init(path) if create else Vault.open(path)
        return cls(settings, vault)

    # -- writing -------------------------------------------------------------------------------
    def add_entries(self, entries: list[Entry], subject: str, operation: str = "add") -> list[Entry]:
        """Store new entries in one commit."""
        conversation = entries[0].conversation_id if entries else None
        with self.vault.transaction(operation, subject, conversation) as tx:
            for entry in entries:
                tx.write(entry, event="ADD")
        self.after_change(tx.changes)
        return entries

    def add_verbatim(self, text: str, conversation: str = "default", role: str = "memory",
                     scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> Entry:
        """Store the text as given, as one fact (or turn), in one commit."""
        text = clean_text(text)
        entry = Entry(text=text, role=role, conversation_id=layout.check_conversation(conversation),
                      metadata=dict(metadata or {}), **check_scopes(scopes))
        self.add_entries([entry], f"memvault add: {short(text)} [{entry.id[:8]}]")
        return entry

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
            updated = replacement.replace(text=clean_text(replacement.text), updated_at=now(),
                                          created_at=entry.created_at)
        else:
            updated = entry.replace(text=clean_text(text) if text is not None else entry.text,
                                    metadata={**entry.metadata, **(metadata or {})}, updated_at=now())
        with self.vault.transaction("update", f"memvault update: {short(updated.text)} [{entry.id[:8]}]",
                                    entry.conversation_id) as tx:
            tx.write(updated, event="UPDATE")
        self.after_change(tx.changes)
        return updated

    def delete(self, memory_ids: Iterable[str]) -> list[Entry]:
        """Soft-delete memories: each moves to deleted/ as a tombstone, all in one commit."""
        targets = [self.get_live(memory_id)[1] for memory_id in memory_ids]
        if not targets:
            return []
        subject = (f"memvault rm: {short(targets[0].text)} [{targets[0].id[:8]}]" if len(targets) == 1
                   else f"memvault rm: {len(targets)} memories")
        conversations = {t.conversation_id for t in targets}
        with self.vault.transaction("delete", subject, conversations.pop() if len(conversations) == 1 else None) as tx:
            for entry in targets:
                tx.soft_delete(entry)
        self.after_change(tx.changes)
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
                for entry in plan.evict:
                    tx.soft_delete(entry, event="EVICT")
                for rel, entry in plan.purge:
                    tx.purge(rel, entry.id)
            self.after_change(tx.changes)
        if git_gc:
            self.vault.git.repo.git.gc("--quiet")
        self.compact_index()
        return plan

    def compact_index(self) -> None:
        """Vacuum the index (hooked up with the index)."""

    def after_change(self, changes: list[Change]) -> None:
        """Keep derived state in step with a committed change (the index hooks in here)."""

    # -- reading -------------------------------------------------------------------------------
    def get(self, memory_id: str, include_deleted: bool = True) -> tuple[PurePosixPath, Entry]:
        return self.vault.resolve(memory_id, include_deleted=include_deleted)

    def get_live(self, memory_id: str) -> tuple[PurePosixPath, Entry]:
        rel, entry = self.vault.resolve(memory_id, include_deleted=True)
        if entry.deleted:
            raise NotFoundError(f"memory {entry.id[:8]} is deleted (see `memvault history {entry.id[:8]}`)")
        return rel, entry

    def list(self, conversation: str | None = None, role: str | None = None, scopes: dict[str, Any] | None = None,
             include_deleted: bool = False) -> Listing:
        scopes = check_scopes(scopes)
        listing = Listing()
        for rel, item in self.vault.iter_entries(include_deleted, conversation):
            if isinstance(item, EntryFormatError):
                listing.broken.append(item)
            elif matches(item, None, role, scopes):
                listing.entries.append((rel, item))
        listing.entries.sort(key=lambda pair: pair[1].created_at)
        return listing

    def history(self, memory_id: str) -> list[Event]:
        rel, entry = self.get(memory_id)
        return memory_events(self.vault.git, entry.id)

    def log(self, limit: int = 20) -> list:
        return self.vault.git.log(limit=limit)


def short(text: str, width: int = 50) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
