"""Git's objects read and written in this process: blobs and trees, and a tree rewritten along the
changed paths only (`git` below is a vault.git.VaultGit).

Objects are written as loose files here (zlib, a temporary file renamed into .git/objects, as git
writes them; GitPython's own store starts a `git hash-object` per object) and read through
GitPython's persistent `git cat-file --batch` (packed or loose; VaultGit.read_object): a commit of one file reads and
writes the few trees on its path, whatever the size of the vault.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zlib
from collections import defaultdict
from pathlib import Path
from typing import Any

TREE = b"40000"
FILE = b"100644"
FILE_MODES = (FILE, b"100755")  # a file keeps its mode when it is rewritten (a symlink's becomes a file's)
SYMLINK = b"120000"
TREE_ENTRY = re.compile(rb"(\d+) ([^\0]+)\0(.{20})", re.DOTALL)  # '<mode> <name>\0<20-byte sha>', found in C


class TreeConflict(Exception):
    """A path's folder is a file (or a submodule) in the tree, or a file's place is a folder."""


def store(git: Any, kind: bytes, data: bytes) -> bytes:
    """Write one object (b"blob", b"tree", ...) as a loose object unless it is one already; its
    binary sha. As git writes it: zlib of '<kind> <size>\\0<data>' in a temporary file renamed
    into place, read-only (an object of the same name holds the same bytes, so a race is harmless)."""
    raw = kind + b" " + str(len(data)).encode() + b"\0" + data
    sha = hashlib.sha1(raw).digest()  # noqa: S324 - git's object names are SHA-1
    name = sha.hex()
    folder = git.objects_dir / name[:2]
    path = folder / name[2:]
    if path.exists():
        return sha
    folder.mkdir(exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix="tmp_obj_", dir=folder)  # git's own prefix: its gc sweeps strays
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(zlib.compress(raw, 1))
        os.chmod(temp, 0o444)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return sha


def read_tree(git: Any, sha: bytes) -> dict[bytes, tuple[bytes, bytes]]:
    """A tree's entries: name -> (mode, binary sha)."""
    return {name: (mode, sha) for mode, name, sha in TREE_ENTRY.findall(git.read_object(sha))}


def write_tree(git: Any, entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    """Store a tree, its entries in git's order (a folder sorts as if its name ended with '/')."""
    def order(name: bytes) -> bytes:
        return name + b"/" if entries[name][0] == TREE else name

    data = b"".join(entries[name][0] + b" " + name + b"\0" + entries[name][1] for name in sorted(entries, key=order))
    return store(git, b"tree", data)


Change = bytes | tuple[bytes, bytes] | None  # a blob's sha (the file keeps its mode), (mode, sha), None: removed


def rewrite_tree(git: Any, tree: bytes | None, changes: dict[tuple[bytes, ...], Change]) -> bytes | None:
    """`tree` (None: empty) with `changes` applied (path parts -> Change); only the trees along the
    changed paths are read and written. None when the tree ends up empty (git keeps no empty folders)."""
    entries = read_tree(git, tree) if tree is not None else {}
    below: dict[bytes, dict[tuple[bytes, ...], Change]] = defaultdict(dict)
    for parts, blob in changes.items():
        name = parts[0]
        if len(parts) > 1:
            below[name][parts[1:]] = blob
            continue
        mode = entries.get(name, (FILE, b""))[0]
        if mode not in (*FILE_MODES, SYMLINK):
            raise TreeConflict(f"{name.decode(errors='replace')} is a folder or a submodule in the tree")
        if blob is None:
            entries.pop(name, None)
        else:
            entries[name] = blob if isinstance(blob, tuple) else (mode if mode in FILE_MODES else FILE, blob)
    for name, inner in below.items():
        mode, sha = entries.get(name, (TREE, None))
        if mode != TREE:
            raise TreeConflict(f"{name.decode(errors='replace')} is a file or a submodule in the tree")
        new = rewrite_tree(git, sha, inner)
        if new is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE, new)
    if not entries:
        return None
    return write_tree(git, entries)
