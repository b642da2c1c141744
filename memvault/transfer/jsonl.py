"""JSONL: one entry a line, every front matter field, that moves a vault's files exactly.

A line is the entry as `--json` shows it (`id`, `role`, `conversation_id`, times, `hash`, scopes,
`metadata`, `source`, `deleted_at`, `replaced_by`, `text`) plus `path`, the file's place in the vault.
When memvault's own rendering of the entry would not give the file's bytes back (a hand-written file,
a time to the microsecond), or the file has front matter keys a line has no field for (a curated
fact's `model` and `session`, another program's own), the line also carries `file`: the file as it is.
Importing the export into an empty vault so reproduces every file byte for byte, tombstones and
summaries included. Lines made by hand or by other programs may leave out everything but `text`.

Core files a person has written in and journal days come after the entries, as `path` and `file`
only: they are not entries, and import restores them through the facade (Workspace.restore_workspace).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import EntryFormatError, UsageError
from memvault.transfer.batches import Batch, Item, stable_id
from memvault.transfer.source_files import read_bytes
from memvault.vault.format import layout
from memvault.vault.format.entry import FIELD_ORDER, MEM0_FIELDS, TRIPLE_KEYS, Entry, parse_time, text_hash
from memvault.vault.format.fields import check_metadata, check_scopes, check_text
from memvault.vault.format.markdown import parse, render

if TYPE_CHECKING:
    from memvault.core import Memvault

TEXT_FIELDS = ("source", "replaced_by")
DELETED = "deleted"


def export_lines(memvault: Memvault, skipped: list[str]) -> Iterator[str]:
    """Every entry file of the vault (tombstones and summaries too) as a JSON line, in the vault's
    order; files that cannot be read as entries are named in `skipped` and left out."""
    for rel, item in memvault.walk_entries(include_deleted=True):
        if isinstance(item, EntryFormatError):
            skipped.append(str(item))
            continue
        data = (memvault.root / rel).read_bytes()
        record = {"path": str(rel), **item.to_dict()}
        # Keys beyond the line's fields (Entry.extra: a curated fact's model and session, agent-cli's
        # own) are in the file only: it travels with the line, or they would be lost on import.
        if item.extra or render(item).encode("utf-8") != data:
            record["file"] = data.decode("utf-8")
        yield json.dumps(record, ensure_ascii=False) + "\n"
    for rel, text in memvault.workspace_texts():
        yield json.dumps({"path": str(rel), "file": text}, ensure_ascii=False) + "\n"


def read_records(text: str, where: str) -> list[tuple[str, dict]]:
    """(place, object) for each non-empty line; a line that is not a JSON object is an error."""
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        place = f"{where}, line {number}"
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{place}: not JSON ({exc})") from None
        except RecursionError:  # json.loads recurses once per level
            raise UsageError(f"{place}: nested too deeply") from None
        if not isinstance(record, dict):
            raise UsageError(f"{place}: expected an object with at least 'text'")
        records.append((place, record))
    return records


def batches(memvault: Memvault, text: str, where: str, conversation: str | None = None,
            workspace: dict[PurePosixPath, str] | None = None) -> list[Batch]:
    """Every line checked before anything is written (one bad line stops the import with its line
    number), then one batch per conversation, in the order they first appear. Lines that carry a core
    file or a journal day go into `workspace` (path -> text) instead."""
    grouped: dict[str, list[Item]] = {}
    places: dict[str, str] = {}  # file -> the line that gives it
    for place, record in read_records(text, where):
        rel = PurePosixPath(str(record.get("path") or ""))
        if layout.is_workspace_path(rel) and not rel.is_absolute():
            if not isinstance(record.get("file"), str) or set(record) - {"path", "file"}:
                raise UsageError(f"{place}: a core file or journal day is given as 'path' and 'file' only")
            if workspace is not None:
                workspace[rel] = check_text(record["file"], f"{place}: 'file'")
            continue
        try:
            item = item_of(memvault, record, conversation)
        except (EntryFormatError, UsageError) as exc:
            raise UsageError(f"{place}: {getattr(exc, 'reason', exc)}") from None
        first = places.setdefault(str(item.path), place)
        if first != place:  # two texts for one file: which one the user meant cannot be told
            raise UsageError(f"{place}: the file {item.path} is also given by {first.rpartition(', ')[2]}")
        grouped.setdefault(item.path.parts[1], []).append(item)
    return [Batch(name, name, name, items) for name, items in grouped.items()]


def item_of(memvault: Memvault, record: dict, conversation: str | None) -> Item:
    rel = entry_path(record["path"]) if record.get("path") is not None else None
    if record.get("file") is not None:
        item = exact_item(memvault, record, rel)
    else:
        entry = entry_of(record, rel, conversation)
        # Without a path, the layout's place (which checks the id is a UUID, so it can name the file).
        item = Item(entry, render(entry).encode("utf-8"), rel or layout.relative_path(entry))
    named = layout.id_from_filename(item.path.name)
    if named not in (None, item.entry.id):  # the vault finds an entry by the id in its file name
        raise UsageError(f"'path' names id {named}, the entry's id is {item.entry.id}")
    limit = memvault.settings.limits.max_file_bytes
    if len(item.data) > limit:  # written, it would be reported as broken, never read
        raise UsageError(f"the file would be {len(item.data):,} bytes, more than limits.max_file_bytes "
                         f"({limit:,})")
    return item


def exact_item(memvault: Memvault, record: dict, rel: PurePosixPath | None) -> Item:
    """A line carrying its file: the file is written as given; what it reads as must be the line's entry."""
    content = record["file"]
    if not isinstance(content, str) or rel is None:
        raise UsageError("'file' must be the file's text, with the 'path' it goes to")
    defaults = memvault.entry_defaults(rel)  # as the vault will read the file once written
    if record.get("created_at"):
        defaults["created_at"] = parse_time(record["created_at"], "created_at", str(rel))
    entry = parse(content, str(rel), defaults)
    if record.get("id") not in (None, entry.id):
        raise UsageError(f"'id' {record['id']!r:.60} differs from the id in 'file' ({entry.id})")
    return Item(entry, content.encode("utf-8"), rel)


