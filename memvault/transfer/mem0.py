"""A mem0 store: its SQLite history database (`history.db`: every ADD / UPDATE / DELETE with old and new
text and times) and/or a `get_all` dump (`{"results": [...]}` as `Memory.get_all` returns it, saved
as JSON: ids, text, scopes, metadata and times). Give both to keep everything: the dump knows the
scopes and metadata of live memories, the history knows when each was created and which were deleted.

Each memory keeps its id (a mem0 id is a UUID), its scopes, metadata and times (to the millisecond, as
memvault keeps times); it becomes a fact in the conversation folder its scopes name
(`user-alice+agent-bot`, as `Memory.add` files them) unless `--conversation` says otherwise. A deleted
memory becomes a tombstone. mem0's fields memvault has no place for (`actor_id`, the message `role`,
`expiration_date`, `categories`, ...) go into `metadata` under their own names.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import MemvaultError, UsageError
from memvault.transfer.batches import Batch, Item, checked_text, epoch_time, mapped_id
from memvault.transfer.source_files import json_of, open_regular, read_bytes
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry, now
from memvault.vault.format.fields import check_metadata, check_scopes

if TYPE_CHECKING:
    from memvault.core import Memvault

FORMAT = "mem0"
SQLITE_HEADER = b"SQLite format 3\x00"
NO_SCOPE_CONVERSATION = "mem0"
CORE_KEYS = {"id", "memory", "data", "text", "hash", "created_at", "updated_at", "score", "metadata",
             "user_id", "agent_id", "run_id"}


def is_history_db(path: Path) -> bool:
    try:
        with open_regular(path) as handle:
            return handle.read(16) == SQLITE_HEADER
    except (OSError, MemvaultError):  # a folder, a FIFO or a device is no database
        return False


def looks_like_dump(data: Any) -> bool:
    records = data.get("results") if isinstance(data, dict) else data
    return isinstance(records, list) and bool(records) and isinstance(records[0], dict) and "memory" in records[0]


@dataclass
class Memory:
    """What the sources say about one mem0 memory."""

    id: str
    text: str | None = None
    created_at: Any = None
    updated_at: Any = None
    deleted_at: Any = None
    scopes: dict | None = None
    metadata: dict | None = None


def batches(memvault: Memvault, paths: list[Path], conversation: str | None, notes: list[str],
            first: Any = None) -> list[Batch]:
    """One batch per conversation of the memories in `paths` (`first`: the first path's JSON dump,
    when already read)."""
    memories: dict[str, Memory] = {}
    dumped = False
    for number, path in enumerate(paths):
        if is_history_db(path):
            read_history(path, memories)
        else:
            read_dump(path, memories, first if number == 0 else None)
            dumped = True
    grouped: dict[str, list[Item]] = defaultdict(list)
    unscoped = 0
    for memory in memories.values():
        entry = entry_of(memvault, memory, conversation, notes)
        if entry is None:
            continue
        unscoped += memory.scopes is None and not entry.deleted
        grouped[entry.conversation_id].append(Item(entry))
    if unscoped and not dumped:
        notes.append(f"{unscoped} memories came from the history database alone, which holds no scopes or "
                     "metadata: give the get_all dump too to keep them")
    return [Batch(name, name, name, sorted(items, key=lambda item: item.entry.created_at))
            for name, items in sorted(grouped.items())]


def read_dump(path: Path, memories: dict[str, Memory], data: Any = None) -> None:
    """Add the memories of a `get_all` dump (`data`: its JSON, when already read) to `memories`."""
    if data is None:
        data = json_of(read_bytes(path), path, "mem0 get_all dump")
    records = data.get("results") if isinstance(data, dict) else data
    if not isinstance(records, list) or not all(isinstance(r, dict) and r.get("id") for r in records):
        raise UsageError(f"{path} is not a mem0 get_all dump: expected {{\"results\": [{{\"id\", \"memory\", ...}}]}}")
    for record in records:
        memory = memories.setdefault(str(record["id"]), Memory(str(record["id"])))
        memory.text = record.get("memory") or record.get("data") or record.get("text") or memory.text
        memory.created_at = record.get("created_at") or memory.created_at
        memory.updated_at = record.get("updated_at") or memory.updated_at
        memory.scopes = {key: record.get(key) for key in ("user_id", "agent_id", "run_id")}
        extra = {key: value for key, value in record.items() if key not in CORE_KEYS and value is not None}
        metadata = record.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise UsageError(f"{path}: memory {str(record['id'])[:60]}: 'metadata' must be an object")
        memory.metadata = {**metadata, **extra}


def read_history(path: Path, memories: dict[str, Memory]) -> None:
    """Each memory's last state, from its events in the order mem0 wrote them."""
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            rows = db.execute("SELECT memory_id, old_memory, new_memory, event, created_at, updated_at "
                              "FROM history ORDER BY rowid").fetchall()
    except sqlite3.Error as exc:
        raise UsageError(f"{path} is not a mem0 history database ({exc})") from None
    for memory_id, old, new, event, created_at, updated_at in rows:
        if not memory_id:
            continue
        memory = memories.setdefault(str(memory_id), Memory(str(memory_id)))
        memory.created_at = memory.created_at or created_at
        if event in ("ADD", "UPDATE") and new is not None:
            memory.text = memory.text if memory.scopes is not None else new  # a dump's text is the newest
            memory.updated_at = updated_at or created_at or memory.updated_at
            memory.deleted_at = None
        elif event == "DELETE":
            memory.text = memory.text or old
            memory.deleted_at = updated_at or created_at or "deleted"


def entry_of(memvault: Memvault, memory: Memory, conversation: str | None, notes: list[str]) -> Entry | None:
    text = checked_text(memvault, memory.text, f"mem0 memory {memory.id}", notes)
    if text is None:
        return None
    metadata = dict(memory.metadata or {})
    memory_id = mapped_id(FORMAT, memory.id, metadata, "mem0_id")
    try:
        scopes = check_scopes({k: v for k, v in (memory.scopes or {}).items() if v is not None})
        metadata = check_metadata(metadata)
    except UsageError as exc:
        notes.append(f"mem0 memory {memory.id}: left out: {exc}")
        return None
    created = epoch_time(memory.created_at) or now()
    name = conversation or (layout.conversation_for_scopes(scopes) if scopes else NO_SCOPE_CONVERSATION)
    deleted = (epoch_time(memory.deleted_at) or created) if memory.deleted_at else None
    return Entry(text=text, conversation_id=layout.check_conversation_id(name), id=memory_id, created_at=created,
                 updated_at=epoch_time(memory.updated_at) or created, metadata=metadata, deleted_at=deleted,
                 **scopes)
