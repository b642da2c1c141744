"""What one add did and where its memories go: the event of each change (mem0's shape), the place a
curated add writes to, and the front-matter fields a caller's metadata carries. Kept apart from the
curation itself (curate.ingest), so that a verbatim add loads none of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memvault.errors import UsageError
from memvault.vault.format.entry import MEM0_FIELDS, iso_time


@dataclass
class MemoryEvent:
    """One change to memory, in mem0's shape."""

    event: str  # ADD | UPDATE | DELETE | NONE; HOLD | DROP from the write policy
    id: str | None
    old_memory: str | None = None
    new_memory: str | None = None
    replaced_id: str | None = None  # set only by older callers: UPDATE now keeps the id
    reason: str | None = None  # for the write policy's HOLD and DROP: why (memvault.curate.policy)

    def to_dict(self) -> dict[str, Any]:
        memory = self.new_memory if self.new_memory is not None else self.old_memory
        data = {"id": self.id, "event": self.event, "memory": memory, "old_memory": self.old_memory,
                "new_memory": self.new_memory}
        if self.replaced_id:
            data["replaced_id"] = self.replaced_id
        if self.reason:
            data["reason"] = self.reason
        return data


# Front matter keys a curated fact carries beyond Entry's fields (kept as `Entry.extra`, so every
# reader and writer passes them through): the LLM that wrote the fact, and the session it was learned in.
PROVENANCE_KEYS = ("model", "session")
MAX_PROVENANCE_CHARS = 200


@dataclass(frozen=True)
class Placement:
    """Where the entries of one curated add go, and what they carry."""

    conversation: str
    scopes: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None  # the user turn the facts were taken from
    # What wrote the facts (PROVENANCE_KEYS: the model, the session), front matter of each fact it
    # adds or rewrites; kept out of `metadata`, which is the caller's own.
    provenance: dict[str, str] = field(default_factory=dict)


def split_fields(metadata: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Entry fields, the rest of the metadata): mem0's `created_at` in metadata dates the new facts
    (mem0 honours it), and its actor_id / memory_type / expiration_date are front-matter fields."""
    rest = dict(metadata)
    fields: dict[str, Any] = {key: str(rest.pop(key)) for key in MEM0_FIELDS if rest.get(key) is not None}
    if rest.get("created_at") is not None:
        try:
            fields["created_at"] = iso_time(rest["created_at"])
        except ValueError:
            raise UsageError(f"metadata created_at is not an ISO 8601 time: {rest['created_at']!r:.60}") from None
        del rest["created_at"]
    return fields, rest
