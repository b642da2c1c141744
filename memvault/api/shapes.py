"""mem0's dict shapes for memories, add events and history records, from memvault's objects.

The memory item is mem0 2.x's `MemoryItem`: id, memory, hash, metadata (None when empty), score
(None from `get`, absent from `get_all`), created_at, updated_at, then the "promoted" keys that are
set: user_id, agent_id, run_id, actor_id, role (the message's role for a memory stored as given),
attributed_to, expiration_date. memory_type stays in metadata, as mem0 keeps it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memvault.shapes import SCOPE_KEYS, Entry, metadata_with_mem0_fields, text_hash

PROMOTED = ("actor_id", "role", "attributed_to", "expiration_date")  # beside the scopes, not in metadata (mem0 2.2.1)
NO_SCORE = object()  # get_all: mem0 leaves the key out


def iso(moment: datetime | float | None) -> str | None:
    """ISO 8601 in UTC to the millisecond (what the files keep), from a datetime or an epoch."""
    if moment is None:
        return None
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(float(moment), UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def memory_item(memory_id: str, text: str, metadata: dict | None, created_at: Any, updated_at: Any,
                scopes: dict[str, Any], score: Any = None) -> dict[str, Any]:
    """mem0's MemoryItem (see the module's docstring). `metadata` may hold the promoted keys."""
    rest = dict(metadata or {})
    promoted = {key: rest.pop(key) for key in PROMOTED if rest.get(key) is not None}
    item: dict[str, Any] = {"id": memory_id, "memory": text, "hash": text_hash(text), "metadata": rest or None}
    if score is not NO_SCORE:
        item["score"] = score
    item["created_at"] = iso(created_at)
    item["updated_at"] = iso(updated_at)
    item.update({key: scopes[key] for key in SCOPE_KEYS if scopes.get(key)})
    item.update(promoted)
    return item


def item_from_entry(entry: Entry) -> dict[str, Any]:
    """From a file (`get`): score None, as mem0's get gives it."""
    return memory_item(entry.id, entry.text, metadata_with_mem0_fields(entry), entry.created_at, entry.updated_at,
                       entry.scopes)


def item_from_row(row: dict[str, Any]) -> dict[str, Any]:
    """From an index row (IndexStore.select; `get_all`): no score."""
    return memory_item(row["id"], row["text"], row["metadata"], row["created_at"], row["updated_at"], row, NO_SCORE)


def item_from_hit(hit: Any, explain: bool = False) -> dict[str, Any]:
    """From a retrieve.search.Hit; `score` is the pipeline's final score (relevance mixed with
    recency); `explain` adds mem0's `score_details` with every stage's numbers."""
    scopes = {key: getattr(hit, key) for key in SCOPE_KEYS}
    item = memory_item(hit.id, hit.text, hit.metadata, hit.created_at, hit.updated_at, scopes, round(hit.score, 6))
    if explain:
        item["score_details"] = {"dense": hit.dense, "lexical": hit.lexical, "fused": hit.fused,
                                 "relevance": hit.relevance, "recency": hit.recency, "total": hit.total,
                                 "rank": hit.rank, **hit.explain}
    return item


def event_dict(event: Any) -> dict[str, Any]:
    """An add result: mem0's id / memory / event (and previous_memory for UPDATE, as mem0 1.x),
    plus old_memory / new_memory. An UPDATE keeps the memory's id (docs/architecture.md, Curation)."""
    data = event.to_dict()
    data.pop("replaced_id", None)
    if event.event == "UPDATE":
        data["previous_memory"] = event.old_memory
    return data


def history_record(event: Any) -> dict[str, Any]:
    """mem0's history record from a vault.git.history.Event (read back from git), with the spec's names
    (old_value, new_value, timestamp) beside mem0's; times in mem0's ISO form."""
    data = event.to_dict()
    created = iso(event.entry.created_at) if event.entry else iso(event.time)
    moment = iso(event.moment)
    return {
        "id": data["id"], "memory_id": event.memory_id, "old_memory": event.old_memory,
        "new_memory": event.new_memory, "event": event.event, "created_at": created, "updated_at": moment,
        "is_deleted": event.is_deleted, "actor_id": data["actor_id"], "role": data["role"],
        "old_value": event.old_memory, "new_value": event.new_memory, "timestamp": moment,
        "replaced_by": event.replaced_by, "commit": event.commit,
    }
