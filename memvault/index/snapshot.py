"""The index's vectors as flat arrays in one file beside it, memory-mapped, for the coarse pass of a
search over a large index (IndexQueries._knn). At 1M vectors sqlite-vec's KNN over the sign bits took
~0.35 s and re-scoring 5,000 candidates by point lookups ~0.4 s; numpy compares the mapped sign bits of
500,000 vectors in ~15 ms and gathers the candidates' floats from the same file.

The file is derived, like the index: `write` makes it (a sync of a large index does, `IndexStore.
refresh_snapshot`), and a reader that finds it missing, or of another vector table (db.VECTOR_EPOCH),
searches sqlite-vec as before. Vectors written or deleted after it are read from db.VECTOR_LOG, which is
kept only while a snapshot exists (db.VECTOR_LOG_ON) and pruned up to the seq of the newest file.

Layout: MAGIC, the header's length (8 bytes, little-endian), the JSON header, then, each 64-byte
aligned, `rowids` (int64, grouped by conversation, ascending within each), `ascending` (the same
rowids in ascending order) and `positions` (int64: where each of those is in `rowids`), `bits`
(uint64, one row per 64 dimensions: the sign bits, each word's row contiguous) and `vectors`
(float32, one row per rowid).
"""

from __future__ import annotations

import json
import math
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memvault.index import db
from memvault.vault.format.atomic import writer_gone

MAGIC = b"memvault-vectors-1\n"
ALIGN = 64
STALE = 2**16 - 1  # the Hamming distance given to a row changed since the file: never a candidate
TIE = 1e-6  # cosine distances this close in float32 may be equal in float64
READ_CHUNK = 20_000  # vectors read from sqlite-vec at a time while a snapshot is first written


@dataclass
class _Arrays:
    rowids: Any
    ascending: Any
    positions: Any
    bits: Any
    vectors: Any
    conversations: dict[str, tuple[int, int]]  # conversation -> [start, end) in rowids
    offsets: tuple[int, int] = (0, 0)  # where `bits` and `vectors` start in the file
    inode: int = 0  # of the file mapped (a writer replaces the file, never writes into it)


@dataclass(frozen=True)
class Changes:
    """The writes logged since a file, as a search uses them; made anew (and swapped in whole: a search in
    another thread may be reading the old one) whenever the log grows."""

    by_rowid: dict[int, tuple[str | None, Any]]  # rowid -> (conversation, vector), or (None, None): deleted
    touched: Any  # by_rowid's rowids: the file's rows they name are out of date
    rowids: Any  # of the rows written since (with a vector), in `by_rowid`'s order
    names: Any  # their conversations
    matrix: Any  # their vectors
    per_conversation: dict[str, int]

    @classmethod
    def of(cls, by_rowid: dict[int, tuple[str | None, Any]], dims: int) -> Changes:
        import numpy as np

        fresh = [(rowid, name, vector) for rowid, (name, vector) in by_rowid.items() if vector is not None]
        per_conversation: dict[str, int] = {}
        for _, name, _ in fresh:
            per_conversation[name] = per_conversation.get(name, 0) + 1
        return cls(by_rowid, np.fromiter(by_rowid, dtype=np.int64, count=len(by_rowid)),
                   np.array([r for r, _, _ in fresh], dtype=np.int64),
                   np.array([n for _, n, _ in fresh], dtype=object),
                   np.stack([v for _, _, v in fresh]) if fresh else np.zeros((0, dims), dtype=np.float32),
                   per_conversation)

    def fresh(self, conversation: str | None) -> Any:
        """Positions (in `rowids`) of the rows written since in this conversation (all when None)."""
        import numpy as np

        return np.arange(len(self.rowids)) if conversation is None else np.flatnonzero(self.names == conversation)


