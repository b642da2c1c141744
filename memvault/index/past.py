"""The search index of the vault as it was at a past commit (time travel), cached per commit.

Chosen over replaying the journal: git already holds every past state, and a commit never changes,
so neither does its index. `.memvault/asof/<sha>/index.sqlite` is built once from the commit's entry
files (memvault.vault.git.timetravel) and reused by every later search as of that commit. Vectors whose
text today's index already holds are copied from it through a read-only connection, so a past index
costs the embedding of only the texts that have since changed, and today's index is never written.
At most KEEP past indexes are kept; the least recently used beyond that are removed.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.index import db
from memvault.index.catchup import Pending, write_entries
from memvault.index.rows import stored_vectors
from memvault.index.store import FILE_NAME, IndexStore
from memvault.vault.format.entry import Entry
from memvault.vault.git.timetravel import PastCommit, entries_at

if TYPE_CHECKING:
    from memvault.models.embedders import Embedder
    from memvault.vault.write.store import Vault

FOLDER = "asof"
KEEP = 8


def past_index(vault: Vault, embedder: Embedder, past: PastCommit) -> IndexStore:
    """The index of the vault's live entries at `past` (built on first use); the caller closes it."""
    from filelock import FileLock

    root = vault.state_dir / FOLDER
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{past.sha}.lock")):  # two processes never build the same past at once
        index = IndexStore.open(root / past.sha, embedder.identity, embedder.dims)
        if index.rebuilt or index.build_incomplete:
            _build(index, vault, embedder, past)
    os.utime(root / past.sha)  # most recently used: evicted last
    evict(root, keep=KEEP)
    return index


def _build(index: IndexStore, vault: Vault, embedder: Embedder, past: PastCommit) -> None:
    index.clear()
    index.begin_build(f"as of {past.sha[:12]}")
    items: dict[str, Pending] = {}
    for rel, entry in entries_at(vault.git, past):
        if isinstance(entry, Entry) and entry.id not in items:  # a broken file is left out, as sync does
            items[entry.id] = Pending(PurePosixPath(rel), entry, entry.hash)
    texts = {item.entry.hash: item.entry.text for item in items.values()}
    known = vectors_of(vault.state_dir / FILE_NAME, embedder.identity, texts)
    from memvault.models.embedders import KnownVectors

    # Only what today's index lacks is embedded, once, in batches.
    write_entries(index, KnownVectors(embedder, list(texts.values()), known), list(items.values()))
    index.take_rebuild_reason()
    index.finish_build()


def vectors_of(path: Path, identity: str, texts: dict[str, str]) -> dict[str, Any]:
    """text -> vector for those of `texts` (text hash -> text) that another index (today's) holds,
    embedded by the same model. Read-only: the file is never changed. Empty when it is missing,
    unreadable or of another model."""
    import apsw

    if not texts or not path.exists():
        return {}
    try:
        conn = db.connect(path, readonly=True)
    except (apsw.Error, OSError):
        return {}
    try:
        if f"{db.get_meta(conn, 'embedder')}" != identity:
            return {}
        wanted = set(texts.values())
        rows_of: dict[str, list[int]] = {}
        for rowid, text in conn.execute(
                "SELECT rowid, text FROM entries WHERE text_hash IN (SELECT value FROM json_each(?))",
                (json.dumps(list(texts)),)):
            if text in wanted:
                rows_of.setdefault(text, []).append(rowid)
        vectors = stored_vectors(conn, [rowid for rowids in rows_of.values() for rowid in rowids])
        found: dict[str, Any] = {}
        for text, rowids in rows_of.items():  # the first of its rows that has a vector
            vector = next((vectors[rowid] for rowid in rowids if rowid in vectors), None)
            if vector is not None:
                found[text] = vector
        return found
    except apsw.Error:
        return {}
    finally:
        conn.close()


def evict(root: Path, keep: int) -> None:
    """Remove all but the `keep` most recently used past indexes."""
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True)
    for folder in folders[keep:]:
        shutil.rmtree(folder, ignore_errors=True)
        (root / f"{folder.name}.lock").unlink(missing_ok=True)
