"""A sync meets a history an erase rewrote (docs/architecture.md, Sync, "After an erase").

An erase on one device rewrites every commit; the remote and the other devices still hold the old
history, with what was erased. A plain merge of the two would bring all of it back (the old history
becomes a parent again), so a sync that finds erasure records on one side whose blobs the other side
still holds *adopts* the rewritten side instead:

- the stale side's own changes since the two last agreed (`base`: the remote head fetched before,
  on the device that did not erase; the remote head kept at the erase, on the one that did) are
  replayed onto the rewritten side as one commit, file by file: a path an erasure record lists, or a
  file whose old or new version it lists, is not carried over; a file only the stale side changed is
  taken; a file both changed is merged by its kind's driver (memvault.vault.devices.merge);
- the stale history is then unreachable and `vault/erase.clean_git` prunes it: no object of it stays.

On the erasing device the remote is the stale side: the sync replaces it with `--force-with-lease`
on the head it fetched (another device's later push makes the push fail and the round start again).

Every step can be run again: `replay` reads only blobs (HEAD, base, stale), never the work tree, so a
sync killed mid-adoption is finished by the next one from its record (vault/devices/resume.py).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from memvault.vault.devices.settle import blob, has_tombstone, kind_of, listed_files
from memvault.vault.forget import erase
from memvault.vault.forget.record import Erased, erased
from memvault.vault.format.atomic import atomic_write
from memvault.vault.git import rewrites
from memvault.vault.git.errors import GitFailed
from memvault.vault.git.log import format_message
from memvault.vault.git.repository import VaultGit
from memvault.vault.write.store import Vault

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
PAUSE = "MEMVAULT_TEST_SYNC_PAUSE"  # read by tests only: an adoption waits at this step, to be killed there
REPLAYED = "replayed onto the history an erase rewrote"  # the replay commit's subject ends so (found again by recovery)


class Unsafe(GitFailed):
    """A person's uncommitted edit stands where the adoption must write (raised before anything moved)."""


@dataclass
class Adoption:
    """One sync's adoption of a rewritten history."""

    rewritten: str  # the side the erase rewrote (HEAD ends on it or on a commit over it)
    stale: str  # the side that still holds erased blobs
    base: str  # where the stale side's own changes start
    erased: Erased
    lease: str | None = None  # the remote head a forced push replaces (the erasing device's sync)
    replayed: list[str] = field(default_factory=list)  # vault paths of the stale side's changes carried over
    dropped: list[str] = field(default_factory=list)  # vault paths of the stale side's files the records list
    ids: set[str] = field(default_factory=set)  # the erased memories this device held
    texts: set[str] = field(default_factory=set)  # their texts (for the state files; never reported)


def plan(vault: Vault, remote: str, branch: str, ours: str, theirs: str, fetched_before: str | None) -> Adoption | None:
    """An adoption when one side's new erasure records list blobs the other side still holds."""
    root, git = vault.root, vault.git
    for rewritten, stale in ((theirs, ours), (ours, theirs)):
        listed = erased(root, f"{stale}..{rewritten}")
        if not listed.blobs or not listed.blobs & erase.reachable_objects(root, stale):
            continue
        known = fetched_before if stale == ours else rewrites.lease(vault.state_dir, remote, branch)
        adoption = Adoption(rewritten, stale, base_of(git, known, stale, rewritten), listed,
                            lease=theirs if stale == theirs else None)
        adoption.ids, adoption.texts = erased_memories(root, stale, listed)
        return adoption
    return None


def base_of(git: VaultGit, known: str | None, stale: str, rewritten: str) -> str:
    """Where the stale side's own changes start: the head both sides last shared when it is known and
    an ancestor of the stale side, else the sides' merge base, else nothing (every file is a change)."""
    if known and git.run_once(("merge-base", "--is-ancestor", known, stale), None).returncode == 0:
        return known
    try:
        return git.run("merge-base", stale, rewritten).strip() or EMPTY_TREE
    except GitFailed:
        return EMPTY_TREE


