"""The erasure record (docs/architecture.md, "Erasure record"): the commit `memvault erase` ends with,
whose trailers list what was erased (blob ids, paths; never the content). One reader, over any
revision range, serves every command that must honour it: `push` (is there one in HEAD's history?),
`pull` (drop what they list), `sync` (a merge drops what either side's records list; an erased history
is adopted, `vault/devices/adopt.py`).

A record is a claim, and anyone who can push to the remote can write one. It is acted on only when its
own history shows the erasure was done (`proven`): no blob it lists is reachable from the record's
commit and no path it lists is in any commit of that history, which is what an erase's rewrite leaves.
A commit that merely claims an erasure, on a history still holding what it names, changes nothing;
`erased` names it in `Erased.refused` for sync's report and `doctor`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memvault.vault.git.log import TRAILER_PREFIX, parse_trailers

ERASED_PATH, ERASED_BLOB = "Erased-Path", "Erased-Blob"
RECORD_TRAILER = TRAILER_PREFIX + ERASED_BLOB  # the writer's spelling (core/erasing.record_message)
OBJECT_ID = re.compile(r"^[0-9a-f]{40,64}$")


@dataclass(frozen=True)
class Record:
    """One erasure record as its commit states it (not yet proven)."""

    commit: str
    paths: frozenset[str]
    blobs: frozenset[str]


@dataclass(frozen=True)
class Erased:
    """What the proven erasure records of some revisions list (vault paths, blob ids), and the commits
    of the records that were refused (their history still holds what they name)."""

    paths: frozenset[str] = frozenset()
    blobs: frozenset[str] = frozenset()
    refused: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.paths or self.blobs)

    def refusals(self) -> list[str]:
        """One line per refused record, for sync's report."""
        return [f"commit {sha[:12]} claims an erasure its own history does not show (what it names is still "
                "there): not acted on" for sha in self.refused]


def records(root: Path, *revisions: str) -> list[Record]:
    """Every commit among `revisions` (as `git log` takes them: "HEAD", "a...b", "a..b") that claims an
    erasure, newest first, read in the repository holding `root`."""
    from memvault.vault.forget.erase import git_bytes

    out = git_bytes(root, "log", "--format=%H%n%B%x1e", "--fixed-strings", f"--grep={TRAILER_PREFIX}Erased-",
                    *revisions, "--").decode("utf-8", "surrogateescape")
    found = []
    for chunk in out.split("\x1e"):
        sha, _, message = chunk.strip("\n").partition("\n")
        if not sha:
            continue
        trailers = parse_trailers(message)
        paths = frozenset(trailers.get(ERASED_PATH, []))
        blobs = frozenset(b for b in trailers.get(ERASED_BLOB, []) if OBJECT_ID.match(b))
        if paths or blobs:
            found.append(Record(sha, paths, blobs))
    return found


def erased(root: Path, *revisions: str) -> Erased:
    """What the proven erasure records among `revisions` list; the unproven ones in `refused`."""
    found = records(root, *revisions)
    good = proven(root, found)
    return Erased(frozenset(p for r in good for p in r.paths), frozenset(b for r in good for b in r.blobs),
                  tuple(r.commit for r in found if r not in good))


def proven(root: Path, found: list[Record]) -> list[Record]:
    """The records whose own history shows their erasure done. One object walk serves every record in
    the newest one's history (what it does not reach, its ancestors do not either); a record it does
    reach, or one outside it, is walked alone."""
    from memvault.vault.forget.erase import git_bytes, reachable_objects

    if not found:
        return []
    newest = found[0].commit
    shared = reachable_objects(root, newest)
    ancestors = set(git_bytes(root, "rev-list", newest).decode().split())
    good = []
    for record in found:
        reach = shared if record.commit in ancestors and not record.blobs & shared \
            else reachable_objects(root, record.commit)
        if record.blobs & reach or (record.paths and still_present(root, record)):
            continue
        good.append(record)
    return good


def still_present(root: Path, record: Record) -> bool:
    """Whether any commit of the record's history holds a path it lists."""
    from memvault.vault.forget.erase import git_bytes

    return bool(git_bytes(root, "--literal-pathspecs", "log", "-1", "--format=%H", record.commit, "--",
                          *sorted(record.paths)).strip())  # paths relative to the vault: git reads them from cwd


def drop_erased(root: Path) -> int:
    """After a pull: blobs that erasure records list and this clone still holds (old local commits
    rebased onto the rewritten history) are dropped from every commit, then pruned. Returns how many."""
    from memvault.vault.forget import erase
    from memvault.vault.format import layout
    from memvault.vault.git import rewrites

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
