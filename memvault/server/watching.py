"""Keeping the index in step with the files while the server runs (hand edits are searchable at once).

A full sync stats every file and reads every index row: seconds at 10k memories, with the index
locked, after each of the server's own commits. So a burst of changed entry files is handled by
path: files the index already holds unchanged (the server's own writes) cost one hash, others go
through the write journal; anything the journal cannot describe (a folder moved in or out, a file
without an id in its name) falls back to the full sync.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from pathlib import PurePosixPath

from memvault.errors import MemvaultError
from memvault.vault import layout

log = logging.getLogger("memvault.server")


def journal_items(root, paths: frozenset[PurePosixPath]) -> list[tuple[str, str | None]] | None:
    """(id, live path or None) for each changed entry file, removals first (the journal keeps the
    last word per id); None when only a full sync can tell what changed."""
    gone: list[tuple[str, str | None]] = []
    live: list[tuple[str, str | None]] = []
    for rel in sorted(paths):
        path = root / rel
        if not rel.parts or rel.parts[0] != layout.ENTRIES:
            continue  # notes and other files beside the entries are not indexed
        if rel.name == layout.SUMMARY_FILE:
            continue  # summaries are injected from the file, never indexed
        if not layout.is_entry_path(rel):
            if path.is_dir() or not path.exists():
                return None  # a folder came or went: its files are not in this burst
            continue
        memory_id = layout.id_from_filename(rel.name)
        if memory_id is None:
            return None  # a hand-named file: its id is inside; the full sync reads it
        if path.is_file() and not layout.is_deleted_path(rel):
            live.append((memory_id, str(rel)))
        else:
            gone.append((memory_id, None))
    return gone + live


def resync(core, paths: frozenset[PurePosixPath], own: Collection[str] = ()) -> None:
    """Bring the index up to date after a burst of file changes; `own`: paths the server wrote and
    indexes itself (turns on their way to a commit), left to it."""
    from memvault.index.sync import hash_file

    # The vault caches id -> path between its own writes; files changed by hand invalidate it too.
    core.vault.forget_paths()
    items = journal_items(core.vault.root, frozenset(p for p in paths if str(p) not in own))
    if items is None:
        core.reindex()
        return
    with core._index_lock:
        index = core.index()
        pending = []
        for memory_id, rel in items:
            row = index.by_id(memory_id)
            if rel is not None and row is not None and row["path"] == rel:
                try:
                    if hash_file(core.vault.root / rel) == row["file_hash"]:
                        continue  # indexed as it is (typically the server's own write)
                except OSError:
                    pass
            if rel is None and row is None:
                continue
            pending.append((memory_id, rel))
    if pending:
        core.index_now(pending, live_texts(core.vault, [rel for _, rel in pending if rel]))


def live_texts(vault, rels: list[str]) -> list[str]:
    texts = []
    for rel in rels:
        try:
            texts.append(vault.read(PurePosixPath(rel)).text)
        except MemvaultError:
            continue  # broken or gone: flush_journal reports it
    return texts


def start_watcher(core, stop: threading.Event, own: Collection[str] = (),
                  ready_timeout: float = 10.0) -> threading.Thread:
    """Watch the vault in a daemon thread until `stop` is set (`own`: see resync)."""
    from memvault.index.watch import watch

    def on_change(paths: frozenset[PurePosixPath]) -> None:
        try:
            resync(core, paths, own)
        except MemvaultError as exc:
            log.warning("index sync after a file change failed: %s", exc)

    def run() -> None:
        try:
            watch(core.vault, on_change, stop_event=stop, ready=ready)
        except Exception:  # noqa: BLE001 - the server keeps serving; searches still flush the journal
            log.exception("the vault watcher stopped")

    ready = threading.Event()
    thread = threading.Thread(target=run, name="memvault-watch", daemon=True)
    thread.start()
    if not ready.wait(ready_timeout):
        log.warning("the vault watcher did not start in time; hand edits are indexed at the next reindex")
    return thread
