"""`Memory(mode="incognito")`: mem0's API with a memory that lives in this process only.

No vault is opened or created: no file, commit, index row or session state is written, and stored
memories are never read. What is added is kept in a dict until the object goes; search ranks it by
word overlap (no model is loaded: an incognito memory holds a session's worth of text). Which items
a call sees is decided by the index's own rules: scopes and mem0 filters compile through
memvault.retrieve.filters into SQL run over an in-memory table shaped like the index's `entries`.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

from memvault.api.config import build_settings
from memvault.api.errors import NotFoundError, translated
from memvault.api.shapes import memory_item
from memvault.core import as_messages
from memvault.curate.policy import guard, jaccard
from memvault.settings import MEMORY_MODES, Settings
from memvault.vault.entry import now


def is_incognito(mode: str) -> bool:
    from memvault.api.errors import ValidationError

    if mode not in MEMORY_MODES:
        raise ValidationError(f"unknown mode {mode!r} (expected one of {', '.join(MEMORY_MODES)})")
    return MEMORY_MODES[mode]


class IncognitoMemory:
    """The in-process memory `Memory(mode="incognito")` returns (same methods, same shapes)."""

    mode = "incognito"

    def __init__(self, config: dict | None = None, *, vault: str | Path | None = None,
                 settings: Settings | None = None, llm: Any = None) -> None:
        with translated():
            self.settings, self._prompt = build_settings(config, vault, settings)
        self._llm = llm
        self._items: dict[str, dict[str, Any]] = {}
        self._lock = threading.RLock()
        # The columns filters may name (retrieve.filters TEXT_COLUMNS and TIME_COLUMNS, metadata as JSON).
        self._table = sqlite3.connect(":memory:", check_same_thread=False)
        self._table.execute("CREATE TABLE entries (id TEXT PRIMARY KEY, role TEXT, conversation_id TEXT, text TEXT, "
                            "user_id TEXT, agent_id TEXT, run_id TEXT, created_at REAL, updated_at REAL, "
                            "metadata TEXT)")

    def __enter__(self) -> IncognitoMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.reset()

    def add(self, messages: str | dict | list, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict | None = None, filters: dict | None = None,
            prompt: str | None = None, infer: bool = True, policy: bool = False) -> dict[str, Any]:
        """Keep what the user said, in this process: facts extracted by the LLM when one is given
        (`llm=`) or configured, else the messages as given. Secrets are never kept, even here."""
        from memvault.api.memory import ADD_SCOPE_REQUIRED, required_scopes

        scopes = required_scopes(user_id, agent_id, run_id, ADD_SCOPE_REQUIRED)
        with self._lock, translated():
            texts = self._facts(as_messages(messages), prompt) if infer else [
                str(m["content"]) for m in as_messages(messages) if m.get("role") != "system"]
            results = []
            for text in texts:
                if guard(text):
                    continue
                moment = now()
                item = {"id": str(uuid.uuid4()), "text": text, "metadata": dict(metadata or {}), "scopes": scopes,
                        "created_at": moment, "updated_at": moment}
                self._keep(item)
                results.append({"id": item["id"], "memory": text, "event": "ADD"})
            return {"results": results}

    def _facts(self, chat: list[dict], prompt: str | None) -> list[str]:
        from memvault.curate.extract import extract_fact_records, last_user_text
        from memvault.errors import LLMError

        llm = self._llm
        if llm is None and self.settings.llm.model:
            from memvault.curate.llm import LLMClient

            llm = LLMClient(self.settings.llm)
        latest = last_user_text(chat)
        if llm is None:
            return [latest] if latest.strip() else []
        try:
            return [fact.text for fact in extract_fact_records(llm, chat, prompt or self._prompt)]
        except LLMError:
            return [latest] if latest.strip() else []

    def search(self, query: str, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
               limit: int | None = None, filters: dict | None = None, threshold: float | None = None, *,
               top_k: int | None = None, **_: Any) -> dict[str, Any]:
        """Word overlap over this process's memories (no model: nothing is loaded), in both mem0
        generations' forms (scopes as keywords or inside `filters`; `top_k` or `limit`)."""
        from memvault.api.memory import pick_top_k, scoped

        scopes, filters = scoped(user_id, agent_id, run_id, filters)
        limit = pick_top_k(top_k, limit)
        with self._lock, translated():
            scored = [(jaccard(query, item["text"]), item) for item in self._owned(scopes, filters)]
            scored = [(score, item) for score, item in scored if score > (threshold or 0.0)]
            scored.sort(key=lambda pair: pair[0], reverse=True)
            return {"results": [self._shape(item, round(score, 6)) for score, item in scored[:limit]]}

    def get(self, memory_id: str, **scopes: Any) -> dict[str, Any] | None:
        item = self._items.get(memory_id)
        return self._shape(item) if item and self._owns(item, scopes) else None

    def get_all(self, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None,
                filters: dict | None = None, limit: int | None = None, *, top_k: int | None = None,
                **_: Any) -> dict[str, Any]:
        from memvault.api.memory import pick_top_k, scoped

        scopes, filters = scoped(user_id, agent_id, run_id, filters)
        limit = pick_top_k(top_k, limit)
        with self._lock, translated():
            items = sorted(self._owned(scopes, filters), key=lambda item: item["created_at"], reverse=True)
        return {"results": [self._shape(item) for item in items[:limit]]}

    def update(self, memory_id: str, text: str | None = None, metadata: dict | None = None, *,
               data: str | None = None, **scopes: Any) -> dict[str, Any]:
        item = self._require(memory_id, scopes)
        new_text = text if text is not None else data  # data: mem0 1.x's name for it
        item.update(text=item["text"] if new_text is None else new_text,
                    metadata={**item["metadata"], **(metadata or {})}, updated_at=now())
        self._keep(item)
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str, **scopes: Any) -> dict[str, Any]:
        self._forget(self._require(memory_id, scopes)["id"])
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, Any]:
        from memvault.api.memory import ADD_SCOPE_REQUIRED, required_scopes

        for item in self._owned(required_scopes(user_id, agent_id, run_id, ADD_SCOPE_REQUIRED)):
            self._forget(item["id"])
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str, **scopes: Any) -> list[dict[str, Any]]:
        return []  # nothing incognito has a history: no git

    def reset(self) -> None:
        with self._lock:
            self._items.clear()
            self._table.execute("DELETE FROM entries")

    def _keep(self, item: dict[str, Any]) -> None:
        with self._lock:
            self._items[item["id"]] = item
            scopes = item["scopes"]
            self._table.execute("INSERT OR REPLACE INTO entries VALUES (?, 'memory', 'incognito', ?, ?, ?, ?, ?, ?, ?)",
                                (item["id"], item["text"], scopes.get("user_id"), scopes.get("agent_id"),
                                 scopes.get("run_id"), item["created_at"].timestamp(),
                                 item["updated_at"].timestamp(), json.dumps(item["metadata"])))

    def _forget(self, memory_id: str) -> None:
        with self._lock:
            self._items.pop(memory_id, None)
            self._table.execute("DELETE FROM entries WHERE id = ?", (memory_id,))

    def _owned(self, scopes: dict[str, Any], filters: dict | None = None) -> list[dict[str, Any]]:
        """The items within every scope given that pass `filters` (mem0's expressions, as the index applies them)."""
        from memvault.retrieve.filters import and_where, compile_filter, scope_where

        where, params = and_where(scope_where(None, scopes), compile_filter(filters))
        with self._lock:
            ids = [row[0] for row in self._table.execute(f"SELECT e.id FROM entries e WHERE {where}", params)]
            return [self._items[memory_id] for memory_id in ids]

    @staticmethod
    def _owns(item: dict[str, Any], scopes: dict[str, Any]) -> bool:
        return all(item["scopes"].get(key) == value for key, value in scopes.items() if value)

    def _require(self, memory_id: str, scopes: dict[str, Any]) -> dict[str, Any]:
        item = self._items.get(memory_id)
        if item is None or not self._owns(item, scopes):
            raise NotFoundError(f"no memory with id {str(memory_id)[:40]!r}")
        return item

    @staticmethod
    def _shape(item: dict[str, Any], score: float | None = None) -> dict[str, Any]:
        return memory_item(item["id"], item["text"], item["metadata"], item["created_at"], item["updated_at"],
                           item["scopes"], score)