def erased_memories(root, stale: str, listed: Erased) -> tuple[set[str], set[str]]:
    """The ids and texts of the memories the stale side holds in blobs the records list: this device's
    derived stores (index journal, held candidates, queue) drop them as the erasing device's did."""
    ids, texts = set(), set()
    for _sha, path, data in erase.history_files(root, stale, only=listed.blobs):
        if (entry := erase.read_entry(path, data)) is not None and entry.role in erase.REMOVED_ROLES:
            ids.add(entry.id)
            if len(entry.text.strip()) >= erase.MIN_QUOTE:
                texts.add(entry.text.strip())
    return ids, texts


def adopt(vault: Vault, adoption: Adoption) -> str:
    """HEAD on the rewritten side, the stale side's own changes replayed over it as one commit;
    returns the new HEAD. Call with the vault's write lock held."""
    git = vault.git
    changed = refuse_dirty(git, adoption)
    adoption.dropped += listed_files(git, adoption.erased, adoption.stale)
    if git.head_sha() != adoption.rewritten:
        git.run("reset", "-q", "--keep", adoption.rewritten)  # a person's other uncommitted edits stay (or it refuses)
        pause(vault, "reset")
    touched = []
    for repo_path in changed:
        if replay(git, repo_path, adoption):
            touched.append(repo_path)
            adoption.replayed.append(git.vault_path(repo_path))
            pause(vault, "replay")
    if touched:
        subject = f"memvault sync: {len(touched)} change(s) {REPLAYED}"
        git.commit([git.vault_path(p) for p in touched], format_message(subject, "sync", None, []))
        pause(vault, "commit")
    return git.head_sha()


def pause(vault: Vault, step: str) -> None:
    """Where a test kills a sync mid-adoption: it waits here (a marker file says it is there)."""
    if os.environ.get(PAUSE) == step:
        (vault.state_dir / f"paused-{step}").touch()
        time.sleep(300)


def refuse_dirty(git: VaultGit, adoption: Adoption) -> list[str]:
    """The repository paths the stale side changed; Unsafe when a person has an uncommitted edit in one
    (replaying writes these files: the edit would be lost)."""
    changed = [p for p in git.run("diff", "--name-only", "-z", "--no-renames", adoption.base,
                                  adoption.stale).split("\0") if p]
    dirty = {path for _, path in git.status()} & {git.vault_path(p) for p in changed}
    if dirty:
        raise Unsafe(f"an erase rewrote the history and {sorted(dirty)[0]} has an uncommitted edit", "")
    return changed


UNCHANGED = False  # `replayed`: nothing of the stale side's to carry for this file (or it is erased)


def replayed(git: VaultGit, repo_path: str, adoption: Adoption, onto: str = "HEAD") -> str | None | bool:
    """What the replay makes of one file the stale side changed, over `onto`: its text, None (deleted)
    or UNCHANGED. Reads blobs only, never the work tree: the same every time it runs."""
    base, stale, mine = (blob_at(git, rev, repo_path) for rev in (adoption.base, adoption.stale, onto))
    rel = git.vault_path(repo_path)
    if rel in adoption.erased.paths or {base, stale} & adoption.erased.blobs:
        return UNCHANGED
    if stale == mine:
        return UNCHANGED  # nothing of the stale side's to carry
    kind = kind_of(rel)
    if stale is None:  # deleted on the stale side; changed on the rewritten side since, that change stays
        return None if mine == base else UNCHANGED
    if mine is None and base is not None and kind == "entry" and has_tombstone(git, rel):
        return UNCHANGED  # deleted on the rewritten side, edited on the stale one: the delete wins, as in a merge
    if mine is None or mine == base or kind is None:
        return blob(git, stale)
    from memvault.vault.devices.merge import merge

    return merge(kind, blob(git, base) if base else None, blob(git, mine), blob(git, stale), rel)[0]


def replay(git: VaultGit, repo_path: str, adoption: Adoption) -> bool:
    """Carry the stale side's change of one file over to the work tree (not committed); False when
    there is nothing to carry or it is erased and stays out."""
    text = replayed(git, repo_path, adoption)
    if text is UNCHANGED:
        return False
    full = git.work_dir / repo_path
    if text is None:
        full.unlink(missing_ok=True)
    else:
        full.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(full, encoded(text))
    return True


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def blob_at(git: VaultGit, rev: str, repo_path: str) -> str | None:
    if rev == EMPTY_TREE:
        return None
    out = git.run("ls-tree", "-z", rev, "--", repo_path)
    return out.split()[2] if out.strip("\0") else None
