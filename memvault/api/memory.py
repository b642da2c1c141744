"""Memory: mem0's Python API over a memvault vault (markdown files + git, a derived SQLite index).

    from memvault import Memory
    m = Memory({"vault": {"path": "~/notes/memory"}, "llm": {"model": "ollama/qwen3:4b"}})
    m.add("I'm vegetarian and allergic to nuts", user_id="alice")
    m.search("what can I cook for alice?", user_id="alice", limit=5)["results"]

Differences from mem0 worth knowing:
- An LLM UPDATE gives the new text a new id and keeps the old memory as a tombstone (`replaced_id`
  in the add result, `replaced_by` in history); `update()` called by you edits in place (same id).
- Deletes are soft: files move to `deleted/`, and git keeps every version.
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
from memvault.api.config import build_settings
from memvault.api.errors import NotFoundError, ScopeError, ValidationError, translated
from memvault.api.shapes import event_dict, history_record, item_from_entry, item_from_hit, item_from_row
from memvault.core import Memvault
from memvault.settings import Settings
from memvault.vault import layout
from memvault.vault.entry import SCOPE_KEYS, Entry

SCOPE_REQUIRED = "At least one of user_id, agent_id, or run_id must be provided"
DEFAULT_LIMIT = 100  # mem0's default for search and get_all
MEMORY_ONLY = {"role": "memory"}


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
    environment; `llm`: an object with memvault's LLM protocol used instead of `llm.model` (tests).
    """

    def __new__(cls, *args: Any, mode: str = "normal", **kwargs: Any):
        """`mode="incognito"` (alias "guest"): an in-process memory that reads and writes no vault
        (memvault.api.incognito)."""
        from memvault.api.incognito import IncognitoMemory, is_incognito

        return IncognitoMemory(*args, **kwargs) if is_incognito(mode) else super().__new__(cls)

    def __init__(self, config: dict | None = None, *, vault: str | Path | None = None,
                 settings: Settings | None = None, llm: Any = None, mode: str = "normal") -> None:
        with translated():
            self.settings, self._prompt = build_settings(config, vault, settings)
            self._core = Memvault.open(self.settings, create=True)
        self._llm = llm
        self._lock = threading.RLock()
        self._synced = False

    @classmethod
    def from_config(cls, config_dict: dict) -> Memory:
        return cls(config_dict)

    @property
    def vault_path(self) -> Path:
        return self._core.vault.root

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
    def add(self, messages: str | dict | list, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict | None = None, filters: dict | None = None,
            prompt: str | None = None, infer: bool = True, policy: bool = False) -> dict[str, Any]:
        """Remember what the user said. With an LLM (and `infer`), facts are extracted from the latest
        user message and reconciled with the scope's memories; without one, or with `infer=False`,
        each message is stored as given. Returns {"results": [{id, memory, event, ...}]} with the
        ADD / UPDATE / DELETE events (an unchanged fact, NONE, is not listed, as in mem0) and
        "notes" when something degraded (e.g. the LLM failed and the text was stored as given).

        `filters` is accepted for mem0's signature: reconciliation always looks at the memories of
        exactly these scopes. `policy=True`: the write policy of chat turns decides (memvault.core.sessions):
        facts may be held until the session ends or dropped, and HOLD / DROP events say so."""
        scopes = required_scopes(user_id, agent_id, run_id)
        if not infer:
            messages = without_system(messages)
        self._sync_once()
        if policy and infer:
            result = self._core.policy_add(messages, scopes=scopes, metadata=metadata,
                                           prompt=self._extraction_prompt(prompt), llm=self._llm)
        else:
            result = self._core.add(messages, scopes=scopes, metadata=metadata, infer=infer,
                                    prompt=self._extraction_prompt(prompt) if infer else None,
                                    llm=self._llm if infer else None)
        out: dict[str, Any] = {"results": [event_dict(e) for e in result.events if e.event != "NONE"]}
        if result.notes:
            out["notes"] = list(result.notes)
        return out

    @serialised
    def update(self, memory_id: str, data: str, metadata: dict | None = None, *, user_id: str | None = None,
               agent_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
        """Rewrite a memory's text in place (same id; git keeps the old text); `metadata` is merged.
        Scopes given must all match the memory's (else: not found)."""
        entry = self._require(memory_id, given_scopes(user_id, agent_id, run_id))
        self._core.update(entry.id, text=data, metadata=metadata)
        return {"message": "Memory updated successfully!"}

    @serialised
    def delete(self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None) -> dict[str, Any]:
        """Soft-delete one memory (its file moves to deleted/; history keeps it). Scopes given must
        all match the memory's (else: not found)."""
        entry = self._require(memory_id, given_scopes(user_id, agent_id, run_id))
        self._core.delete([entry.id])
        return {"message": "Memory deleted successfully!"}

    @serialised
    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        """Soft-delete, in one commit, every memory whose scopes match all those given, with the turns
        and conversation summaries of those scopes."""
        scopes = required_scopes(user_id, agent_id, run_id)
        self._sync_once()
        ids = [row["id"] for row in self._core.select(scopes, role=None)]  # facts and turns
        ids += [entry.id for _, entry in self._core.list(role="summary", scopes=scopes).entries]
        self._core.delete(ids)
        return {"message": "Memories deleted successfully!"}

    @serialised
    def reset(self) -> None:
        """Soft-delete everything in the vault (one commit) and rebuild the index. Git keeps it all."""
        self._core.reset()
        self._synced = True

    # -- reading -----------------------------------------------------------------------------------
    @serialised
    def search(self, query: str, user_id: str | None = None, agent_id: str | None = None,
               run_id: str | None = None, limit: int = DEFAULT_LIMIT, filters: dict | None = None,
               threshold: float | None = None) -> dict[str, Any]:
        """The memories of these scopes most relevant to `query`, best first, through memvault's
        pipeline (dense + lexical, rerank, recency, MMR). `filters`: a mem0 filter expression
        (eq ne gt gte lt lte in nin contains icontains, AND OR NOT) on fields and metadata;
        `threshold`: the minimum relevance (None: the configured one)."""
        scopes = required_scopes(user_id, agent_id, run_id, filters)
        check_limit(limit)
        if threshold is not None and (isinstance(threshold, bool) or not 0 <= threshold <= 1):
            raise ValidationError(f"threshold must be between 0 and 1, got {threshold!r}")
        self._sync_once()
        hits = self._core.search(query, None, scopes, memories_matching(filters), top_k=limit,
                                 score_threshold=threshold)
        return {"results": [item_from_hit(hit) for hit in hits]}

    @serialised
    def get(self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None) -> dict[str, Any] | None:
        """One memory, or None when no live memory has this id within the scopes given (all must
        match: an id of another user is not found, as in mem0)."""
        entry = self._memory(memory_id, given_scopes(user_id, agent_id, run_id))
        return item_from_entry(entry) if entry else None

    @serialised
    def get_all(self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                filters: dict | None = None, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        """The memories of these scopes (newest first, at most `limit`), optionally filtered."""
        scopes = required_scopes(user_id, agent_id, run_id, filters)
        check_limit(limit)
        self._sync_once()
        return {"results": [item_from_row(row) for row in self._core.select(scopes, filters, limit=limit)]}

    @serialised
    def history(self, memory_id: str, *, user_id: str | None = None, agent_id: str | None = None,
                run_id: str | None = None) -> list[dict[str, Any]]:
        """The memory's ADD / UPDATE / DELETE events, oldest first, read back from git ([] if unknown,
        or outside the scopes given)."""
        if not isinstance(memory_id, str):
            return []
        try:
            _, entry = self._core.get(layout.check_full_id(memory_id))
        except (errors.UsageError, errors.NotFoundError):
            return []
        if entry.role != "memory" or not in_scopes(entry, given_scopes(user_id, agent_id, run_id)):
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
        from memvault.curate.extract import load_prompt

        return prompt or self._prompt or load_prompt(self.settings.llm.extraction_prompt_file)

    def _memory(self, memory_id: str, scopes: dict[str, str]) -> Entry | None:
        """The live fact with exactly this id within `scopes`, or None (turns and summaries are not
        memories)."""
        if not isinstance(memory_id, str):
            return None
        try:
            memory_id = layout.check_full_id(memory_id)
        except errors.UsageError:
            return None
        entry = self._core.live_entry(memory_id)
        return entry if entry is not None and entry.role == "memory" and in_scopes(entry, scopes) else None

    def _require(self, memory_id: str, scopes: dict[str, str]) -> Entry:
        entry = self._memory(memory_id, scopes)
        if entry is None:
            raise NotFoundError(f"no memory with id {str(memory_id)[:40]!r}")
        return entry


def given_scopes(user_id: Any, agent_id: Any, run_id: Any) -> dict[str, Any]:
    """The scope ids given (None and "" are not given)."""
    return {key: value for key, value in zip(SCOPE_KEYS, (user_id, agent_id, run_id), strict=True)
            if value is not None and value != ""}


def in_scopes(entry: Entry, scopes: dict[str, Any]) -> bool:
    """Whether the entry belongs to every scope given: an id is no way around a scope."""
    return all(getattr(entry, key) == value for key, value in scopes.items())


def required_scopes(user_id: Any, agent_id: Any, run_id: Any, filters: dict | None = None) -> dict[str, Any]:
    """The scope ids given; ScopeError when there are none. A plain `{"user_id": "alice"}` inside
    `filters` counts too (newer mem0 puts scopes there); the filter then applies it."""
    scopes = given_scopes(user_id, agent_id, run_id)
    in_filters = isinstance(filters, dict) and any(
        isinstance(filters.get(key), str) and filters[key] not in ("", "*") for key in SCOPE_KEYS)
    if not scopes and not in_filters:
        raise ScopeError(SCOPE_REQUIRED)
    return scopes


def memories_matching(filters: dict | None) -> dict:
    """The user's filter, restricted to facts (turns and summaries are not mem0 memories)."""
    return {"AND": [MEMORY_ONLY, filters]} if filters else MEMORY_ONLY


def check_limit(limit: Any) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError(f"limit must be a positive integer, got {limit!r}")


def without_system(messages: Any) -> Any:
    """infer=False stores messages as given, except system prompts (as mem0 does)."""
    if isinstance(messages, list):
        return [m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")]
    return messages
