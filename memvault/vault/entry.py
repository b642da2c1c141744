"""One memory entry: its fields, and how it is parsed from and rendered to markdown (pure code)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from memvault.errors import EntryFormatError, UsageError

ROLES = ("memory", "user", "assistant", "summary")
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
# Front matter keys in the order they are written, so files diff cleanly.
FIELD_ORDER = (
    "id", "role", "conversation_id", "created_at", "updated_at", "hash",
    "user_id", "agent_id", "run_id", "source", "metadata", "deleted_at", "replaced_by",
    "actor_id", "memory_type", "expiration_date",
)
# mem0's per-memory fields kept in front matter (the mem0-style API sets them; see memvault.api):
# who said it (a message's `name`), mem0's memory_type, and the day (YYYY-MM-DD) after which it is hidden.
MEM0_FIELDS = ("actor_id", "memory_type", "expiration_date")
# What a memory's metadata may hold: JSON-like values the index can store and YAML can write back.
# The caps bound work and memory on hostile input (aliases make a small file a huge or endless tree).
MAX_METADATA_DEPTH = 32
MAX_METADATA_VALUES = 10_000
# libyaml recurses once per '[' or '{' and overflows the C stack (a crash, not an error) somewhere
# past 20,000 levels; no valid entry nests deeper than MAX_METADATA_DEPTH, so refuse before parsing.
MAX_FLOW_NESTING = 4 * MAX_METADATA_DEPTH
# Half of a UTF-16 pair on its own: Python strings may hold one, UTF-8 files (and git, YAML) cannot.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
YAML_BREAKS = re.compile("[\x85\u2028\u2029]")  # what YAML also reads as a line break


def now() -> datetime:
    """The current time in UTC, to the millisecond (what the files keep)."""
    moment = datetime.now(timezone.utc)
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def new_id() -> str:
    return str(uuid.uuid4())


def text_hash(text: str) -> str:
    """md5 of the body, as mem0 does: lets an exact duplicate be spotted without asking an LLM."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def surrogate_problem(text: str) -> str | None:
    """Why `text` cannot be stored as UTF-8, or None: a lone surrogate (such as '\\ud800', half
    of an emoji split by a UTF-16 client) has no UTF-8 form. Refused rather than replaced: memvault
    never changes what it was told without saying so."""
    found = LONE_SURROGATE.search(text)
    if found is None:
        return None
    return f"contains a lone surrogate U+{ord(found.group()):04X} at character {found.start()} (not valid Unicode)"


def check_text(text: str, what: str = "the memory text", max_chars: int | None = None) -> str:
    """`text` if it can be stored as it is; a UsageError saying why not otherwise."""
    problem = surrogate_problem(text)
    if problem:
        raise UsageError(f"{what} {problem}")
    if max_chars is not None and len(text) > max_chars:
        raise UsageError(f"{what} has {len(text):,} characters, more than limits.max_text_chars ({max_chars:,})")
    return text


MAX_SCOPE_CHARS = 200


def check_scopes(scopes: dict[str, Any] | None) -> dict[str, str]:
    """Scope values as strings, the one rule for every caller (writes, search, filters): an unknown key
    is refused so a typo never widens a search; None or "" means "not given"; a value is at most
    MAX_SCOPE_CHARS printable characters (it is written to front matter and compared in SQL)."""
    result: dict[str, str] = {}
    for key, value in (scopes or {}).items():
        if key not in SCOPE_KEYS:
            raise UsageError(f"unknown scope {key!r} (expected {', '.join(SCOPE_KEYS)})")
        if value is None or value == "":
            continue
        text = str(value)
        if len(text) > MAX_SCOPE_CHARS or any(ord(c) < 32 for c in text):
            raise UsageError(f"invalid {key} {text[:40]!r}: at most {MAX_SCOPE_CHARS} printable characters")
        result[key] = check_text(text, f"scope {key}")
    return result


def metadata_problem(value: Any) -> str | None:
    """Why `value` cannot be a memory's metadata, or None. Metadata is a mapping of string keys to
    strings, finite numbers, booleans, nulls, dates, and lists or mappings of those, at most
    MAX_METADATA_DEPTH deep and MAX_METADATA_VALUES values in all. Walked with a stack, not recursion:
    a recursive YAML alias (`&x [*x]`) is an endless tree, found as too deep."""
    if not isinstance(value, dict):
        return "'metadata' must be a mapping of keys to values"
    stack: list[tuple[Any, str, int]] = [(value, "metadata", 1)]
    seen = 0
    while stack:
        node, where, depth = stack.pop()
        seen += 1
        if seen > MAX_METADATA_VALUES:
            return f"'metadata' holds more than {MAX_METADATA_VALUES:,} values"
        if isinstance(node, (dict, list)) and depth > MAX_METADATA_DEPTH:
            return f"'metadata' is nested deeper than {MAX_METADATA_DEPTH} levels (or holds itself)"
        if isinstance(node, dict):
            for key, item in node.items():
                if not isinstance(key, str):
                    return f"'{where}' has a key that is not a string: {key!r:.40}"
                if surrogate_problem(key):
                    return f"a key in '{where}' {surrogate_problem(key)}"
                stack.append((item, f"{where}.{key}", depth + 1))
        elif isinstance(node, list):
            stack.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(node))
        elif isinstance(node, str):
            if surrogate_problem(node):
                return f"'{where}' {surrogate_problem(node)}"
        elif isinstance(node, float):
            if not math.isfinite(node):
                return f"'{where}' is {node!r}: numbers must be finite"
        elif node is not None and not isinstance(node, (bool, int, date)):  # datetime is a date
            return f"'{where}' holds a {type(node).__name__}, which metadata cannot keep"
    return None


