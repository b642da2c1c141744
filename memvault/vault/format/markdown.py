"""An entry's markdown file: YAML front matter (in FIELD_ORDER, so files diff cleanly), then the text.
`render` writes one, `parse` reads one and says exactly what is wrong, never guessing (pure code)."""

from __future__ import annotations

import functools
import re
from datetime import datetime
from typing import Any

from memvault.errors import EntryFormatError
from memvault.vault.format.entry import FIELD_ORDER, MEM0_FIELDS, ROLES, TRIPLE_KEYS, Entry, format_time, parse_time
from memvault.vault.format.fields import (
    MAX_METADATA_DEPTH,
    check_extra,
    check_metadata,
    check_text,
    metadata_problem,
    surrogate_problem,
)

# libyaml recurses once per '[' or '{' and overflows the C stack (a crash, not an error) somewhere
# past 20,000 levels; no valid entry nests deeper than MAX_METADATA_DEPTH, so refuse before parsing.
MAX_FLOW_NESTING = 4 * MAX_METADATA_DEPTH
YAML_BREAKS = re.compile("[\x85\u2028\u2029]")  # what YAML also reads as a line break


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
    check_extra(entry.extra)
    meta.update((key, value) for key, value in entry.extra.items() if key not in meta)
    header = yaml.dump(meta, Dumper=yaml_dumper(), sort_keys=False, allow_unicode=True, default_flow_style=False)
    body = entry.text if entry.text.endswith("\n") else entry.text + "\n"
    return f"---\n{header}---\n\n{body}"


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
    extra = {key: value for key, value in meta.items() if key not in FIELD_ORDER}
    problem = metadata_problem(metadata) or surrogate_problem(body) or metadata_problem(extra, "front matter")
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
        **{key: optional(key) for key in TRIPLE_KEYS},
        deleted_at=parse_time(meta.get("deleted_at"), "deleted_at", where),
        replaced_by=optional("replaced_by"),
        **{key: optional(key) for key in MEM0_FIELDS},
        extra=extra,
    )


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
