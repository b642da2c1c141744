"""mem0's dict shapes for memories, add events and history records, from memvault's objects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memvault.vault.entry import SCOPE_KEYS, Entry, text_hash


def iso(moment: datetime | float | None) -> str | None:
    """ISO 8601 in UTC to the millisecond (what the files keep), from a datetime or an epoch."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(float(moment), UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def memory_item(memory_id: str, text: str, metadata: dict | None, created_at: Any, updated_at: Any,
                scopes: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """mem0's MemoryItem: id, memory, hash, metadata, (score), times, and the scope ids that are set."""
    item: dict[str, Any] = {"id": memory_id, "memory": text, "hash": text_hash(text), "metadata": dict(metadata or {})}
    if score is not None:
        item["score"] = score
    item["created_at"] = iso(created_at)
    item["updated_at"] = iso(updated_at)
    item.update({key: scopes[key] for key in SCOPE_KEYS if scopes.get(key)})
    return item


def item_from_entry(entry: Entry) -> dict[str, Any]:
    return memory_item(entry.id, entry.text, entry.metadata, entry.created_at, entry.updated_at, entry.scopes)


def item_from_row(row: dict[str, Any]) -> dict[str, Any]:
    """From an index row (IndexStore.select)."""
    return memory_item(row["id"], row["text"], row["metadata"], row["created_at"], row["updated_at"], row)


def item_from_hit(hit: Any) -> dict[str, Any]:
    """From a retrieve.search.Hit; `score` is the pipeline's final score (relevance mixed with recency)."""
    scopes = {key: getattr(hit, key) for key in SCOPE_KEYS}
    return memory_item(hit.id, hit.text, hit.metadata, hit.created_at, hit.updated_at, scopes, round(hit.score, 6))


def event_dict(event: Any) -> dict[str, Any]:
    """An add result: mem0's id / memory / event (and previous_memory for UPDATE), plus memvault's
    old_memory / new_memory and, for an UPDATE, `replaced_id` (memvault keeps the old memory as a
    tombstone and gives the new text a new id)."""
    data = event.to_dict()
    if event.event == "UPDATE":
        data["previous_memory"] = event.old_memory
    return data


def history_record(event: Any) -> dict[str, Any]:
    """mem0's history record from a vault.history.Event (read back from git)."""
    data = event.to_dict()
    moment = iso(event.time)
    return {
        "id": data["id"], "memory_id": event.memory_id, "old_memory": event.old_memory,
        "new_memory": event.new_memory, "event": event.event, "created_at": moment,
        "updated_at": moment if event.event == "UPDATE" else None,
        # A curated UPDATE replaces the memory by a new one: the old id is then a tombstone.
        "is_deleted": event.event in ("DELETE", "PURGE") or bool(event.replaced_by),
        "replaced_by": event.replaced_by, "commit": event.commit,
    }
