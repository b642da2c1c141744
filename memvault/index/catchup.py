"""Keeping the index in step with the files: scan (I/O: a snapshot of the files), diff (pure: what
differs from the index), then apply (make it so).

Files are compared by a hash of their bytes; a cheap (mtime_ns, size) check recorded per row lets
an unchanged vault of 10k files be confirmed without reading them. Only entries whose text is new
to the index are embedded: a move, or an edit of the front matter alone, keeps its vector.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import marshal
import os
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import EntryFormatError
from memvault.index.rows import IndexedFile, IndexRow
from memvault.index.store import IndexStore
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.listing import FolderCache
from memvault.vault.format.reading import LINK_REASON, too_large

if TYPE_CHECKING:
    from memvault.models.embedders import Embedder
    from memvault.vault.format.entry import Entry
    from memvault.vault.write.store import Vault

Progress = Callable[[int, int], None]  # (entries written so far, entries to write)
# A file modified this close to the moment it was hashed may change again within the same mtime
# tick (coarse file systems): its stat is not trusted, so the next sync hashes it again (as git does).
RACY_NS = 2_000_000_000
DEFAULT_BATCH_SIZE = 64
# Texts given to the model in one call by a sync: enough to make batches of like lengths (LoCoMo turns
# in file order, cut into batches of 64, padded to 2.4x their tokens), few enough to hold in memory.
EMBED_CHUNK = 1024
FOLDER_CACHE = "folders.cache"  # under .memvault/: the listings of the entry folders (FolderCache)
FOLDER_CACHE_FORMAT = "memvault folder listings 1"


def hash_bytes(data: bytes) -> str:
    """The file hash the index compares (blake2b-128: fast, and a collision is not a concern here)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def hash_file(path: Path | str) -> str:
    return hash_bytes(Path(path).read_bytes())


@dataclass(frozen=True)
class Pending:
    """A file whose entry must be written to the index."""

    rel: PurePosixPath
    entry: Entry
    file_hash: str
    mtime_ns: int = 0
    size: int = -1


@dataclass(frozen=True)
class SyncPlan:
    """What differs between the vault's live files and the index."""

    new: tuple[Pending, ...] = ()
    changed: tuple[Pending, ...] = ()
    moved: tuple[Pending, ...] = ()  # same id at a new path (text unchanged: no re-embedding)
    removed: tuple[str, ...] = ()  # ids whose files are gone
    restat: tuple[tuple[str, int, int], ...] = ()  # (path, mtime_ns, size) of files whose bytes are unchanged
    unchanged: int = 0
    broken: tuple[tuple[str, str], ...] = ()  # (path, reason): reported, left alone

    @property
    def writes(self) -> tuple[Pending, ...]:
        return (*self.moved, *self.changed, *self.new)

    @property
    def is_empty(self) -> bool:
        return not (self.writes or self.removed)


@dataclass(frozen=True)
class SyncReport:
    """What a sync did."""

    added: int = 0
    updated: int = 0
    moved: int = 0
    removed: int = 0
    unchanged: int = 0
    embedded: int = 0  # texts sent to the embedding model
    broken: tuple[tuple[str, str], ...] = ()
    rebuilt: bool = False
    rebuild_reason: str | None = None
    seconds: float = field(default=0.0, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["broken"] = [{"path": path, "reason": reason} for path, reason in self.broken]
        return data


@dataclass(frozen=True)
class ScannedFile:
    """One live entry file as the scan found it. `file_hash` None: its (mtime_ns, size) matched the
    index, so it was not read. `entry` is parsed only when the bytes differ from the indexed ones."""

    rel: PurePosixPath
    mtime_ns: int
    size: int
    file_hash: str | None = None
    entry: Entry | None = None
    problem: str | None = None  # why the file is left alone (too large, unreadable, does not parse)


@dataclass(frozen=True)
class Snapshot:
    """What the vault's live entry files were at one moment: the scan's result, diff's input."""

    files: tuple[ScannedFile, ...] = ()
    links: tuple[str, ...] = ()  # symbolic links under entries/: never followed, reported
    started_ns: int = 0  # when the scan began: a file modified after (or just before) is "racy"
    # Paths whose (mtime_ns, size) matched the index: only their names are kept, since on a vault of
    # 100k unchanged files a ScannedFile and a PurePosixPath each cost more than the stat itself.
    unchanged: Collection[str] = ()


def _trusted_stamp(mtime_ns: int, started_ns: int) -> int:
    return 0 if mtime_ns >= started_ns - RACY_NS else mtime_ns


def _stat_matches(row: IndexedFile | None, mtime_ns: int, size: int) -> bool:
    return bool(row and row.mtime_ns) and (row.mtime_ns, row.size) == (mtime_ns, size)


Stamps = dict[str, tuple[int, int]]  # path -> (mtime_ns, size) the index recorded; mtime 0: never trusted


@dataclass(frozen=True)
class StatWalk:
    """The first half of a scan: every live entry and workspace file listed and stat'ed against the
    index's recorded stamps, nothing read. `unsure`: the paths a stamp does not vouch for."""

    unchanged: list[str]
    unsure: list[PurePosixPath]
    links: list[str]
    started_ns: int

    def settled(self, stamps: Stamps) -> bool:
        """Whether the index holds exactly these files, each as it was: then no row need be loaded."""
        return not self.unsure and len(self.unchanged) == len(stamps)


def stat_walk(vault: Vault, stamps: Stamps, folders: FolderCache | None = None) -> StatWalk:
    """List the vault's live entry files and workspace files (core/, journal/) and stat each one the
    index recorded; hashes and rows wait for the files whose stat differs. Changes no file (`folders`,
    the listings of folders that have not changed, is brought up to date)."""
    started = time.time_ns()
    root = os.path.join(str(vault.root), "")  # plain strings: Path objects cost more than the stat on 10k files
    lstat, get = os.lstat, stamps.get  # not followed: a link never is
    links: list[str] = []
    unchanged: list[str] = []  # names only: at 1M files an object per unchanged file cost more than its stat
    unsure: list[PurePosixPath] = []
    # A folder at a time, the per-file work inline: at a million files each generator level cost 0.3 s.
    listed = itertools.chain(vault.entry_folders(links=links, cache=folders), workspace_folders(vault, links))
    for folder, names in listed:
        prefix = f"{folder}/"
        for name in names:
            key = prefix + name
            stamp = get(key)
            if stamp is not None and stamp[0]:  # no stat for a file never indexed, or never trusted
                try:
                    stat = lstat(root + key)
                    if (stat.st_mtime_ns, stat.st_size) == stamp:
                        unchanged.append(key)
                        continue
                except OSError:
                    pass  # _scan_one reports it
            unsure.append(PurePosixPath(key))
    return StatWalk(unchanged, unsure, links, started)


def workspace_folders(vault: Vault, links: list[str]) -> Iterator[tuple[str, list[str]]]:
    """The workspace files the index holds, as (folder, names)."""
    for rel in vault.workspace_files(links):
        yield str(rel.parent), [rel.name]


def read_unsure(vault: Vault, walk: StatWalk, indexed: dict[str, IndexedFile]) -> Snapshot:
    """The second half of a scan: hash the files whose stat differs from `indexed`, parse those whose
    bytes differ."""
    root = os.path.join(str(vault.root), "")
    files = tuple(_scan_one(vault, root, rel, indexed.get(str(rel))) for rel in walk.unsure)
    return Snapshot(files=files, links=tuple(walk.links), started_ns=walk.started_ns,
                    unchanged=walk.unchanged)


def scan(vault: Vault, indexed: dict[str, IndexedFile]) -> Snapshot:
    """Walk the vault's live entry files and workspace files (core/, journal/), the I/O half of a sync:
    stat each, hash those whose stat differs from `indexed`, parse those whose bytes differ. Changes nothing."""
    stamps = {path: (row.mtime_ns, row.size) for path, row in indexed.items()}
    return read_unsure(vault, stat_walk(vault, stamps), indexed)


def _scan_one(vault: Vault, root: str, rel: PurePosixPath, row: IndexedFile | None) -> ScannedFile:
    key = str(rel)
    try:
        # Before reading: an edit after this point shows as a new stat next time. Not followed: a
        # file swapped for a link since it was listed fails to open (O_NOFOLLOW) and is reported.
        stat = os.stat(root + key, follow_symlinks=False)
        found = ScannedFile(rel, stat.st_mtime_ns, stat.st_size)
        if _stat_matches(row, stat.st_mtime_ns, stat.st_size):
            return found
        if stat.st_size > vault.max_file_bytes:  # not even hashed: reading it whole is the harm
            return replace(found, problem=too_large(vault.max_file_bytes))
        with os.fdopen(os.open(root + key, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as handle:
            found = replace(found, file_hash=hash_bytes(handle.read()))
    except OSError as exc:
        return ScannedFile(rel, 0, -1, problem=f"cannot be read: {exc.strerror}")
    if row and row.file_hash == found.file_hash:
        return found
    try:
        return replace(found, entry=vault.read(rel))
    except EntryFormatError as exc:
        return replace(found, problem=exc.reason)  # an indexed older version stays searchable


def diff(snapshot: Snapshot, indexed: dict[str, IndexedFile]) -> SyncPlan:
    """What differs between a scan of the files and the index (pure: no I/O)."""
    seen: set[str] = set()
    fresh: list[Pending] = []
    changed: list[Pending] = []
    restat: list[tuple[str, int, int]] = []
    broken: list[tuple[str, str]] = [(link, LINK_REASON) for link in snapshot.links]
    seen.update(snapshot.unchanged)
    unchanged = len(snapshot.unchanged)
    for found in snapshot.files:
        key = str(found.rel)
        seen.add(key)
        row = indexed.get(key)
        if found.problem is not None:
            broken.append((key, found.problem))
            continue
        if found.file_hash is None or _stat_matches(row, found.mtime_ns, found.size):
            unchanged += 1
            continue
        stamp = _trusted_stamp(found.mtime_ns, snapshot.started_ns)
        if row and row.file_hash == found.file_hash:
            unchanged += 1
            if stamp != row.mtime_ns or found.size != row.size:
                restat.append((key, stamp, found.size))
            continue
        if found.entry is None:  # scanned against another index: its text was never read
            broken.append((key, "not read by the scan: sync again"))
            continue
        (changed if row else fresh).append(Pending(found.rel, found.entry, found.file_hash, stamp, found.size))

    missing = {path: row for path, row in indexed.items() if path not in seen}
    missing_path_of = {row.id: path for path, row in missing.items()}
    new = [item for item in fresh if item.entry.id not in missing_path_of]
    moved = [item for item in fresh if item.entry.id in missing_path_of]

    # One id, one file: a copy of a file (same id at a second path) is reported, not indexed.
    changed_paths = {str(item.rel) for item in changed}
    owner = {row.id: path for path, row in indexed.items() if path in seen and path not in changed_paths}
    accepted: dict[str, list[Pending]] = {"changed": [], "moved": [], "new": []}
    for kind, items in (("changed", changed), ("moved", moved), ("new", new)):
        for item in items:
            path, memory_id = str(item.rel), item.entry.id
            if owner.get(memory_id, path) != path:
                broken.append((path, f"duplicate id {memory_id}: also in {owner[memory_id]}"))
                continue
            owner[memory_id] = path
            accepted[kind].append(item)
    claimed = {item.entry.id for items in accepted.values() for item in items}
    return SyncPlan(
        new=tuple(accepted["new"]), changed=tuple(accepted["changed"]), moved=tuple(accepted["moved"]),
        removed=tuple(sorted(row.id for row in missing.values() if row.id not in claimed)),
        restat=tuple(restat), unchanged=unchanged, broken=tuple(sorted(broken)),
    )


def plan(vault: Vault, index: IndexStore, relist: bool = False) -> SyncPlan:
    """Compare the vault's live entry files with the index: scan, then diff. Changes nothing but the
    cache of folder listings (`relist`: every folder listed afresh). The index's stamps come first: when
    every file matches its stamp and none is missing, no whole row is loaded."""
    stamps = index.stamps()
    folders = FolderCache({} if relist else read_folder_cache(vault.state_dir), time.time_ns() - RACY_NS)
    walk = stat_walk(vault, stamps, folders)
    if folders.changed or relist:
        atomic_write(vault.state_dir / FOLDER_CACHE, marshal.dumps((FOLDER_CACHE_FORMAT, folders.folders)))
    indexed = {} if walk.settled(stamps) else index.files()
    return diff(read_unsure(vault, walk, indexed), indexed)


def read_folder_cache(state_dir: Path) -> dict[str, Any]:
    """The folder listings the last sync kept (none when the file is missing, damaged or of another format)."""
    try:
        found, folders = marshal.loads((state_dir / FOLDER_CACHE).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return folders if found == FOLDER_CACHE_FORMAT and isinstance(folders, dict) else {}


def apply(plan: SyncPlan, vault: Vault, index: IndexStore, embedder: Embedder,
          progress: Progress | None = None) -> SyncReport:
    """Make the index match the plan. Each batch is embedded and committed on its own, so an
    interrupted sync keeps what it finished and the next one carries on from there."""
    started = time.perf_counter()
    rebuild_reason = index.take_rebuild_reason()
    removed = index.remove(plan.removed)
    index.restat(plan.restat)
    embedded = write_entries(index, embedder, plan.writes, progress)
    return SyncReport(
        added=len(plan.new), updated=len(plan.changed), moved=len(plan.moved), removed=removed,
        unchanged=plan.unchanged, embedded=embedded, broken=plan.broken,
        rebuilt=rebuild_reason is not None, rebuild_reason=rebuild_reason, seconds=time.perf_counter() - started,
    )


def sync(vault: Vault, index: IndexStore, embedder: Embedder, full: bool = False,
         progress: Progress | None = None) -> SyncReport:
    """Bring the index up to date with the vault; `full` empties it first and re-embeds everything."""
    started = time.perf_counter()
    if full:
        index.clear()
    todo = plan(vault, index, relist=full)
    if not todo.is_empty:
        index.begin_build("sync")  # a crash from here on leaves a mark the next process finishes
    report = apply(todo, vault, index, embedder, progress)
    index.finish_build()
    return SyncReport(**{**asdict(report), "broken": report.broken, "seconds": time.perf_counter() - started})


def write_entries(index: IndexStore, embedder: Embedder, items: Sequence[Pending],
                  progress: Progress | None = None) -> int:
    """Upsert entries in batches, each committed on its own, embedding only texts the index does not
    already hold for that id; returns how many texts were embedded."""
    batch_size = max(1, int(getattr(embedder, "batch_size", DEFAULT_BATCH_SIZE)))
    # Only these ids: reading every row (10k+) on each write made every server turn pay for the vault's size.
    stored_text = index.text_hashes([item.entry.id for item in items]) if items else {}
    # The model is given a chunk of many batches at once: it sorts their texts by length, so each of
    # its own batches pads to texts as long as its own, and it keeps every core busy.
    chunk_size = max(EMBED_CHUNK, batch_size)
    chunks = [items[start:start + chunk_size] for start in range(0, len(items), chunk_size)]
    embedded = 0
    with contextlib.closing(_embedded_chunks(embedder, chunks, stored_text)) as ready:
        for number, (rows, vectors, count) in enumerate(ready):
            embedded += count
            for start in range(0, len(rows), batch_size):
                end = start + batch_size
                embedded += _upsert(index, embedder, rows[start:end], vectors[start:end])
                if progress:
                    progress(number * chunk_size + min(end, len(rows)), len(items))
    return embedded


def _embedded_chunks(embedder: Embedder, chunks: Sequence[Sequence[Pending]],
                     stored_text: dict[str, str]) -> Iterator[tuple[list[IndexRow], list[Any], int]]:
    """(rows, their vectors or None where the stored one stays, texts embedded) chunk by chunk. With
    more than one chunk, a thread embeds the next chunk while the caller writes this one to SQLite."""

    def embedded(chunk: Sequence[Pending]) -> tuple[list[IndexRow], list[Any], int]:
        rows = [IndexRow.from_entry(item.entry, item.rel, item.file_hash, item.mtime_ns, item.size) for item in chunk]
        wanted = [stored_text.get(row.id) != row.text_hash for row in rows]
        return rows, _embed(embedder, rows, wanted), sum(wanted)

    if len(chunks) < 2:  # the write path's few entries: no thread
        yield from map(embedded, chunks)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="memvault-embed") as model:
        ahead = model.submit(embedded, chunks[0])
        for following in chunks[1:]:
            done, ahead = ahead.result(), model.submit(embedded, following)
            yield done
        yield ahead.result()


def _upsert(index: IndexStore, embedder: Embedder, rows: Sequence[IndexRow], vectors: Sequence[Any]) -> int:
    """Write one batch in one transaction; returns how many texts had to be embedded after all."""
    rowids = index.upsert(rows, vectors)
    lacking = [i for i, rowid in enumerate(rowids) if rowid is None]
    if lacking:  # a stored vector went away within this batch (two files swapped ids)
        vectors = _embed(embedder, rows, [i in lacking for i in range(len(rows))])
        index.upsert([rows[i] for i in lacking], [vectors[i] for i in lacking])
    return len(lacking)


def _embed(embedder: Embedder, rows: Sequence[IndexRow], wanted: Sequence[bool]) -> list[Any]:
    texts = [row.text for row, want in zip(rows, wanted, strict=True) if want]
    found = iter(embedder.embed(texts, kind="passage") if texts else [])
    return [next(found) if want else None for want in wanted]


def index_entries(index: IndexStore, embedder: Embedder,
                  items: Iterable[tuple[PurePosixPath, Entry, str]]) -> int:
    """The write path: index entries just written as (path, entry, file hash), so search sees
    them at once; returns how many texts were embedded. The next sync hashes these files once,
    finds them equal, and embeds nothing."""
    return write_entries(index, embedder, [Pending(PurePosixPath(rel), entry, digest) for rel, entry, digest in items])


def unindex(index: IndexStore, ids: Iterable[str]) -> int:
    """The write path: drop entries just deleted or tombstoned; returns how many were removed."""
    return index.remove(ids)
