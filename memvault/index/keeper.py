"""The index of one vault, kept in step with its files: the one place that opens, builds, finishes
and catches up the index (memvault.core.Memvault owns one and delegates to it).

Opened on first need (listing never loads a model). Rebuilt in full when new, corrupt or of another
model; finished when a build was interrupted (the mark is in the file, so another process's dead
build counts too). Writes made while it is closed are journalled (`journal.py`) and embedded by the
next search; writes made while it is open are embedded at once. One thread at a time: chat curates
in the background while the next turn searches, and the watcher catches up hand edits meanwhile.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import EmbeddingError, EntryFormatError, MemvaultError
from memvault.vault.format import layout

if TYPE_CHECKING:
    from memvault.index.store import IndexStore
    from memvault.vault.write.store import Vault
    from memvault.vault.write.transaction import Change

log = logging.getLogger("memvault.index")
Item = tuple[str, "str | None"]  # (memory id, its live path, or None when it is gone)


class IndexKeeper:
    """The index of `vault`, embedded with the model `embedder()` returns (loaded on first need)."""

    def __init__(self, vault: Vault, embedder: Callable[[], Any]) -> None:
        self.vault = vault
        self.embedder = embedder
        self.store: IndexStore | None = None
        self.lock = threading.RLock()
        self.on_progress: Callable[[int, int], None] | None = None  # shown during long syncs
        self.on_notice: Callable[[str], None] | None = None  # "index rebuilt..." for a person to see

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def notice(self, message: str) -> None:
        if self.on_notice:
            self.on_notice(message)

    # -- opening and catching up -----------------------------------------------------------------
    def open(self) -> IndexStore:
        """The index file, opened (created or repaired if need be) but not yet caught up."""
        if self.store is None:
            from memvault.index.store import IndexStore

            embedder = self.embedder()
            self.store = IndexStore.open(self.vault.state_dir, embedder.identity, embedder.dims)
        return self.store

    def current(self) -> IndexStore:
        """The index, caught up with every write: rebuilt in full when new, corrupt or of another
        model, finished when a build was interrupted; otherwise the journal of recent writes is embedded."""
        from memvault.vault.write.store import LockBusyError

        with self.lock:
            index = self.open()
            if index.rebuilt:
                self.notice(f"building the search index ({index.rebuild_reason})")
                self.reindex()
            elif index.build_incomplete:
                try:  # a build whose process died: finished now; one under way elsewhere is left to it
                    self.reindex(wait=0)
                    self.notice("finished an index build that was interrupted")
                except LockBusyError:
                    pass
            self.flush_journal()
            return index

    @contextmanager
    def caught_up(self) -> Iterator[IndexStore]:
        """The caught-up index, held for this thread until the block ends."""
        with self.lock:
            yield self.current()

    def reindex(self, full: bool = False, wait: float | None = None):
        """Bring the index in step with the files, embedding only what changed (`full`: everything).
        `wait`: how long to wait for the vault's lock (LockBusyError after it; default: the usual)."""
        from memvault.index import journal
        from memvault.index.catchup import sync

        with self.lock:
            index = self.open()
            if not (full or index.rebuilt or index.build_incomplete):
                skipped = self.vouched_sync(index)
                if skipped is not None:
                    return skipped
            with self.vault.lock() if wait is None else self.vault.lock(wait):
                journal.take(self.vault.state_dir)  # the full comparison covers every journalled write
                result = sync(self.vault, index, self.embedder(), full=full, progress=self.on_progress)
            # Outside the vault's lock: a rewrite (a minute at 1M) reads only the index, and adds meanwhile
            # go to the log with a seq past the file's.
            index.refresh_snapshot()
            return result

    def vouched_sync(self, index: IndexStore):
        """The report of a reindex that a live `reindex --watch` vouches for (no file changed since its
        last sync, memvault.index.vouch): only the journal of memvault's own writes is indexed, no file
        is stat'ed. None when no watcher vouches: the full comparison follows."""
        import time

        from memvault.index.catchup import SyncReport
        from memvault.index.vouch import vouched

        started = time.perf_counter()
        refused = vouched(self.vault.state_dir)
        if refused is not None:
            log.debug("every file is stat'ed: %s", refused)
            return None
        self.flush_journal()
        index.refresh_snapshot()
        return SyncReport(unchanged=index.count(), seconds=time.perf_counter() - started)

    def flush_journal(self, embedder=None) -> None:
        """Index the entries written since the index last caught up (`embedder`: the model, or one
        that already holds some of their vectors)."""
        from memvault.index import journal

        if not (self.vault.state_dir / journal.FILE_NAME).exists():
            return
        from memvault.index.catchup import hash_file, index_entries, unindex  # 10 ms: not for a search with none

        with self.lock, self.vault.lock():
            pending = journal.take(self.vault.state_dir)
            gone = [memory_id for memory_id, rel in pending.items() if rel is None]
            items = []
            for memory_id, rel in pending.items():
                if rel is None:
                    continue
                try:
                    entry = self.vault.read(PurePosixPath(rel))
                    items.append((PurePosixPath(rel), entry, hash_file(self.vault.root / rel)))
                except (EntryFormatError, OSError):
                    gone.append(memory_id)  # edited away or broken since: reindex reports it
            unindex(self.store, gone)
            try:
                index_entries(self.store, embedder or self.embedder(), items)
            except BaseException:
                journal.record(self.vault.state_dir, [(e.id, str(rel)) for rel, e, _ in items])  # tried again next time
                raise

    def compact(self) -> None:
        """Vacuum the index if there is one (never build one just for that)."""
        from memvault.index.store import FILE_NAME

        if (self.vault.state_dir / FILE_NAME).exists():
            self.current().vacuum()

    # -- following writes ------------------------------------------------------------------------
    def record(self, changes: list[Change]) -> None:
        """Take note of what a committed change touched: indexed now if the index is open, else journalled."""
        from memvault.index import journal

        items: list[Item] = []
        texts: list[str] = []
        for change in changes:
            entry = change.entry
            if entry is not None and not entry.deleted:  # summaries too, as reindex indexes them
                items.append((entry.id, str(change.rel)))
                texts.append(entry.text)
            elif entry is not None:
                items.append((entry.id, None))
            else:
                gone_id = layout.indexed_id(change.rel)
                if gone_id and not moved_here(gone_id, changes):
                    items.append((gone_id, None))
        if self.store is None:
            journal.record(self.vault.state_dir, items)  # the next command that searches embeds them
            return
        self.index_now(items, texts)

    def journal_paths(self, rels: list[PurePosixPath]) -> None:
        """Journal these files for the index as they are now (live, gone or tombstoned)."""
        from memvault.index import journal

        items: list[Item] = []
        for rel in rels:
            memory_id = layout.indexed_id(rel)
            if memory_id is None:
                continue  # summaries are never indexed
            live = (self.vault.root / rel).is_file() and not layout.is_deleted_path(rel)
            items.append((memory_id, str(rel) if live else None))
        journal.record(self.vault.state_dir, items)

    def index_now(self, items: list[Item], texts: list[str]) -> None:
        """Index (id, live path or None) items at once, in a long-lived process (server, API).

        `texts`, theirs, are embedded before the items are journalled and before the index lock is
        taken, so searches in other threads neither wait for the model nor run it on these items."""
        from memvault.index import journal
        from memvault.models.embedders import KnownVectors

        try:
            embedder = KnownVectors(self.embedder(), texts)
        except EmbeddingError as exc:
            # The write is committed: a failing model must not turn it into an error. Journalled,
            # the entries are embedded by the next search once the model works again.
            journal.record(self.vault.state_dir, items)
            self.notice(f"embedding failed ({exc}): {len(items)} entr(y/ies) will be indexed by the next search")
            return
        except BaseException:
            journal.record(self.vault.state_dir, items)  # not lost: the next search embeds them
            raise
        with self.lock:  # journalled and flushed at once: a search meanwhile would embed them again
            journal.record(self.vault.state_dir, items)
            self.flush_journal(embedder)

    def resync(self, paths: Collection[PurePosixPath], skip: Collection[str] = ()) -> None:
        """Catch up after a burst of changes to these files (a watcher's report); `skip`: paths
        whose indexing is under way elsewhere (turns on their way to a commit).

        A full sync stats every file and reads every index row (seconds at 10k memories), so the
        burst is handled by path: a file the index holds unchanged (the server's own write) costs one
        hash, others go through the journal; what the journal cannot describe falls back to the full sync."""
        from memvault.index.catchup import hash_file

        # The vault caches id -> path between its own writes; files changed by hand invalidate it too.
        self.vault.forget_paths()
        items = journal_items(self.vault.root, frozenset(p for p in paths if str(p) not in skip))
        if items is None:
            self.reindex()
            return
        with self.caught_up() as index:
            pending = []
            for memory_id, rel in items:
                row = index.by_id(memory_id)
                if rel is not None and row is not None and row["path"] == rel:
                    try:
                        if hash_file(self.vault.root / rel) == row["file_hash"]:
                            continue  # indexed as it is (typically the server's own write)
                    except OSError:
                        pass
                if rel is None and row is None:
                    continue
                pending.append((memory_id, rel))
        if pending:
            self.index_now(pending, self.live_texts([rel for _, rel in pending if rel]))

    def live_texts(self, rels: list[str]) -> list[str]:
        texts = []
        for rel in rels:
            try:
                texts.append(self.vault.read(PurePosixPath(rel)).text)
            except MemvaultError:
                continue  # broken or gone: flush_journal reports it
        return texts


def journal_items(root, paths: frozenset[PurePosixPath]) -> list[Item] | None:
    """(id, live path or None) for each changed entry file, removals first (the journal keeps the
    last word per id); None when only a full sync can tell what changed."""
    gone: list[Item] = []
    live: list[Item] = []
    for rel in sorted(paths):
        path = root / rel
        if layout.is_workspace_path(rel):
            return None  # a core file or a journal day: rare, and only reading it tells whether it is empty
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


def moved_here(memory_id: str, changes: list[Change]) -> bool:
    """Whether a change puts `memory_id` live at another path (a restore moves its tombstone back): the
    file that left is a move, not the memory's removal from the index."""
    return any(c.entry is not None and not c.entry.deleted and c.entry.id == memory_id for c in changes)
