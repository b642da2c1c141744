"""Git's index set for a commit's few paths in this process, when the index is split.

A split index (`git update-index --split-index`, which memvault turns on for a large vault) is two
files: `sharedindex.<sha>` holds most entries and is never rewritten for a small change, and
`.git/index` holds the entries added or changed since, plus a `link` extension naming the shared
part. `git update-index` still reads both to change one entry: at a million memories that is 150 MB
read for every add. Here only the small part is read and rewritten, as git itself would write it:
- the entries a commit adds go among its added entries, in git's order (git applies them over the
  shared part when it reads the index, replacing an entry of the same name: merge_base_index);
- the entries git has stripped of their names (replacements of shared ones) stay first, as they are;
- the `link` extension is kept byte for byte, the resolve-undo record (`REUC`) too; the other
  extensions are caches (the cache tree, the untracked cache, fsmonitor's, the offset tables), which
  git rebuilds, and are dropped rather than left stale;
- the file is written under `index.lock` (taken with O_EXCL, as git takes it) and renamed into place.
Whatever this does not know for sure leaves the work to `git update-index` (returns False): an index
that is not split, or of version 4, an extension git requires that is not `link`, a path removed
(the shared part may hold it), a conflict, a lock someone holds, a small part grown large.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

HEADER = struct.Struct(">4sII")  # 'DIRC', version, number of entries
FIXED = 62  # an entry's stat fields (10 x 4 bytes), its sha and its 16-bit flags
NAME_MASK = 0x0FFF
EXTENDED = 0x4000
STAGE_MASK = 0x3000
KEPT_EXTENSIONS = (b"link", b"REUC")
FILE_MODE = 0o100644
# A small part is never this large, even with git's cache tree of a million files beside its entries
# (2 MB): a larger index file is a whole one, left to git without reading it here.
MOST_FILE_BYTES = 16 << 20


class Entry:
    """One index entry as it is on disk: its bytes are kept as git wrote them unless it is ours."""

    __slots__ = ("name", "raw", "stage")

    def __init__(self, name: bytes, raw: bytes, stage: int) -> None:
        self.name, self.raw, self.stage = name, raw, stage


def record(git_dir: Path, blobs: dict[str, bytes | None], most_bytes: int) -> bool:
    """Set the index entries of these repository paths to their blobs (binary shas; None: removed),
    no other entry touched. False, with nothing written, when git's own update-index must do it."""
    index = git_dir / "index"
    lock = git_dir / "index.lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError:
        return False  # a git is writing the index: `git update-index` waits for it and says so
    written = False
    try:
        parsed = read(index)
        if parsed is None:
            return False
        version, entries, extensions, part_bytes = parsed
        if part_bytes > most_bytes:
            return False  # git makes a new shared part of them (`--split-index`)
        entries = apply(entries, blobs)
        if entries is None:
            return False
        body = HEADER.pack(b"DIRC", version, len(entries)) + b"".join(e.raw for e in entries) + b"".join(
            signature + struct.pack(">I", len(payload)) + payload for signature, payload in extensions)
        with os.fdopen(fd, "wb") as out:
            fd = -1
            out.write(body + hashlib.sha1(body).digest())  # noqa: S324 - git's index checksum is SHA-1
        os.replace(lock, index)
        written = True
        freshen_shared(git_dir, extensions)
        return True
    except OSError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)
        if not written:
            lock.unlink(missing_ok=True)


def entries_bytes(git_dir: Path) -> int | None:
    """The bytes of the entries in a split index's own part (what each write reads and rewrites; git's
    cache tree beside them is not counted); None when the index is not split or not readable here."""
    parsed = read(git_dir / "index")
    return None if parsed is None else parsed[3]


def read(index: Path) -> tuple[int, list[Entry], list[tuple[bytes, bytes]], int] | None:
    """`parse` of the index file, unless it cannot be a small part: no shared part beside it (a whole
    index, read by git alone: parsing its thousands of entries here would cost an add more than git
    does), or too large."""
    try:
        if not any(index.parent.glob("sharedindex.*")) or index.stat().st_size > MOST_FILE_BYTES:
            return None
        return parse(index.read_bytes())
    except OSError:
        return None


def parse(data: bytes) -> tuple[int, list[Entry], list[tuple[bytes, bytes]], int] | None:
    """(version, entries, kept extensions, the entries' bytes) of a split index's own part; None when
    it is not one this module may rewrite."""
    if len(data) < HEADER.size + 20 or hashlib.sha1(data[:-20]).digest() != data[-20:]:  # noqa: S324
        return None
    signature, version, count = HEADER.unpack_from(data)
    if signature != b"DIRC" or version not in (2, 3):
        return None
    entries, offset = [], HEADER.size
    for _ in range(count):
        flags = struct.unpack_from(">H", data, offset + FIXED - 2)[0]
        start = offset + FIXED + (2 if flags & EXTENDED else 0)
        end = data.index(b"\0", start)
        name = data[start:end]
        size = (start - offset + len(name) + 8) & ~7
        entries.append(Entry(name, data[offset:offset + size], flags & STAGE_MASK))
        offset += size
    entries_end = offset
    extensions, linked = [], False
    while offset < len(data) - 20:
        signature = data[offset:offset + 4]
        size = struct.unpack_from(">I", data, offset + 4)[0]
        payload = data[offset + 8:offset + 8 + size]
        offset += 8 + size
        if signature == b"link":
            linked = True
        elif not b"A" <= signature[:1] <= b"Z":
            return None  # an extension git requires that we do not know
        if signature in KEPT_EXTENSIONS:
            extensions.append((signature, payload))
    if offset != len(data) - 20 or not linked:
        return None
    return version, entries, extensions, entries_end - HEADER.size


def apply(entries: list[Entry], blobs: dict[str, bytes]) -> list[Entry] | None:
    """The entries with these paths set (None: this part alone cannot say it)."""
    if any(entry.stage for entry in entries):
        return None  # a conflict in the index: git's to settle
    if None in blobs.values():
        return None  # the shared part may hold it (under an entry added over it): removing needs git's delete bitmap
    stripped = [entry for entry in entries if not entry.name]  # replacements of shared entries: first
    added = {entry.name: entry for entry in entries if entry.name}
    for path, blob in blobs.items():
        name = path.encode("utf-8", "surrogateescape")
        added[name] = Entry(name, entry_bytes(name, blob), 0)
    return stripped + [added[name] for name in sorted(added)]


def entry_bytes(name: bytes, sha: bytes) -> bytes:
    """A version-2 entry without stat data (as `update-index --index-info` makes one: git's next
    `git status` compares the file's content once and records its stat)."""
    fixed = struct.pack(">10I20sH", 0, 0, 0, 0, 0, 0, FILE_MODE, 0, 0, 0, sha, min(len(name), NAME_MASK))
    size = (FIXED + len(name) + 8) & ~7
    return (fixed + name).ljust(size, b"\0")


def freshen_shared(git_dir: Path, extensions: list[tuple[bytes, bytes]]) -> None:
    """Touch the shared part, as git does when it writes the index: git deletes shared parts that
    have not been touched for two weeks (splitIndex.sharedIndexExpire)."""
    link = dict(extensions)[b"link"]
    try:
        os.utime(git_dir / f"sharedindex.{link[:20].hex()}")
    except OSError:
        pass
