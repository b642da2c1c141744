"""Memory: mem0's Python API over a memvault vault (markdown files + git, a derived SQLite index).

    from memvault import Memory
    m = Memory({"vault": {"path": "~/notes/memory"}, "llm": {"model": "ollama/qwen3:4b"}})
    m.add("I'm vegetarian and allergic to nuts", user_id="alice")
    m.search("what can I cook for alice?", user_id="alice", limit=5)["results"]

Both API generations work: mem0 2.x's `search(q, filters={"user_id": ...}, top_k=...)` and 1.x's
`search(q, user_id=..., limit=...)`; where they disagree 2.x wins (docs/python-api.md, "Coming from mem0").
Differences from mem0 worth knowing:
- An LLM UPDATE rewrites the memory in place (same id, as mem0 1.x); an exact duplicate is a NONE event.
- Deletes are soft: files move to `deleted/`, and git keeps every version (history survives `reset`).
- When the LLM fails, the message is stored as given (mem0 2.x raises LLMError): nothing is lost.
- A secret or a request to skip safety is a DROP event with its reason, never stored, on every add.
- A curated add also stores the user's message as a turn and refreshes the conversation summary;
  turns and summaries are not memories here (search, get_all, get never return them), but
  `delete_all` and `reset` remove them too, so nothing of a deleted scope is left in use.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path
from typing import Any

from memvault import errors
from memvault.api.arguments import (
    ADD_SCOPE_REQUIRED,
    DELETE_ALL_SCOPE_REQUIRED,
    DELETE_NOT_FOUND,
    PROCEDURAL,
    UPDATE_NOT_FOUND,
    check_query,
    check_threshold,
    expiration,
    given_scopes,
    memories_matching,
    pick_top_k,
    required_scopes,
    scoped,
    without_identity,
)
from memvault.api.config import build_settings
from memvault.api.errors import NotFoundError, ValidationError, translated
from memvault.api.shapes import event_dict, history_record, item_from_entry, item_from_hit, item_from_row
from memvault.core import Memvault
from memvault.core.caller import Caller
from memvault.settings import MEMORY_MODES, Settings
from memvault.shapes import Entry, layout

UNSET = object()  # update(): expiration_date not given (None clears it)


def serialised(method):
    """One call at a time per instance (the index and the vault's caches are not shared across
    threads), with memvault errors raised as API errors."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock, translated():
            return method(self, *args, **kwargs)

    return wrapper


