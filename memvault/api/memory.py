"""Memory: mem0's Python API over a memvault vault (markdown files + git, a derived SQLite index).

    from memvault import Memory
    m = Memory({"vault": {"path": "~/notes/memory"}, "llm": {"model": "ollama/qwen3:4b"}})
    m.add("I'm vegetarian and allergic to nuts", user_id="alice")
    m.search("what can I cook for alice?", user_id="alice", limit=5)["results"]

Both API generations work: mem0 2.x's `search(q, filters={"user_id": ...}, top_k=...)` and 1.x's
`search(q, user_id=..., limit=...)`; where they disagree 2.x wins (README, "Coming from mem0").
Differences from mem0 worth knowing:
- An LLM UPDATE rewrites the memory in place (same id, as mem0 1.x); an exact duplicate is a NONE event.
- Deletes are soft: files move to `deleted/`, and git keeps every version (history survives `reset`).
- When the LLM fails, the message is stored as given (mem0 2.x raises LLMError): nothing is lost.
- A curated add also stores the user's message as a turn and refreshes the conversation summary;
  turns and summaries are not memories here (search, get_all, get never return them), but
  `delete_all` and `reset` remove them too, so nothing of a deleted scope is left in use.
"""

from __future__ import annotations

import functools
import logging
import threading
from datetime import date, datetime
from pathlib import Path
from typing import Any

from memvault import errors
from memvault.api.config import build_settings
from memvault.api.errors import NotFoundError, ScopeError, ValidationError, translated
from memvault.api.shapes import event_dict, history_record, item_from_entry, item_from_hit, item_from_row
from memvault.core import Memvault
from memvault.core.base import add_subject
from memvault.settings import Settings
from memvault.vault import layout
from memvault.vault.entry import SCOPE_KEYS, Entry

logger = logging.getLogger("memvault.api")

# mem0 2.2's words, so code that matches on them keeps working.
ADD_SCOPE_REQUIRED = "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."
FILTERS_SCOPE_REQUIRED = ("filters must contain at least one of: user_id, agent_id, run_id. "
                          "Example: filters={'user_id': 'u1'}")
DELETE_ALL_SCOPE_REQUIRED = ("At least one filter is required to delete all memories. If you want to delete "
                             "all memories, use the `reset()` method.")
