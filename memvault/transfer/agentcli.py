"""agent-cli memory folders (`agent-cli memory proxy --memory-path DIR`): `entries/<conversation>/` with
`turns/user`, `turns/assistant`, `facts` and `summaries/summary.md`, each a markdown file with YAML front
matter (`id`, `conversation_id`, `role`, `created_at`, and `source_id`, `summary_kind`, `replaced_by`);
tombstones where agent-cli moves them (`entries/deleted/<conversation>/...`) or where memvault does
(`entries/<conversation>/deleted/...`).

Each file is copied into the vault as an entry of the same conversation, keeping its id (an id that is
not a UUID, such as a summary's `chat::summary-summary`, gets a stable UUID and is kept in
`metadata.agent_cli_id`), its time (to the millisecond), its fact's source turn and its tombstone's
`replaced_by`. A conversation id that cannot be a folder name as it is ("My Chat") is slugged as
memvault slugs scopes, and kept in `metadata.agent_cli_conversation`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import MemvaultError, UnsafePathError, UsageError
from memvault.transfer.batches import Batch, Item, checked_text, epoch_time, mapped_id
from memvault.transfer.source_files import read_bytes
from memvault.vault.format import layout
from memvault.vault.format.entry import ROLES, SCOPE_KEYS, Entry
from memvault.vault.format.fields import check_metadata, check_scopes
from memvault.vault.format.markdown import yaml_handler

if TYPE_CHECKING:
    from memvault.core import Memvault

FORMAT = "agent-cli"
DELETED = "deleted"


def entries_folder(path: Path) -> Path | None:
    """The `entries/` folder of an agent-cli memory folder (given the folder, or entries/ itself)."""
    for candidate in (path / layout.ENTRIES, path):
        if candidate.is_dir() and candidate.name == layout.ENTRIES:
            return candidate
    return None


def batches(memvault: Memvault, path: Path, conversation: str | None, notes: list[str]) -> list[Batch]:
    entries = entries_folder(path)
    if entries is None:
        raise UsageError(f"{path} is not an agent-cli memory folder (no entries/ in it)")
    grouped: dict[str, list[Item]] = defaultdict(list)
    for file in sorted(entries.rglob("*.md")):
        rel = file.relative_to(entries)
        if file.name.startswith("."):
            continue  # an atomic write's temporary file
        if any((entries / Path(*rel.parts[:depth])).is_symlink() for depth in range(1, len(rel.parts) + 1)):
            notes.append(f"{file}: left out: a symbolic link (never followed)")
            continue
        entry = entry_of(memvault, file, rel, conversation, notes)
        if entry is not None:
            grouped[entry.conversation_id].append(Item(entry))
    return [Batch(name, name, name, sorted(items, key=lambda item: item.entry.created_at))
            for name, items in sorted(grouped.items())]


def entry_of(memvault: Memvault, file: Path, rel: Path, conversation: str | None, notes: list[str]) -> Entry | None:
    import frontmatter

    limit = memvault.settings.limits.max_file_bytes
    if file.stat().st_size > limit:
        notes.append(f"{file}: left out: larger than limits.max_file_bytes")
        return None
    try:
        data = read_bytes(file, limit)  # a FIFO or a device named *.md: refused, never waited on or read on
    except MemvaultError as exc:
        notes.append(f"{file}: left out: {exc}")
        return None
    try:
        post = frontmatter.loads(data.decode("utf-8"), handler=yaml_handler())
    except Exception as exc:  # noqa: BLE001 - YAML raises many kinds; the file is reported, never guessed at
        notes.append(f"{file}: left out: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return None
    meta = post.metadata
    role = str(meta.get("role") or "")
    if role not in ROLES or not meta.get("id") or not meta.get("conversation_id"):
        notes.append(f"{file}: left out: not an agent-cli memory file (needs id, conversation_id and a role)")
        return None
    text = checked_text(memvault, post.content, str(file), notes)
    created = epoch_time(meta.get("created_at"))
    if text is None or created is None:
        if created is None:
            notes.append(f"{file}: left out: 'created_at' is not a time")
        return None
    source_conversation = str(meta["conversation_id"])
    # agent-cli writes no metadata or scopes; a folder written by memvault (the same layout) has them.
    metadata: dict[str, Any] = {**(meta.get("metadata") if isinstance(meta.get("metadata"), dict) else {}),
                                "imported_from": FORMAT}
    try:
        scopes = check_scopes({key: meta.get(key) for key in SCOPE_KEYS})
        check_metadata(metadata)
    except UsageError as exc:
        notes.append(f"{file}: left out: {exc}")
        return None
    name = conversation or folder_name(source_conversation, metadata)
    memory_id = mapped_id(FORMAT, str(meta["id"]), metadata, "agent_cli_id")
    if meta.get("summary_kind"):
        metadata["summary_kind"] = str(meta["summary_kind"])
    deleted = DELETED in rel.parts[:-1]
    return Entry(text=text, role=role, conversation_id=name, id=memory_id, created_at=created, metadata=metadata,
                 source=mapped_id(FORMAT, str(meta["source_id"])) if meta.get("source_id") else None,
                 replaced_by=mapped_id(FORMAT, str(meta["replaced_by"])) if meta.get("replaced_by") else None,
                 # agent-cli does not note when it deleted: the tombstone's last change tells.
                 deleted_at=(epoch_time(meta.get("deleted_at")) or modified(file)) if deleted else None, **scopes)


def folder_name(conversation_id: str, metadata: dict) -> str:
    try:
        return layout.check_conversation(conversation_id)
    except UnsafePathError:
        metadata["agent_cli_conversation"] = conversation_id
        return layout.check_conversation(layout.slug(conversation_id))


def modified(file: Path) -> datetime:
    return epoch_time(file.stat().st_mtime)
