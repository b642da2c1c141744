"""One memory entry: its fields, and how it is parsed from and rendered to markdown (pure code)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from memvault.errors import EntryFormatError

ROLES = ("memory", "user", "assistant", "summary")
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# Front matter keys in the order they are written, so files diff cleanly.
FIELD_ORDER = (
    "id", "role", "conversation_id", "created_at", "updated_at", "hash",
    "user_id", "agent_id", "run_id", "source", "metadata", "deleted_at", "replaced_by",
)


def now() -> datetime:
    """The current time in UTC, to the millisecond (what the files keep)."""
    moment = datetime.now(timezone.utc)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def new_id() -> str:
    return str(uuid.uuid4())


def text_hash(text: str) -> str:
    """md5 of the body, as mem0 does: lets an exact duplicate be spotted without asking an LLM."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def parse_time(value: Any, key: str, where: str) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    elif hasattr(value, "isoformat") and not isinstance(value, str):  # a bare YAML date
        moment = datetime.fromisoformat(value.isoformat())
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise EntryFormatError(where, f"'{key}' is not an ISO 8601 time: {value!r}") from None
    if moment.tzinfo is None:  # a person may write a naive time: read it as UTC
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def format_time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(timespec="milliseconds")


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
    deleted_at: datetime | None = None
    replaced_by: str | None = None

    def __post_init__(self) -> None:
        if self.updated_at is None:
            self.updated_at = self.created_at

    @property
    def hash(self) -> str:
        return text_hash(self.text)

    @property
    def deleted(self) -> bool:
        return self.deleted_at is not None

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


def render(entry: Entry) -> str:
    """The markdown file for an entry: YAML front matter, then the text."""
    import yaml

    meta: dict[str, Any] = {}
    for key in FIELD_ORDER:
        value = entry.hash if key == "hash" else getattr(entry, key)
        if isinstance(value, datetime):
            value = format_time(value)
        if value is None or (key == "metadata" and not value):
            continue
        meta[key] = value
    header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = entry.text if entry.text.endswith("\n") else entry.text + "\n"
    return f"---\n{header}---\n\n{body}"


@functools.cache
def yaml_handler():
    """python-frontmatter's YAML handler, reading with libyaml when PyYAML has it: listing 10k files
    is then several times faster than with the pure-Python loader it uses by default."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Handler(YAMLHandler):
        def load(self, fm: str, **kwargs: Any) -> Any:
            kwargs.setdefault("Loader", loader)
            return yaml.load(fm, **kwargs)  # noqa: S506 - a safe loader, C or Python

    return Handler()


def parse(content: str, where: str = "<text>", defaults: dict[str, Any] | None = None) -> Entry:
    """An entry from its markdown. Raises EntryFormatError naming what is wrong, never guesses.

    `defaults` fill fields a hand-written file leaves out (the vault derives them from the file's
    folder, name and time); a file with no front matter at all is then plain text with those fields.
    """
    import frontmatter
    import yaml

    content = content.lstrip("\ufeff")
    if content.startswith("---"):
        try:
            post = frontmatter.loads(content, handler=yaml_handler())
        except (yaml.YAMLError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise EntryFormatError(where, f"broken front matter: {first}") from None
        meta, body = post.metadata, post.content
        if not isinstance(meta, dict):
            raise EntryFormatError(where, "front matter is not a mapping of keys to values")
    elif defaults:
        meta, body = {}, content
    else:
        raise EntryFormatError(where, "no front matter (the file must start with '---')")
    meta = {**(defaults or {}), **{k: v for k, v in meta.items() if v is not None}}
    for key in ("id", "role", "conversation_id", "created_at"):
        if not meta.get(key):
            raise EntryFormatError(where, f"front matter lacks '{key}'")
    role = str(meta["role"])
    if role not in ROLES:
        raise EntryFormatError(where, f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    metadata = meta.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise EntryFormatError(where, "'metadata' must be a mapping of keys to values")

    def optional(key: str) -> str | None:
        value = meta.get(key)
        return None if value is None or value == "" else str(value)

    created = parse_time(meta["created_at"], "created_at", where)
    return Entry(
        text=body.strip("\n"),
        role=role,
        conversation_id=str(meta["conversation_id"]),
        id=str(meta["id"]),
        created_at=created,
        updated_at=parse_time(meta.get("updated_at"), "updated_at", where) or created,
        user_id=optional("user_id"),
        agent_id=optional("agent_id"),
        run_id=optional("run_id"),
        metadata=metadata,
        source=optional("source"),
        deleted_at=parse_time(meta.get("deleted_at"), "deleted_at", where),
        replaced_by=optional("replaced_by"),
    )