@dataclass
class Snapshot:
    """One snapshot file, mapped, with the changes logged since (kept current by `catch_up`)."""

    epoch: str
    seq: int
    arrays: _Arrays
    changes: Changes | None = None  # the writes logged since the file (`catch_up`)

    @classmethod
    def open(cls, path: Path) -> Snapshot | None:
        """The mapped file, or None when there is none or it cannot be read (it is only a cache)."""
        import numpy as np

        try:
            with open(path, "rb") as handle:
                if handle.read(len(MAGIC)) != MAGIC:
                    return None
                length = int.from_bytes(handle.read(8), "little")
                header = json.loads(handle.read(length))
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                inode = os.fstat(handle.fileno()).st_ino
            count, dims = int(header["count"]), int(header["dims"])
            offset = _aligned(len(MAGIC) + 8 + length)
            arrays, starts = [], []
            for dtype, shape in ((np.int64, (count,)), (np.int64, (count,)), (np.int64, (count,)),
                                 (np.uint64, (dims // 64, count)), (np.float32, (count, dims))):
                items = math.prod(shape)
                arrays.append(np.frombuffer(mapped, dtype=dtype, count=items, offset=offset).reshape(shape))
                start, offset = offset, _aligned(offset + items * np.dtype(dtype).itemsize)
                starts.append(start)
            # The floats (the last array) are read a few rows here and there: the kernel's read-ahead mapped
            # hundreds of MB around them (RSS 0.8 GB after one search at 1M).
            if len(mapped) > start:
                mapped.madvise(mmap.MADV_RANDOM, start // mmap.PAGESIZE * mmap.PAGESIZE)
            conversations = {name: (int(start), int(end)) for name, start, end in header["conversations"]}
            return cls(str(header["epoch"]), int(header["seq"]),
                       _Arrays(*arrays, conversations, (starts[3], starts[4]), inode))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def dims(self) -> int:
        return int(self.arrays.vectors.shape[1])

    def catch_up(self, conn: Any) -> bool:
        """Read the vectors logged since; False when this snapshot no longer describes the index (another
        vector table, or the log pruned past it: a newer file must be opened)."""
        import numpy as np

        pruned = db.get_meta(conn, db.VECTOR_LOG_PRUNED)
        if (db.get_meta(conn, db.VECTOR_EPOCH) != self.epoch or db.get_meta(conn, db.VECTOR_LOG_ON) is None
                or (pruned is not None and int(pruned) > self.seq)):
            return False
        # Read before the log: every row up to it was committed, and logged, before the log is read.
        newest = db.newest_rowid(conn)
        rows = conn.execute(f"SELECT seq, rowid, conversation_id, embedding FROM {db.VECTOR_LOG} WHERE seq > ? "
                            "ORDER BY seq", (self.seq,)).fetchall()
        if rows or self.changes is None:
            by_rowid = dict(self.changed)
            for _, rowid, name, blob in rows:
                by_rowid[rowid] = (None, None) if blob is None else (name, np.frombuffer(blob, dtype=np.float32))
            self.changes = Changes.of(by_rowid, self.dims)
            self.seq = rows[-1][0] if rows else self.seq
        # A row newer than any the file or the log knows was written without the log (a process of the
        # release before m006, still running after the upgrade): this snapshot does not describe the index.
        return newest <= max(int(self.arrays.ascending[-1]) if len(self.arrays.ascending) else 0,
                             max(self.changed, default=0))

    @property
    def changed(self) -> dict[int, tuple[str | None, Any]]:
        """rowid -> (conversation, vector) written since the file, or (None, None) deleted since."""
        return {} if self.changes is None else self.changes.by_rowid

    def size(self, conversation: str | None) -> int:
        """Vectors in this conversation (all when None), about: rows changed since count once more."""
        start, end = self._span(conversation)
        changes = self.changes
        written = 0 if changes is None else (
            len(changes.rowids) if conversation is None else changes.per_conversation.get(conversation, 0))
        return end - start + written

    def nearest(self, query: Any, k: int, conversation: str | None, share: float,
                at_least: int, excluded: Any = None) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors of a conversation (all when None), nearest
        first (ties by rowid): the `share` nearest by the Hamming distance of their sign bits (at least
        `at_least`) re-scored on their floats, and every vector changed since the file. `excluded`
        (int64 rowids): rows that are never candidates (a past's view hides those changed since)."""
        import numpy as np

        query = np.asarray(query, dtype=np.float32).reshape(-1)
        start, end = self._span(conversation)
        changes = self.changes or Changes.of({}, self.dims)
        picked = np.zeros(0, dtype=np.int64)
        if end > start:
            distances = self._hamming(query, start, end)
            distances[self._stale_positions(start, end, changes.touched)] = STALE
            if excluded is not None:
                distances[self._stale_positions(start, end, excluded)] = STALE
            wanted = max(k, at_least, math.ceil(share * self.size(conversation)))
            picked = _within(distances, wanted) + start
        fresh = changes.fresh(conversation)
        if excluded is not None:
            fresh = fresh[~np.isin(changes.rowids[fresh], excluded)]
        rowids = np.concatenate([self.arrays.rowids[picked], changes.rowids[fresh]])
        if not len(rowids):
            return []
        matrix = np.concatenate([self.arrays.vectors[picked], changes.matrix[fresh]])
        # Ranked in float32, then the best (with room for rounding) in float64, as sqlite-vec's are exact.
        best = _smallest(cosine_distances(query, matrix), 2 * k)
        hits = zip(rowids[best].tolist(), cosine_distances(query, matrix[best], exact=True).tolist(), strict=True)
        return sorted(hits, key=lambda hit: (hit[1], hit[0]))[:k]

    def applied(self) -> tuple[Any, Any, Any]:
        """(rowids, conversations, vectors) of this file with the changes logged since applied."""
        import numpy as np

        arrays = self.arrays
        names = np.empty(len(arrays.rowids), dtype=object)
        for name, (start, end) in arrays.conversations.items():
            names[start:end] = name
        keep = np.ones(len(arrays.rowids), dtype=bool)
        changes = self.changes or Changes.of({}, self.dims)
        keep[self._stale_positions(0, len(arrays.rowids), changes.touched)] = False
        rowids = np.concatenate([arrays.rowids[keep], changes.rowids])
        names = np.concatenate([names[keep], changes.names])
        vectors = np.concatenate([arrays.vectors[keep], changes.matrix])
        return rowids, names.astype(str), vectors

    def _span(self, conversation: str | None) -> tuple[int, int]:
        if conversation is None:
            return 0, len(self.arrays.rowids)
        return self.arrays.conversations.get(conversation, (0, 0))

    def _hamming(self, query: Any, start: int, end: int) -> Any:
        """Hamming distances of the query's sign bits to those of rows [start, end)."""
        import numpy as np

        query_words = _sign_words(query.reshape(1, -1))[:, 0]
        distances = np.zeros(end - start, dtype=np.uint16)
        word = np.empty(end - start, dtype=np.uint64)
        for row, query_word in zip(self.arrays.bits, query_words, strict=True):
            np.bitwise_xor(row[start:end], query_word, out=word)
            distances += np.bitwise_count(word)
        return distances

    def _stale_positions(self, start: int, end: int, touched: Any) -> Any:
        """Positions (from `start`) of the rows in [start, end) that these rowids name."""
        import numpy as np

        positions = self._positions(touched)
        return np.sort(positions[(positions >= start) & (positions < end)] - start)

    def _positions(self, rowids: Any) -> Any:
        """Where these rowids are in the file, for those it holds (in no particular order)."""
        import numpy as np

        ascending = self.arrays.ascending
        found = np.searchsorted(ascending, rowids)
        inside = found < len(ascending)
        found, rowids = found[inside], rowids[inside]
        # Each rowid against the one it would sit at: np.isin would sort both and, on a cold search's
        # first call, import numpy.ma (15-30 ms) to ask whether they are masked.
        return self.arrays.positions[found[ascending[found] == rowids]]

    def scrub(self, path: Path, rowids: list[int]) -> bool:
        """Zero the file's rows of these rowids (sign bits and floats) in place, so that no old vector of a
        row removed or rewritten since it was written stays in it (an erase): readers take those rows from
        the log. False when the file at `path` is no longer the one mapped here (replaced since)."""
        import numpy as np

        positions = np.sort(self._positions(np.array(rowids, dtype=np.int64)))
        arrays = self.arrays
        with open(path, "r+b") as handle:
            if os.fstat(handle.fileno()).st_ino != arrays.inode:
                return False
            if not len(positions):
                return True
            with mmap.mmap(handle.fileno(), 0) as mapped:
                count, dims = arrays.vectors.shape
                bits = np.frombuffer(mapped, dtype=np.uint64, count=count * (dims // 64),
                                     offset=arrays.offsets[0]).reshape(dims // 64, count)
                bits[:, positions] = 0
                vectors = np.frombuffer(mapped, dtype=np.float32, count=count * dims,
                                        offset=arrays.offsets[1]).reshape(count, dims)
                vectors[positions] = 0
                del bits, vectors  # the map closes only once no array holds it
                mapped.flush()
            os.fsync(handle.fileno())
        return True

    def vectors_of(self, rowids: list[int]) -> dict[int, Any]:
        """rowid -> its vector, for those of these rowids the snapshot (with the log) holds."""
        import numpy as np

        changed = self.changed
        found = {rowid: changed[rowid][1] for rowid in rowids if rowid in changed and changed[rowid][1] is not None}
        positions = self._positions(np.array([r for r in rowids if r not in changed], dtype=np.int64))
        found.update(zip(self.arrays.rowids[positions].tolist(), self.arrays.vectors[positions], strict=True))
        return found


def cosine_distances(query: Any, matrix: Any, exact: bool = False) -> Any:
    """1 - cosine of each row to the query (in float64 when `exact`); a zero vector has no direction:
    distance 1, as sqlite-vec gives it."""
    import numpy as np

    dtype = np.float64 if exact else np.float32
    query = np.asarray(query, dtype=dtype)
    matrix = np.asarray(matrix, dtype=dtype)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * np.sqrt(query @ query)
    return 1.0 - np.divide(matrix @ query, norms, out=np.zeros(len(matrix), dtype=dtype), where=norms > 0)


def _within(distances: Any, wanted: int) -> Any:
    """Positions of the `wanted` smallest Hamming distances, and of every other at the last distance
    taken (ties are kept whole rather than cut at random); none at STALE."""
    import numpy as np

    counts = np.cumsum(np.bincount(distances, minlength=STALE + 1)[:STALE])
    cutoff = int(np.searchsorted(counts, min(wanted, int(counts[-1]))))
    return np.flatnonzero(distances <= cutoff)


def _smallest(values: Any, count: int) -> Any:
    """Positions of the `count` smallest values and of any within float32's rounding of the last (ties are
    then ordered by rowid, as everywhere), in no order."""
    import numpy as np

    if count >= len(values):
        return np.arange(len(values))
    last = np.partition(values, count - 1)[count - 1]
    return np.flatnonzero(values <= last + TIE)


def write(conn: Any, path: Path, dims: int, previous: Snapshot | None) -> Snapshot | None:
    """Write the snapshot of the index's vectors (from `previous` and the log when it still describes the
    index, else from sqlite-vec), then keep the log from here on and prune what the file holds.
    None when the dimensions have no sign bits (not a multiple of 64)."""
    import numpy as np

    if dims % 64:
        return None
    with db.immediate(conn):  # from now on every vector written is logged
        db.set_meta(conn, db.VECTOR_LOG_ON, "on")
    conn.execute("BEGIN")  # one read snapshot of the table and the log
    try:
        epoch = db.get_meta(conn, db.VECTOR_EPOCH) or ""
        seq = conn.execute(f"SELECT coalesce(max(seq), 0) FROM {db.VECTOR_LOG}").fetchone()[0]
        if previous is not None and previous.catch_up(conn):
            rowids, names, vectors = previous.applied()
        else:
            rowids, names, vectors = _read_all(conn, dims)
    finally:
        conn.execute("COMMIT")
    order = np.lexsort((rowids, names)) if len(rowids) else np.zeros(0, dtype=np.int64)
    rowids, names = rowids[order], names[order]  # the vectors are put in this order a chunk at a time
    chunks = [order[at:at + READ_CHUNK] for at in range(0, len(order), READ_CHUNK)]
    conversations, start = [], 0
    for name in dict.fromkeys(names.tolist()):
        end = int(np.searchsorted(names, name, side="right"))
        conversations.append([name, start, end])
        start = end
    header = json.dumps({"epoch": epoch, "seq": int(seq), "count": len(rowids), "dims": dims,
                         "conversations": conversations}).encode()
    for leftover in path.parent.glob(f".{path.name}.*.tmp"):  # a writer killed mid-file (1.6 GB at 1M)
        if writer_gone(leftover.name):
            leftover.unlink(missing_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}-snapshot.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(MAGIC + len(header).to_bytes(8, "little") + header)
            by_rowid = np.argsort(rowids, kind="stable")
            words = np.concatenate([_sign_words(vectors[chunk]) for chunk in chunks], axis=1) if chunks else \
                _sign_words(vectors)
            for array in (rowids.astype(np.int64), rowids[by_rowid].astype(np.int64), by_rowid.astype(np.int64),
                          words):
                handle.write(b"\0" * (_aligned(handle.tell()) - handle.tell()))
                handle.write(np.ascontiguousarray(array).tobytes())
            handle.write(b"\0" * (_aligned(handle.tell()) - handle.tell()))
            for chunk in chunks:
                handle.write(np.ascontiguousarray(vectors[chunk], dtype=np.float32).tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        with db.immediate(conn):  # two writers: the file of the later seq stays, and the log is pruned to it
            pruned = db.get_meta(conn, db.VECTOR_LOG_PRUNED)
            if db.get_meta(conn, db.VECTOR_EPOCH) == epoch and (pruned is None or int(pruned) <= seq):
                os.replace(temporary, path)
                conn.execute(f"DELETE FROM {db.VECTOR_LOG} WHERE seq <= ?", (seq,))
                db.set_meta(conn, db.VECTOR_LOG_PRUNED, str(seq))
    finally:
        temporary.unlink(missing_ok=True)
    return Snapshot.open(path)


def _read_all(conn: Any, dims: int) -> tuple[Any, Any, Any]:
    """(rowids, conversations, vectors) of every vector in sqlite-vec."""
    import numpy as np

    rowids, names, chunks = [], [], []
    blobs: list[bytes] = []
    for rowid, name, blob in conn.execute("SELECT rowid, conversation_id, embedding FROM entries_vec"):
        rowids.append(rowid)
        names.append(name)
        blobs.append(blob)
        if len(blobs) == READ_CHUNK:
            chunks.append(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dims))
            blobs = []
    chunks.append(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dims))
    vectors = np.concatenate(chunks)
    return np.array(rowids, dtype=np.int64), np.array(names, dtype=str), vectors


def _sign_words(vectors: Any) -> Any:
    """The sign bits (1 where a value is > 0) of each row, as uint64 words: shape (dims // 64, rows)."""
    import numpy as np

    packed = np.packbits(np.asarray(vectors) > 0, axis=1)  # (rows, dims // 8) bytes
    return np.ascontiguousarray(packed.view(np.uint64).T) if len(packed) else np.zeros(
        (np.asarray(vectors).shape[1] // 64, 0), dtype=np.uint64)


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN
