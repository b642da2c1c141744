"""One memory entry: its fields, and their values' rules (ids, text hashes, times) (pure code).

What a field may hold is checked in vault.format.fields; the markdown file an entry is written as is
vault.format.markdown's."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from memvault.errors import EntryFormatError

ROLES = ("memory", "user", "assistant", "summary", "rule", "session")
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# A semantic fact's optional triple (docs/architecture.md, Graph): what it is about, and the user's words it came from.
# Hand-written facts without them stay valid; the graph is derived from facts that have all of
# subject, predicate and object.
TRIPLE_KEYS = ("category", "subject", "predicate", "object", "evidence")
# Front matter keys in the order they are written, so files diff cleanly.
FIELD_ORDER = (
    "id", "role", "conversation_id", "created_at", "updated_at", "hash",
    "user_id", "agent_id", "run_id", "source", *TRIPLE_KEYS, "metadata", "deleted_at", "replaced_by",
    "actor_id", "memory_type", "expiration_date",
)
# mem0's per-memory fields kept in front matter (the mem0-style API sets them; see memvault.api):
# who said it (a message's `name`), mem0's memory_type, and the day (YYYY-MM-DD) after which it is hidden.
MEM0_FIELDS = ("actor_id", "memory_type", "expiration_date")


def now() -> datetime:
    """The current time in UTC, to the millisecond (what the files keep)."""
    moment = datetime.now(timezone.utc)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def new_id() -> str:
    return str(uuid.uuid4())


def text_hash(text: str) -> str:
    """md5 of the body, as mem0 does: lets an exact duplicate be spotted without asking an LLM."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


@dataclass
class Entry:
    """A fact, a conversation turn or a summary. `text` is the markdown body."""

    text: str
    role: str = "memory"
    conversation_id: str = "default"
    id: str = field(default_factory=new_id)
    created_at: datetime = field(default_factory=now)
    updated_at: datetime | None = None
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    category: str | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None  # noqa: A003 - the front matter key; only a field name here
    evidence: str | None = None
    deleted_at: datetime | None = None
    replaced_by: str | None = None
    actor_id: str | None = None
    memory_type: str | None = None
    expiration_date: str | None = None
    # Front matter keys memvault does not know (agent-cli's source_id, summary_kind), written back as read.
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.updated_at is None:
            self.updated_at = self.created_at
        # Files are read with "\n" line ends (python-frontmatter converts "\r\n"): the text held
        # here, and its hash, must be what reading the file back gives.
        self.text = self.text.replace("\r\n", "\n")

    @property
    def hash(self) -> str:
        return text_hash(self.text)

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def triple(self) -> dict[str, str] | None:
        """The fact's triple fields that are set, when it has a whole triple (subject, predicate and
        object); None otherwise."""
        fields = {key: getattr(self, key) for key in TRIPLE_KEYS if getattr(self, key)}
        return fields if all(fields.get(key) for key in ("subject", "predicate", "object")) else None

    @property
    def scopes(self) -> dict[str, str]:
        return {key: getattr(self, key) for key in SCOPE_KEYS if getattr(self, key)}

    def replace(self, **changes: Any) -> Entry:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, used by `--json` output and the APIs."""
        data = {key: getattr(self, key) for key in FIELD_ORDER}
        data["text"] = self.text
        for key in ("created_at", "updated_at", "deleted_at"):
            data[key] = format_time(data[key])
        return data


def metadata_with_mem0_fields(entry: Entry) -> dict[str, Any]:
    """The entry's metadata and its mem0 fields that are set: what the index's metadata column holds,
    so filters reach actor_id, memory_type and expiration_date like any metadata key."""
    return {**entry.metadata, **{key: getattr(entry, key) for key in MEM0_FIELDS if getattr(entry, key)}}


def iso_time(value: Any) -> datetime:
    """A timezone-aware datetime from an ISO 8601 string (a trailing Z too), a date or a datetime;
    a naive time is read as UTC. ValueError when `value` is none of these. The one time parser:
    entry files (`parse_time`) and filters (`retrieve.filters.to_epoch`) both read times with it."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):  # a bare YAML date, or a date in a filter: its midnight
        moment = datetime.combine(value, datetime.min.time())
    elif isinstance(value, str):
        moment = datetime.fromisoformat(value.strip())  # Python 3.11 reads a trailing Z
    else:
        raise ValueError(f"not a time: {value!r:.60}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def parse_time(value: Any, key: str, where: str) -> datetime | None:
    if value is None or value == "":
        return None
    try:
        moment = iso_time(value if isinstance(value, (date, datetime)) else str(value))
    except ValueError:
        raise EntryFormatError(where, f"'{key}' is not an ISO 8601 time: {value!r:.60}") from None
    # Kept to the microsecond a file gives (agent-cli writes them): an edit writes the time back as read.
    return moment


def format_time(moment: datetime | None) -> str | None:
    """To the millisecond, as memvault makes times (see `now`); to the microsecond when a file had one."""
    if moment is None:
        return None
    return moment.isoformat(timespec="microseconds" if moment.microsecond % 1000 else "milliseconds")