DELETE_NOT_FOUND = "Memory with id {memory_id} not found"
UPDATE_NOT_FOUND = "Memory with id {memory_id} not found. Please provide a valid 'memory_id'"
DEFAULT_TOP_K = 20  # mem0 2.x's default for search and get_all (1.x: 100)
PROCEDURAL = "procedural_memory"
IDENTITY_KEYS = (*SCOPE_KEYS, "actor_id")
UNSET = object()  # update(): expiration_date not given (None clears it)
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
        chat = chat_messages(messages)
        metadata = without_identity(metadata, "add()")
        llm = (self._llm or self._core.llm()) if infer and memory_type is None else None
        self._sync_once()
        if llm is None:
            note = "no LLM configured (set llm.model): stored the text as given" if infer and not memory_type else None
            if not policy:
                return self._add_as_given(chat, scopes, metadata, fields, note)
            from memvault.core.sessions import guarded_messages

            chat, dropped = guarded_messages(chat)  # the policy's hard guards need no LLM
            out = self._add_as_given(chat, scopes, metadata, fields, note)
            out["results"] = [event_dict(event) for event in dropped] + out["results"]
            return out
        speaker = next((m.get("name") for m in reversed(chat) if m.get("role") == "user"), None)
        fields["actor_id"] = speaker
        carried = {**metadata, **{k: v for k, v in fields.items() if v is not None}}
        if policy:
            result = self._core.policy_add(chat, scopes=scopes, metadata=carried,
                                           prompt=self._extraction_prompt(prompt), llm=llm)
        else:
            result = self._core.add(chat, scopes=scopes, metadata=carried, infer=True,  # mem0: every user message
                                    prompt=self._extraction_prompt(prompt), llm=llm, whole=True)
        out: dict[str, Any] = {"results": [event_dict(e) for e in result.events]}
        notes = list(result.notes) + self._index_notes()
        if notes:
            out["notes"] = notes
        return out

    def _add_as_given(self, chat: list[dict], scopes: dict[str, str], metadata: dict, fields: dict,
                      note: str | None) -> dict[str, Any]:
        """Each non-system message as one memory, in one commit (mem0's infer=False)."""
        created = metadata.pop("created_at", None)
        entries = []
        for message in chat:
            if message.get("role") == "system":
                continue
            entries.append(Entry(
                text=self._core.clean_text(str(message["content"])),
                conversation_id=layout.conversation_for_scopes(scopes),
                metadata={**metadata, "role": message.get("role") or "user"}, actor_id=message.get("name") or None,
                **({"created_at": given_time(created)} if created is not None else {}),
                **{k: v for k, v in fields.items() if v is not None}, **scopes))
        if entries:
            self._core.add_entries(entries, add_subject(entries))
        out: dict[str, Any] = {"results": [
            {"id": e.id, "memory": e.text, "event": "ADD", "actor_id": e.actor_id, "role": e.metadata["role"]}
            for e in entries]}
        notes = ([note] if note else []) + self._index_notes()
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
        entry = self._require(memory_id, given_scopes(user_id, agent_id, run_id), UPDATE_NOT_FOUND)
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
        entry = self._require(memory_id, given_scopes(user_id, agent_id, run_id), DELETE_NOT_FOUND)
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
        if erasing and set(scopes) == {"user_id"}:
            self._core.erase(user=scopes["user_id"], reason="Memory.delete_all(erase=True)")
            return {"message": "Memories erased successfully!"}
        ids = [row["id"] for row in self._core.select(scopes, role=None)]  # facts and turns
        ids += [entry.id for _, entry in self._core.list(role="summary", scopes=scopes).entries]
        if erasing:
            if ids:
                self._core.erase(ids=ids, reason="Memory.delete_all(erase=True)")
            return {"message": "Memories erased successfully!"}
        self._core.delete(ids)
        return {"message": "Memories deleted successfully!"}

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
        hits = self._core.search(query, None, scopes, memories_matching(filters), top_k=top_k,
                                 score_threshold=threshold, as_of=as_of, show_expired=show_expired, **overrides)
        found: dict[str, Any] = {"results": [item_from_hit(hit, explain) for hit in hits]}
        # mem0's graph memory, derived from the facts' triples (no graph server): listed when the query
        # names entities that have relations (graph.enabled, on by default).
        relations = self._core.relations(query, None, scopes, memories_matching(filters), as_of=as_of,
                                         show_expired=show_expired)
        if relations:
            found["relations"] = [relation.to_dict() for relation in relations]
        return found

    @serialised
    def get(self, memory_id: str, *, user_id: Any = None, agent_id: Any = None,
            run_id: Any = None) -> dict[str, Any] | None:
        """One memory, or None when no live memory has this id within the scopes given (all must
        match: an id of another user is not found, as in mem0)."""
        entry = self._memory(memory_id, given_scopes(user_id, agent_id, run_id))
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
        return self._core.extraction_prompt(prompt or self._prompt)

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

    def _require(self, memory_id: str, scopes: dict[str, str], message: str = DELETE_NOT_FOUND) -> Entry:
        entry = self._memory(memory_id, scopes)
        if entry is None:
            raise NotFoundError(message.format(memory_id=str(memory_id)[:80]))
        return entry

    def _index_notes(self) -> list[str]:
        """A note when writes wait in the journal because the embedder failed (they are stored)."""
        failed, self._index_failure = self._index_failure, None
        return [failed] if failed else []


def given_scopes(user_id: Any, agent_id: Any, run_id: Any) -> dict[str, str]:
    """The scope ids given, checked and trimmed as mem0 2.x does (None is not given)."""
    values = zip(SCOPE_KEYS, (user_id, agent_id, run_id), strict=True)
    return {key: trimmed for key, value in values if (trimmed := entity_id(value, key)) is not None}


