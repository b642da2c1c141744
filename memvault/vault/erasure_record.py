"""The erasure record (docs/architecture.md, "Erasure record"): the commit `memvault erase` ends with,
whose trailers list what was erased (blob ids, paths; never the content). One reader, over any
revision range, serves every command that must honour it: `push` (is there one in HEAD's history?),
`pull` (drop what they list), `sync` (a merge drops what either side's records list; an erased history
is adopted, `vault/sync_adopt.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memvault.vault.git_log import TRAILER_PREFIX, parse_trailers

ERASED_PATH, ERASED_BLOB = "Erased-Path", "Erased-Blob"
RECORD_TRAILER = TRAILER_PREFIX + ERASED_BLOB  # the writer's spelling (core/erasing.record_message)
OBJECT_ID = re.compile(r"^[0-9a-f]{40,64}$")


@dataclass(frozen=True)
class Erased:
    """What the erasure records of some revisions list: vault paths and blob ids."""

    paths: frozenset[str] = frozenset()
    blobs: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.paths or self.blobs)


def erased(root: Path, *revisions: str) -> Erased:
    """What the erasure records among `revisions` list (as `git log` takes them: "HEAD", "a...b",
    "a..b"), read in the repository holding `root`."""
    from memvault.vault.erase import git_bytes

    out = git_bytes(root, "log", "--format=%B%x1e", "--fixed-strings", f"--grep={TRAILER_PREFIX}Erased-",
                    *revisions, "--").decode("utf-8", "surrogateescape")
    paths: set[str] = set()
    blobs: set[str] = set()
    for message in out.split("\x1e"):
        trailers = parse_trailers(message)
        paths.update(trailers.get(ERASED_PATH, []))
        blobs.update(b for b in trailers.get(ERASED_BLOB, []) if OBJECT_ID.match(b))
    return Erased(frozenset(paths), frozenset(blobs))


def drop_erased(root: Path) -> int:
    """After a pull: blobs that erasure records list and this clone still holds (old local commits
    rebased onto the rewritten history) are dropped from every commit, then pruned. Returns how many."""
    from memvault.vault import erase, layout, rewrites

    listed = erased(root, "HEAD").blobs
    if not listed:
        return 0
    stored = set(erase.git_bytes(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
                 .decode().split())
    found = listed & stored
    if not found:
        return 0
    if found & erase.reachable_objects(root, "--all"):  # a local commit replayed onto the new history brought one back
        mapping = erase.rewrite(root, erase.Selection(), drop_blobs=found)
        rewrites.save_commit_map(root / layout.STATE_DIR, mapping)
    erase.clean_git(root)  # the rest only the clone's old history (reflogs, ORIG_HEAD, loose objects) held
    return len(found)
