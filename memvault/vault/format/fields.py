"""What an entry's fields may hold (text, conversation id, scopes, metadata, unknown front matter keys),
checked one way for every caller, and a new entry made from given fields (`memvault add --jsonl`)."""

from __future__ import annotations

import math
import re
from datetime import date
from typing import Any

from memvault.errors import UnsafePathError, UsageError
from memvault.vault.format.entry import FIELD_ORDER, ROLES, SCOPE_KEYS, Entry, iso_time, now

# What a memory's metadata may hold: JSON-like values the index can store and YAML can write back.
# The caps bound work and memory on hostile input (aliases make a small file a huge or endless tree).
MAX_METADATA_DEPTH = 32
MAX_METADATA_VALUES = 10_000
# Half of a UTF-16 pair on its own: Python strings may hold one, UTF-8 files (and git, YAML) cannot.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def surrogate_problem(text: str) -> str | None:
    """Why `text` cannot be stored as UTF-8, or None: a lone surrogate (such as '\\ud800', half
    of an emoji split by a UTF-16 client) has no UTF-8 form. Refused rather than replaced: memvault
    never changes what it was told without saying so."""
    found = LONE_SURROGATE.search(text)
    if found is None:
        return None
    return f"contains a lone surrogate U+{ord(found.group()):04X} at character {found.start()} (not valid Unicode)"


def check_text(text: str, what: str = "the memory text", max_chars: int | None = None) -> str:
    """`text` if it can be stored as it is; a UsageError saying why not otherwise. The length first:
    a 20 MB text is refused without being read."""
    if max_chars is not None and len(text) > max_chars:
        raise UsageError(f"{what} has {len(text):,} characters, more than limits.max_text_chars ({max_chars:,})")
    problem = surrogate_problem(text)
    if problem:
        raise UsageError(f"{what} {problem}")
    return text


MAX_CONVERSATION_ID = 200


def check_conversation_id(conversation: str) -> str:
    """A conversation id as a client names it ("My Chat", "a/b"): any printable text. Its entries
    carry it as sent; their folder is `layout.folder_for(id)`, so the id itself never names a path."""
    import unicodedata

    if not isinstance(conversation, str) or not conversation.strip():
        raise UnsafePathError("conversation name is empty")
    conversation = unicodedata.normalize("NFC", conversation.strip())
    if len(conversation) > MAX_CONVERSATION_ID or not conversation.isprintable() or surrogate_problem(conversation):
        raise UnsafePathError(f"invalid conversation id {conversation[:60]!r}: at most {MAX_CONVERSATION_ID} "
                              "printable characters")
    refuse_secret(conversation, "conversation id")
    return conversation


def refuse_secret(value: str, name: str) -> None:
    """An id that holds a secret's value (a token, "pw=..."): refused, never redacted, for an id names
    a folder and is compared as given. The message does not repeat the value."""
    from memvault.text.secret_finder import holds_secret

    if holds_secret(value):
        raise UsageError(f"invalid {name}: it holds what looks like a secret (a password, key or token); "
                         "ids are written to folder names and front matter: choose another")


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
        refuse_secret(text, key)
    return result


def metadata_problem(value: Any, name: str = "metadata") -> str | None:
    """Why `value` cannot be a memory's metadata, or None. Metadata is a mapping of string keys to
    strings, finite numbers, booleans, nulls, dates, and lists or mappings of those, at most
    MAX_METADATA_DEPTH deep and MAX_METADATA_VALUES values in all. Walked with a stack, not recursion:
    a recursive YAML alias (`&x [*x]`) is an endless tree, found as too deep."""
    if not isinstance(value, dict):
        return f"'{name}' must be a mapping of keys to values"
    stack: list[tuple[Any, str, int]] = [(value, name, 1)]
    seen = 0
    while stack:
        node, where, depth = stack.pop()
        seen += 1
        if seen > MAX_METADATA_VALUES:
            return f"'{name}' holds more than {MAX_METADATA_VALUES:,} values"
        if isinstance(node, (dict, list)) and depth > MAX_METADATA_DEPTH:
            return f"'{name}' is nested deeper than {MAX_METADATA_DEPTH} levels (or holds itself)"
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


def check_extra(extra: dict[str, Any]) -> dict[str, Any]:
    """Unknown front matter keys: any JSON-like values (as metadata), never a key memvault owns."""
    problem = metadata_problem(extra, "front matter")
    if problem:
        raise UsageError(problem)
    owned = sorted(set(extra) & set(FIELD_ORDER))
    if owned:
        raise UsageError(f"front matter key {owned[0]!r} is memvault's own, not an extra one")
    return extra


# What one object of `memvault add --jsonl` may give: the text and front matter fields of a new entry.
GIVEN_FIELDS = ("text", "role", "conversation_id", "created_at", "user_id", "agent_id", "run_id", "metadata", "source")


def entry_from_fields(fields: dict[str, Any], max_chars: int | None = None) -> Entry:
    """A new entry from given fields (GIVEN_FIELDS; "conversation" is read as conversation_id), each
    checked as a file would be: UsageError naming the first field that cannot be kept. The id is new."""
    fields = dict(fields)
    if "conversation" in fields:
        fields.setdefault("conversation_id", fields.pop("conversation"))
    unknown = sorted(set(fields) - set(GIVEN_FIELDS))
    if unknown:
        raise UsageError(f"unknown field {unknown[0]!r} (expected {', '.join(GIVEN_FIELDS)})")
    text = fields.get("text")
    if not isinstance(text, str) or not text.strip():
        raise UsageError("'text' must be a non-empty string")
    role = fields.get("role") or "memory"
    if role not in ROLES or role == "summary":
        raise UsageError(f"unknown role {str(role)[:40]!r} (expected memory, user or assistant)")
    created = fields.get("created_at")
    try:
        created_at = iso_time(created) if created is not None else now()
    except ValueError:
        raise UsageError(f"'created_at' is not an ISO 8601 time: {created!r:.60}") from None
    source = fields.get("source")
    if source is not None and not isinstance(source, str):
        raise UsageError("'source' must be a string (the id of the entry this came from)")
    return Entry(text=check_text(text.strip(), max_chars=max_chars), role=role,
                 conversation_id=check_conversation_id(fields.get("conversation_id") or "default"),
                 created_at=created_at, metadata=check_metadata(fields.get("metadata") or {}), source=source,
                 **check_scopes({key: fields.get(key) for key in SCOPE_KEYS}))