def entity_id(value: Any, name: str) -> str | None:
    """mem0's `_validate_and_trim_entity_id`: ints become strings, surrounding spaces are trimmed,
    an empty id or one holding a space is refused."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    text = text.strip()
    if not text:
        raise ValidationError(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.")
    if any(c.isspace() for c in text):
        raise ValidationError(f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces.")
    return text


def in_scopes(entry: Entry, scopes: dict[str, Any]) -> bool:
    """Whether the entry belongs to every scope given: an id is no way around a scope."""
    return all(getattr(entry, key) == value for key, value in scopes.items())


def required_scopes(user_id: Any, agent_id: Any, run_id: Any, message: str) -> dict[str, str]:
    """The scope ids given; ScopeError(message) when there are none."""
    scopes = given_scopes(user_id, agent_id, run_id)
    if not scopes:
        raise ScopeError(message)
    return scopes


def scoped(user_id: Any, agent_id: Any, run_id: Any, filters: Any) -> tuple[dict[str, str], dict | None]:
    """(scopes, filters) for search and get_all: 1.x's top-level ids and 2.x's ids inside `filters`
    (checked and trimmed there too); at least one of the two must name a scope."""
    if filters is not None and not isinstance(filters, dict):
        raise ValidationError(f"filters must be a dict, got {type(filters).__name__}")
    scopes = given_scopes(user_id, agent_id, run_id)
    filters = dict(filters) if filters else None
    for key in SCOPE_KEYS:
        if filters and key in filters:
            filters[key] = filter_scope(filters[key], key)
    if not scopes and not (filters and any(key in filters for key in SCOPE_KEYS)):
        raise ScopeError(FILTERS_SCOPE_REQUIRED)
    return scopes, filters


def filter_scope(value: Any, key: str) -> Any:
    """A scope id inside filters, as mem0 2.x takes it: a string or an int (checked and trimmed),
    "*" (any), or {"eq": id} / {"in": [ids]} / {"ne"/"nin": ...} with ids checked the same way."""
    if value == "*":
        return value
    if isinstance(value, dict):
        return {op: ([entity_id(v, key) for v in operand] if isinstance(operand, (list, tuple))
                     else operand if operand == "*" else entity_id(operand, key))
                for op, operand in value.items()}
    if isinstance(value, (list, tuple)):
        return [entity_id(v, key) for v in value]
    if value is None:
        raise ValidationError(f"Invalid {key}: cannot be empty or whitespace-only. Provide a valid identifier.")
    return entity_id(value, key)


def memories_matching(filters: dict | None) -> dict:
    """The user's filter, restricted to facts (turns and summaries are not mem0 memories)."""
    return {"AND": [MEMORY_ONLY, filters or {}]}


def expiration(value: Any) -> str | None:
    """mem0's `_normalize_expiration_date`: a date, a datetime or a YYYY-MM-DD string; None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ValidationError("expiration_date must be a valid date in YYYY-MM-DD format.") from None
    raise ValidationError("expiration_date must be a date string in YYYY-MM-DD format.")


def given_time(value: Any) -> datetime:
    """metadata["created_at"] as a time (mem0 honours it as the memory's creation time)."""
    from memvault.vault.entry import iso_time

    try:
        return iso_time(value)
    except ValueError:
        raise ValidationError(f"metadata created_at is not an ISO 8601 time: {value!r:.60}") from None


def without_identity(metadata: Any, where: str) -> dict[str, Any]:
    """Metadata without identity keys: scopes come from the scope arguments, never from metadata
    (mem0 2.x drops them with a warning)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
    ignored = [key for key in metadata if key in IDENTITY_KEYS]
    for key in ignored:
        logger.warning("%s: ignoring metadata[%r] - identity fields cannot be set through metadata", where, key)
    if "created_at" in metadata:
        given_time(metadata["created_at"])
    return {key: value for key, value in metadata.items() if key not in IDENTITY_KEYS}


def chat_messages(messages: Any) -> list[dict]:
    """mem0's accepted inputs (a string, a message, a list of messages) as a list of messages;
    messages without a role or content are skipped, as mem0 does."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    elif not isinstance(messages, list):
        raise ValidationError("messages must be str, dict, or list[dict]")
    chat = [{**m, "content": message_text(m.get("content"))} for m in messages
            if isinstance(m, dict) and m.get("role") is not None]
    chat = [m for m in chat if m["content"].strip()]
    if not any(m["role"] != "system" for m in chat):
        raise ValidationError("the memory text is empty")
    return chat


def message_text(content: Any) -> str:
    """A message's text: a string, or the text parts of OpenAI-style content parts (images are not
    read: memvault stores text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content
                         if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def pick_top_k(top_k: Any, limit: Any) -> int:
    """`top_k` (2.x) or `limit` (1.x), default 20 (2.x; 1.x had 100): a non-negative integer."""
    value = top_k if top_k is not None else limit if limit is not None else DEFAULT_TOP_K
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("top_k must be a valid integer")
    if value < 0:
        raise ValidationError(f"Invalid top_k: {value}. Must be a non-negative integer.")
    return value


def check_threshold(threshold: Any) -> None:
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ValidationError("threshold must be a valid number")
    if not 0 <= threshold <= 1:
        raise ValidationError(f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive).")


def check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise ValidationError("Invalid query: must be a non-empty string.")
    if not query.strip():
        raise ValidationError("Invalid query: cannot be empty or whitespace-only.")
    return query.strip()