def check_metadata(value: Any) -> dict[str, Any]:
    """`value` if it can be a memory's metadata (see metadata_problem); a UsageError otherwise."""
    problem = metadata_problem(value)
    if problem:
        raise UsageError(problem)
    return value


def flow_nesting(text: str) -> int:
    """How deeply '[' and '{' nest in YAML text (quotes ignored: an overestimate is safe here)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(0, depth - 1)
    return deepest


def front_matter_too_nested(content: str) -> bool:
    head_end = content.find("\n---", 3)
    head = content if head_end < 0 else content[:head_end]
    if head.count("[") + head.count("{") <= MAX_FLOW_NESTING:  # the common case: no need to scan
        return False
    return flow_nesting(head) > MAX_FLOW_NESTING


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
    # To the millisecond, as files keep times: what is read equals what it is written back as.
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


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
    actor_id: str | None = None
    memory_type: str | None = None
    expiration_date: str | None = None

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


def render(entry: Entry) -> str:
    """The markdown file for an entry: YAML front matter, then the text. Raises UsageError for an
    entry no file can hold as it is (lone surrogates, metadata YAML or the index cannot keep)."""
    import yaml

    check_text(entry.text)
    check_metadata(entry.metadata)
    meta: dict[str, Any] = {}
    for key in FIELD_ORDER:
        value = entry.hash if key == "hash" else getattr(entry, key)
        if isinstance(value, datetime):
            value = format_time(value)
        if value is None or (key == "metadata" and not value):
            continue
        if isinstance(value, str):
            check_text(value, f"'{key}'")
        meta[key] = value
    header = yaml.dump(meta, Dumper=yaml_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = entry.text if entry.text.endswith("\n") else entry.text + "\n"
    return f"---\n{header}---\n\n{body}"


@functools.cache
def yaml_dumper():
    """PyYAML's safe dumper, except that strings holding a character YAML reads as a line break
    (NEL, LS, PS) are double-quoted: written plain or single-quoted, they came back as spaces."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        style = '"' if YAML_BREAKS.search(value) else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, represent_str)
    return Dumper


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

    # Windows line ends read as "\n" with or without front matter (python-frontmatter converts them).
    content = content.lstrip("\ufeff").replace("\r\n", "\n")
    if content.startswith("---"):
        if front_matter_too_nested(content):
            raise EntryFormatError(where, f"broken front matter: nested deeper than {MAX_FLOW_NESTING} levels")
        try:
            post = frontmatter.loads(content, handler=yaml_handler())
        except TypeError:  # python-frontmatter passes the keys as keyword arguments
            raise EntryFormatError(where, "front matter has a key that is not a string") from None
        except Exception as exc:  # noqa: BLE001 - besides YAMLError, PyYAML's constructors raise ValueError,
            # OverflowError, RecursionError and even IndexError (an empty `!!float`) on odd documents
            text = str(exc).strip()
            first = text.splitlines()[0] if text else type(exc).__name__
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
        raise EntryFormatError(where, f"unknown role {role!r:.60} (expected one of {', '.join(ROLES)})")
    metadata = meta.get("metadata") or {}
    problem = metadata_problem(metadata) or surrogate_problem(body)
    if problem:
        raise EntryFormatError(where, problem)

    def optional(key: str) -> str | None:
        value = meta.get(key)
        return None if value is None or value == "" else field_text(key, value)

    def field_text(key: str, value: Any) -> str:
        if isinstance(value, (dict, list, set, bytes)):
            raise EntryFormatError(where, f"'{key}' must be a plain value, not a {type(value).__name__}")
        text = str(value)
        if surrogate_problem(text):
            raise EntryFormatError(where, f"'{key}' {surrogate_problem(text)}")
        return text

    created = parse_time(meta["created_at"], "created_at", where)
    return Entry(
        text=body.strip(),  # as python-frontmatter strips a body after front matter, and clean_text a new text
        role=role,
        conversation_id=field_text("conversation_id", meta["conversation_id"]),
        id=field_text("id", meta["id"]),
        created_at=created,
        updated_at=parse_time(meta.get("updated_at"), "updated_at", where) or created,
        user_id=optional("user_id"),
        agent_id=optional("agent_id"),
        run_id=optional("run_id"),
        metadata=metadata,
        source=optional("source"),
        deleted_at=parse_time(meta.get("deleted_at"), "deleted_at", where),
        replaced_by=optional("replaced_by"),
        **{key: optional(key) for key in MEM0_FIELDS},
    )