def entry_of(record: dict, rel: PurePosixPath | None, conversation: str | None) -> Entry:
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise UsageError("'text' must be a non-empty string")
    check_text(text, "'text'")
    role = str(record.get("role") or "memory")
    name = record.get("conversation_id") or (layout.conversation_folder_of(rel) if rel else None) or conversation \
        or "default"
    if not isinstance(name, str):
        raise UsageError(f"'conversation_id' must be a string, got {name!r:.40}")
    created = parse_time(record.get("created_at"), "created_at", "line")
    fields: dict[str, Any] = {
        "text": text.strip(), "role": role, "conversation_id": layout.check_conversation_id(name),
        # Without an id, the one its path names, else one made of the line's content: the same line
        # imported twice is one entry.
        "id": str(record.get("id") or (rel and layout.id_from_filename(rel.name))
                  or stable_id("jsonl", name, role, text)),
        "updated_at": parse_time(record.get("updated_at"), "updated_at", "line"),
        "deleted_at": parse_time(record.get("deleted_at"), "deleted_at", "line"),
        "metadata": check_metadata(record.get("metadata") or {}),
        **check_scopes({key: record.get(key) for key in ("user_id", "agent_id", "run_id")}),
        **{key: str(record[key]) for key in TEXT_FIELDS if record.get(key)},
        # The triple and mem0's fields: front matter the export writes, so the round trip keeps them.
        **{key: str(record[key]) for key in (*TRIPLE_KEYS, *MEM0_FIELDS) if record.get(key)},
    }
    if created is not None:
        fields["created_at"] = created
    entry = Entry(**fields)
    if role not in layout.KIND_DIRS:
        raise UsageError(f"unknown role {role!r:.40} (expected one of {', '.join(layout.KIND_DIRS)})")
    if record.get("hash") not in (None, text_hash(entry.text)):
        raise UsageError("'hash' does not match 'text' (the line was changed after it was exported?)")
    unknown = sorted(set(record) - {*FIELD_ORDER, "text", "path", "file"})
    if unknown:
        raise UsageError(f"unknown field {unknown[0]!r:.40} (put free key/values under 'metadata')")
    return entry


def entry_path(value: Any) -> PurePosixPath:
    """A line's `path`, if it is a place memvault reads an entry from (entries/<conversation>/[deleted/]
    facts|turns/user|turns/assistant|summaries/<name>.md, day folders <YYYY>/<MM>/<DD>/ included, or a
    tombstone where agent-cli puts them, entries/deleted/<conversation>/...); nothing else is ever written."""
    text = str(value)
    rel = PurePosixPath(text)
    parts = rel.parts
    if (rel.is_absolute() or "\\" in text or ".." in parts or not layout.is_entry_path(rel)
            or any(ord(c) < 32 for c in text)):
        raise UsageError(f"'path' {text!r:.80} is not an entry file under entries/")
    if parts[1] == DELETED and len(parts) > 4:  # agent-cli's tombstones: entries/deleted/<conversation>/<kind>/
        layout.check_conversation(parts[2])
    else:
        layout.check_conversation(parts[1])
    if layout.kind_of_parts(parts) not in layout.KIND_DIRS.values():  # day folders included
        raise UsageError(f"'path' {text!r:.80} is not in a folder memvault reads entries from")
    return rel


def read_source(path: str) -> str:
    """The JSONL text of a file, or of standard input for '-'."""
    import sys
    from pathlib import Path

    data = sys.stdin.buffer.read() if path == "-" else read_bytes(Path(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{'standard input' if path == '-' else path} is not UTF-8 text") from None