class Memory:
    """mem0's `Memory` over a memvault vault.

    `config`: a mem0-like dict (see memvault.api.config); `vault`: the vault folder (created if
    missing); `settings`: a ready Settings object to start from instead of defaults < config file <
    environment; `llm`: an object with memvault's LLM protocol used instead of `llm.model` (tests);
    `mode="incognito"` (alias "guest"): the same memory over a temporary vault of its own
    (memvault.core.temporary): stored memories are not read, nothing is written to the vault, and
    what it learns is gone at close() or exit.
    """

    def __init__(self, config: dict | None = None, *, vault: str | Path | None = None,
                 settings: Settings | None = None, llm: Any = None, mode: str = "normal") -> None:
        with translated():
            incognito = is_incognito(mode)
            self.settings, self._prompt = build_settings(config, vault, settings)
            if incognito:
                from memvault.core.temporary import TemporaryMemvault

                self._core = TemporaryMemvault.create(self.settings)
            else:
                self._core = Memvault.open(self.settings, create=True)
        self.mode = "incognito" if incognito else "normal"
        self._llm = llm
        self._lock = threading.RLock()
        self._synced = False
        self._index_failure: str | None = None
        self._core.on_notice = self._noticed

    def _noticed(self, message: str) -> None:
        if message.startswith("embedding failed"):
            self._index_failure = message

    @classmethod
    def from_config(cls, config_dict: dict) -> Memory:
        return cls(config_dict)

    @property
    def vault_path(self) -> Path:
        return self._core.root

    @property
    def core(self) -> Memvault:
        """The Memvault under this Memory, for a server that serves both APIs over one index and lock."""
        return self._core

    def close(self) -> None:
        with self._lock:
            self._core.close()
            self._synced = False

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------
    @serialised
    def add(self, messages: str | dict | list, user_id: Any = None, agent_id: Any = None, run_id: Any = None,
            metadata: dict | None = None, filters: dict | None = None, prompt: str | None = None,
            infer: bool = True, *, expiration_date: Any = None, memory_type: str | None = None,
            timestamp: Any = None, policy: bool = False) -> dict[str, Any]:
        """Remember what the user said. With an LLM (and `infer`), facts are extracted from the latest
        user message and reconciled with the scope's memories; without one, or with `infer=False`,
        each message is stored as given (system messages skipped; a message's `name` kept as
        `actor_id`). Returns {"results": [{id, memory, event, ...}]}: ADD, UPDATE (same id, in place),
        DELETE and NONE (an exact duplicate) events, and "notes" when something degraded (the LLM
        failed and the text was stored as given; the embedder failed and indexing waits).

        `metadata={"created_at": ...}` dates the new memories; identity keys (user_id, agent_id,
        run_id, actor_id) in metadata are ignored, as in mem0. `expiration_date` (YYYY-MM-DD) hides
        the memories from search and get_all after that day. `memory_type`: only mem0's
        "procedural_memory" (stored as given, with its type). `filters` is accepted for mem0 1.x's
        signature: reconciliation always looks at the memories of exactly these scopes. `policy=True`
        (memvault's own): the write policy of chat turns decides (memvault.core.sessions): facts may be
        held until the session ends or dropped, and HOLD / DROP events say so."""
        if timestamp is not None:
            raise ValidationError("timestamp is a mem0 Platform parameter: use metadata={'created_at': ...}")
        scopes = required_scopes(user_id, agent_id, run_id, message=ADD_SCOPE_REQUIRED)
        if memory_type is not None and memory_type != PROCEDURAL:
            raise ValidationError(f"Invalid 'memory_type'. Please pass {PROCEDURAL} to create procedural memories.")
        fields = {"expiration_date": expiration(expiration_date), "memory_type": memory_type}
        if isinstance(messages, str):
            messages = {"role": "user", "content": messages}  # mem0: a text is the user's message (role kept)
        metadata = without_identity(metadata, "add()")
        self._sync_once()
        options = {"scopes": scopes, "metadata": metadata, "fields": fields, "llm": self._llm if infer else None,
                   "prompt": self._extraction_prompt(prompt) if infer else None}
        if policy:
            result = self._core.policy_add(messages, **options)
        else:  # mem0: facts come from every user message given
            result = self._core.add(messages, infer=infer, whole=True, **options)
        return self._added(result)

    def _added(self, result) -> dict[str, Any]:
        """mem0's answer to an add: a memory stored as given as mem0 2.x lists it, any other event
        (curated, HOLD, DROP) in memvault's event shape; notes when something degraded."""
        stored = {entry.id: entry for entry in result.stored}
        out: dict[str, Any] = {"results": [
            {"id": e.id, "memory": e.text, "event": "ADD", "actor_id": e.actor_id, "role": e.metadata.get("role")}
            if (e := stored.get(event.id)) is not None else event_dict(event) for event in result.events]}
        notes = list(result.notes) + self._index_notes()
        if notes:
            out["notes"] = notes
        return out

    @serialised
    def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None,
               expiration_date: Any = UNSET, data: str | None = None, *, user_id: Any = None,
               agent_id: Any = None, run_id: Any = None) -> dict[str, Any]:
        """Rewrite a memory in place (same id; git keeps the old text): its `text` (mem0 1.x's `data`
        is the same), `metadata` (merged; identity keys ignored), `expiration_date` (None clears it).
        Scopes given must all match the memory's (else: not found)."""
        text = data if text is None else text
        if text is None and metadata is None and expiration_date is UNSET:
            raise ValidationError("At least one of text, metadata, or expiration_date must be provided.")
        entry = self._require(memory_id, caller(user_id, agent_id, run_id), UPDATE_NOT_FOUND)
        if text is not None and not isinstance(text, str):
            raise ValidationError(f"Memory with id {memory_id} does not have text content to update")
        changed = entry.replace(
            text=entry.text if text is None else text,
            metadata={**entry.metadata, **without_identity(metadata, "update()")},
            expiration_date=entry.expiration_date if expiration_date is UNSET else expiration(expiration_date))
        self._core.update(entry.id, replacement=changed)
        return {"message": "Memory updated successfully!"}

    @serialised
    def delete(self, memory_id: str, *, user_id: Any = None, agent_id: Any = None,
               run_id: Any = None, erase: bool | None = None) -> dict[str, Any]:
        """Soft-delete one memory (its file moves to deleted/; history keeps it). Scopes given must
        all match the memory's (else: not found). `erase=True` (default: vault.delete = "erase")
        removes it from every commit instead: irreversible (memvault erase)."""
        entry = self._require(memory_id, caller(user_id, agent_id, run_id), DELETE_NOT_FOUND)
        if self._erasing(erase):
            self._core.erase(ids=[entry.id], reason="Memory.delete(erase=True)")
            return {"message": "Memory erased successfully!"}
        self._core.delete([entry.id])
        return {"message": "Memory deleted successfully!"}

    def _erasing(self, erase: bool | None) -> bool:
        return self.settings.vault.delete == "erase" if erase is None else bool(erase)

    @serialised
    def delete_all(self, user_id: Any = None, agent_id: Any = None, run_id: Any = None,
                   erase: bool | None = None) -> dict[str, Any]:
        """Soft-delete, in one commit, every memory whose scopes match all those given, with the turns
        and conversation summaries of those scopes. `erase=True` (default: vault.delete = "erase")
        removes them from every commit instead; a user_id alone erases everything from or about that
        user, history included (the GDPR case). Irreversible."""
        scopes = required_scopes(user_id, agent_id, run_id, message=DELETE_ALL_SCOPE_REQUIRED)
        self._sync_once()
        erasing = self._erasing(erase)
        self._core.delete_scope(scopes, erase=erasing, reason="Memory.delete_all(erase=True)")
        return {"message": f"Memories {'erased' if erasing else 'deleted'} successfully!"}

    @serialised
    def reset(self) -> None:
        """Soft-delete everything in the vault (one commit) and rebuild the index. Git keeps it all,
        so `history(id)` still answers after a reset (mem0 empties its history database)."""
        self._core.reset()
        self._synced = True

    # -- reading -----------------------------------------------------------------------------------
    @serialised
    def search(self, query: str, user_id: Any = None, agent_id: Any = None, run_id: Any = None,
               limit: int | None = None, filters: dict | None = None, threshold: float | None = None, *,
               top_k: int | None = None, rerank: bool = True, explain: bool = False, show_expired: bool = False,
               reference_date: Any = None, as_of: str | None = None) -> dict[str, Any]:
        """The memories most relevant to `query`, best first, through memvault's pipeline (dense +
        lexical, rerank, recency, MMR). Scopes: mem0 2.x's `filters={"user_id": ...}` (a string, an
        int, {"eq"/"in": ...} or "*") or 1.x's `user_id=`; `filters` also takes mem0 and spec
        filter expressions. `top_k` (1.x: `limit`, default 20), `threshold` (None: the configured
        one), `rerank=False` skips the cross-encoder, `explain` adds score_details; memories past
        their expiration_date are left out unless `show_expired`. `as_of`: a date, ISO time or commit:
        the vault as it was then (time travel, memvault's own)."""
        if reference_date is not None:
            raise ValidationError("reference_date is a mem0 Platform parameter: use filters on created_at")
        query = check_query(query)
        top_k = pick_top_k(top_k, limit)
        check_threshold(threshold)
        scopes, filters = scoped(user_id, agent_id, run_id, filters)
        if top_k == 0:
            return {"results": []}
        if as_of is None:  # a past question reads the past's own index: today's is neither built nor written
            self._sync_once()
        overrides = {"reranker": ""} if not rerank else {}
        as_of = self._core.resolve_as_of(as_of)  # once: the hits and their relations read the same past
        with self._core.holding_past(as_of):  # opened once for both
            hits = self._core.search(query, None, scopes, memories_matching(filters), top_k=top_k,
                                     score_threshold=threshold, as_of=as_of, show_expired=show_expired, **overrides)
            # mem0's graph memory, derived from the facts' triples (no graph server): listed when the query
            # names entities that have relations (graph.enabled, on by default).
            relations = self._core.relations(query, None, scopes, memories_matching(filters), as_of=as_of,
                                             show_expired=show_expired)
        found: dict[str, Any] = {"results": [item_from_hit(hit, explain) for hit in hits]}
        if relations:
            found["relations"] = [relation.to_dict() for relation in relations]
        return found

    @serialised
    def get(self, memory_id: str, *, user_id: Any = None, agent_id: Any = None,
            run_id: Any = None) -> dict[str, Any] | None:
        """One memory, or None when no live memory has this id within the scopes given (all must
        match: an id of another user is not found, as in mem0)."""
        entry = self._memory(memory_id, caller(user_id, agent_id, run_id))
        return item_from_entry(entry) if entry else None

    @serialised
    def get_all(self, user_id: Any = None, agent_id: Any = None, run_id: Any = None, filters: dict | None = None,
                limit: int | None = None, *, top_k: int | None = None, show_expired: bool = False) -> dict[str, Any]:
        """The memories of these scopes (newest first, at most `top_k`, 1.x: `limit`, default 20),
        optionally filtered; expired ones only with `show_expired`. Scopes as for `search`."""
        top_k = pick_top_k(top_k, limit)
        scopes, filters = scoped(user_id, agent_id, run_id, filters)
        if top_k == 0:
            return {"results": []}
        self._sync_once()
        rows = self._core.select(scopes, filters, limit=top_k, show_expired=show_expired)
        return {"results": [item_from_row(row) for row in rows]}

    @serialised
    def history(self, memory_id: str, *, user_id: Any = None, agent_id: Any = None,
                run_id: Any = None) -> list[dict[str, Any]]:
        """The memory's ADD / UPDATE / DELETE events, oldest first, read back from git ([] if unknown,
        or outside the scopes given). Each record has mem0's fields and the spec's."""
        if not isinstance(memory_id, str):
            return []
        try:
            _, entry = self._core.get(layout.check_full_id(memory_id), caller=caller(user_id, agent_id, run_id))
        except (errors.UsageError, errors.NotFoundError):
            return []
        if entry.role != "memory":  # turns and summaries are not memories here
            return []
        return [history_record(event) for event in self._core.history(entry.id)]

    # -- helpers -----------------------------------------------------------------------------------
    def _sync_once(self) -> None:
        """Bring the index in step with the files once per instance: a file a person edited or
        added by hand since the last run is then a memory like any other."""
        if not self._synced:
            self._core.reindex()
            self._synced = True

    def _extraction_prompt(self, prompt: str | None) -> str | None:
        return self._core.extraction_prompt(prompt or self._prompt)

    def _memory(self, memory_id: str, asking: Caller) -> Entry | None:
        """The live fact with exactly this id that `asking` may see, or None (turns and summaries are not
        memories)."""
        if not isinstance(memory_id, str):
            return None
        try:
            memory_id = layout.check_full_id(memory_id)
        except errors.UsageError:
            return None
        entry = self._core.live_entry(memory_id, asking)
        return entry if entry is not None and entry.role == "memory" else None

    def _require(self, memory_id: str, asking: Caller, message: str = DELETE_NOT_FOUND) -> Entry:
        entry = self._memory(memory_id, asking)
        if entry is None:
            raise NotFoundError(message.format(memory_id=str(memory_id)[:80]))
        return entry

    def _index_notes(self) -> list[str]:
        """A note when writes wait in the journal because the embedder failed (they are stored)."""
        failed, self._index_failure = self._index_failure, None
        return [failed] if failed else []


def caller(user_id: Any, agent_id: Any, run_id: Any) -> Caller:
    """Who asks for a memory by id: the scopes given, as mem0 checks them (core decides what they see)."""
    return Caller(**given_scopes(user_id, agent_id, run_id))


def is_incognito(mode: Any) -> bool:
    """Whether `Memory(mode=...)` asks for an incognito memory (settings.MEMORY_MODES)."""
    if mode not in MEMORY_MODES:
        raise ValidationError(f"unknown mode {mode!r} (expected one of {', '.join(MEMORY_MODES)})")
    return MEMORY_MODES[mode]
