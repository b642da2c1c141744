"""The move of a vault's entry files into day folders (layout.DATED_KINDS): older vaults kept every fact
and turn of a conversation in one folder, whose tree object each commit rewrote (0.2 s an add at 25k
turns). `relayout` moves them, as `git mv` would, in one commit of pure renames: the blobs are the same,
so `git log --follow`, rename detection, `memvault history` and `--as-of` read across it.

It runs with the other format migration (vault.devices.drivers.ensure_merge_setup: at `init`, `clone`
and each sync), so files a device still on the old layout writes are moved by the next one. It is
idempotent and safe to kill: the moves are noted in .memvault/relayout.jsonl before the first file
moves, and a re-run finishes them. A file with uncommitted changes, one git does not track (a file a
person wrote by hand) or one whose name carries no memvault stamp (agent-cli's `<ISO time>__<id>.md`,
which agent-cli reads wherever it is) is left where it is: reading accepts both places.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import PurePosixPath

from memvault.vault.format import jsonlines, layout
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.listing import flat_files
from memvault.vault.git.errors import GitFailed
from memvault.vault.git.fastcommit import split_option
from memvault.vault.git.log import format_message

INTENT_FILE = "relayout.jsonl"
SUBJECT = "memvault: entries moved into day folders (<kind>/<YYYY>/<MM>/<DD>/)"
LS_TREE_CHUNK = 500  # folders per `git ls-tree`: a command line holds them


def relayout(vault) -> str | None:
    """Move each committed entry file still in its kind folder into its day folder, in one commit of
    renames; the commit's sha, None when nothing moved. Call with the vault's write lock held."""
    intent = vault.state_dir / INTENT_FILE
    moves = dict(tuple(record["move"]) for record in jsonlines.read(intent) if "move" in record) \
        if intent.exists() else {}
    moves.update(found_moves(vault, moves))
    if not moves:
        intent.unlink(missing_ok=True)
        return None
    vault.ensure_state_dir()
    atomic_write(intent, "".join(json.dumps({"move": pair}) + "\n" for pair in moves.items()).encode())
    paths = [path for pair in moves.items() if place(vault.root, *pair) for path in pair]
    sha = vault.git.commit(paths, format_message(SUBJECT, "migrate", None, [])) if paths else None
    vault.forget_paths()
    try:  # the moved files' stat data, once, not at each `git status`; a large index's shared part renewed
        vault.git.run("update-index", "-q", "--refresh", *split_option(vault.git))
    except GitFailed:
        pass  # only a cost: git re-hashes them when it next looks
    intent.unlink(missing_ok=True)
    return sha


def finish_interrupted(vault) -> str | None:
    """Finish a move a kill cut short, if one is noted (takes the write lock): before anything that
    would take its moved files, untracked in their day folders, for new ones (the proxy's leftover turns)."""
    if not (vault.state_dir / INTENT_FILE).exists():
        return None
    with vault.lock():
        return relayout(vault)


def found_moves(vault, known: dict[str, str]) -> dict[str, str]:
    """old -> new vault path of each file in a dated kind folder itself whose bytes are HEAD's (tracked
    and unchanged). Only the kind folders are listed, not their day folders: a migrated vault costs a
    scandir a kind folder."""
    candidates: dict[str, list[str]] = {}
    for root in vault.entry_roots(True, None):
        for kind in layout.DATED_KINDS:
            folder = f"{root}/{kind}"
            if vault.linked_part(PurePosixPath(folder)) is None:
                names = [name for name in flat_files(vault.root, folder) if f"{folder}/{name}" not in known]
                if names:
                    candidates[folder] = names
    if not candidates or vault.git.head_sha() is None:
        return {}
    committed = head_blobs(vault.git, list(candidates))
    moves = {}
    for folder, names in candidates.items():
        for name in names:
            rel = f"{folder}/{name}"
            new = layout.dated_path(PurePosixPath(rel))
            if new is not None and rel in committed and blob_sha(vault.root / rel) == committed[rel]:
                moves[rel] = str(new)
    return moves


def head_blobs(git, folders: list[str]) -> dict[str, str]:
    """vault path -> blob sha of the files HEAD holds directly in these folders."""
    found = {}
    for start in range(0, len(folders), LS_TREE_CHUNK):
        chunk = [git.repo_path(folder) + "/" for folder in folders[start:start + LS_TREE_CHUNK]]
        for item in git.run("ls-tree", "-z", "HEAD", "--", *chunk).split("\0"):
            if item:
                info, repo_path = item.split("\t", 1)
                mode, kind, sha = info.split()
                if kind == "blob" and mode != "120000":
                    found[str(git.vault_path(repo_path))] = sha
    return found


def blob_sha(path) -> str | None:
    """The sha git gives the file's bytes (`git hash-object`), None when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def place(root, old: str, new: str) -> bool:
    """Move one file to its day folder; True when the pair belongs in the commit (moved now, or
    before a crash). A file at the new place with other bytes is left, and so is the old one."""
    source, target = root / old, root / new
    if target.exists() and source.exists():
        if blob_sha(target) != blob_sha(source):
            return False  # not ours to choose between: both stay, both are read
        source.unlink()
        return True
    if source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)
        return True
    return target.exists()
