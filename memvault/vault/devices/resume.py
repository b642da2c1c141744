"""A sync killed at any instant is finished by the next one (docs/architecture.md, Sync, "Crash
safety"): before the work tree moves, an intent file (.memvault/sync.json: the HEAD before, the commit
merged, the paths a person had changed) is written; the next sync aborts a merge left half-way and
puts back the files a checkout half-changed while HEAD did not move.

An adoption of a history an erase rewrote (vault/devices/adopt.py) has a record of its own
(.memvault/sync-adopt.json: HEAD before, the rewritten and stale heads, the base, the lease, the paths
a person had changed, and the phase), kept until the stale history is pruned, past the plain intent:
the next sync puts back what a killed replay half-wrote, replays and commits once (a replay commit
already over the rewritten head is not made again), then purges and prunes as the killed one would
have. It names commits and paths only, never an erased text."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from memvault.vault.devices import adopt as sync_adopt
from memvault.vault.devices.settle import blob
from memvault.vault.forget.record import Erased, erased
from memvault.vault.format.atomic import atomic_write
from memvault.vault.git.errors import GitFailed
from memvault.vault.git.process import pathspec_file
from memvault.vault.git.repository import VaultGit
from memvault.vault.write.store import Vault

INTENT = "sync.json"
ADOPTING = "sync-adopt.json"
PRUNING = "pruning"  # the phase once derived stores are purged: only the prune is left


def note_intent(vault: Vault, ours: str | None, theirs: str) -> None:
    dirty = sorted(path for _, path in vault.git.status())
    atomic_write(vault.state_dir / INTENT, json.dumps({"head": ours, "target": theirs, "dirty": dirty}).encode("utf-8"))


def abort(git: VaultGit) -> None:
    """Leave no merge half-done: back to HEAD as it was (a person's own edits are kept)."""
    if (git.git_dir / "MERGE_HEAD").exists():
        try:
            git.run("merge", "--abort")
        except GitFailed:
            git.run("reset", "-q", "--merge")


def recover(vault: Vault) -> bool:
    """Mend what a sync killed mid-way left (call with the vault's write lock held): stale git
    locks, a merge in progress, files a checkout half-changed while HEAD did not move."""
    git = vault.git
    git.remove_stale_locks()
    vault.recover_interrupted()
    path = vault.state_dir / INTENT
    intent = read_json(path)
    if intent is None:
        return False
    abort(git)
    head = git.head_sha()
    if intent.get("head") and head == intent["head"] and intent.get("target"):
        restore(git, head, intent["target"], set(intent.get("dirty", [])))
    path.unlink(missing_ok=True)
    return True


def restore(git: VaultGit, head: str, target: str, dirty: set[str]) -> None:
    """Put back HEAD's version of every path between `head` and `target` a person had not changed."""
    out = git.run("diff", "--name-only", "-z", "--no-renames", head, target)
    paths = [p for p in out.split("\0") if p and git.vault_path(p) not in dirty]
    if not paths:
        return
    in_head = set(git.run("ls-tree", "-r", "-z", "--name-only", head, "--", *paths).split("\0"))
    with pathspec_file(paths) as spec:
        git.run("reset", "-q", head, *spec)
    for path in paths:
        if path not in in_head:
            (git.work_dir / path).unlink(missing_ok=True)
    back = [p for p in paths if p in in_head]
    if back:
        with pathspec_file(back) as spec:
            git.run("checkout", "-f", head, *spec)


def read_json(path) -> dict | None:
    """A record's fields; None when there is none, {} when a crash left it unreadable."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def note_adoption(vault: Vault, adoption: sync_adopt.Adoption, head: str, phase: str = "replaying") -> None:
    """Record an adoption before the work tree moves (and its phase as it goes on)."""
    record = {key: getattr(adoption, key) for key in ("rewritten", "stale", "base", "lease")}
    record.update(head=head, phase=phase, dirty=sorted(path for _, path in vault.git.status()))
    atomic_write(vault.state_dir / ADOPTING, json.dumps(record).encode("utf-8"))


def adoption_done(vault: Vault) -> None:
    (vault.state_dir / ADOPTING).unlink(missing_ok=True)


def resume_adoption(vault: Vault) -> tuple[sync_adopt.Adoption, str] | None:
    """Finish the adoption a killed sync left (with the vault's write lock held), up to its commit:
    returns it and the HEAD from before it (what the index catches up from), or None when there is
    none or it cannot go on (its commits gone, HEAD on neither history: the sync plans anew). A
    person's commits since the kill stay: the adoption lands over them.
    GitFailed when a person's edit stands in the way (the record stays: the next sync tries again)."""
    git = vault.git
    record = read_json(vault.state_dir / ADOPTING)
    if record is None:
        return None
    try:
        rewritten, stale, base, head = record["rewritten"], record["stale"], record["base"], record["head"]
    except KeyError:
        adoption_done(vault)
        return None
    if record.get("phase") == PRUNING:  # purged already; the stale side's objects may be half gone
        return sync_adopt.Adoption(rewritten, stale, base, Erased(), lease=record.get("lease")), git.head_sha()
    if not all(is_commit(git, sha) for sha in (rewritten, stale, head, base) if sha != sync_adopt.EMPTY_TREE):
        adoption_done(vault)
        return None
    now = git.head_sha()
    committed = now != rewritten and replay_committed(git, rewritten, now)
    if not committed:  # a person's commits since the kill (`memvault add`) are kept: the adoption lands over them
        if is_ancestor(git, rewritten, now):
            rewritten = now
        elif is_ancestor(git, head, now):
            stale = now
        else:
            adoption_done(vault)
            return None
    listed = erased(vault.root, f"{stale}..{rewritten}")
    adoption = sync_adopt.Adoption(rewritten, stale, base, listed, lease=record.get("lease"))
    adoption.ids, adoption.texts = sync_adopt.erased_memories(vault.root, stale, listed)
    sweep_replay_temp_files(vault, adoption)
    if committed:
        adoption.dropped += sync_adopt.listed_files(git, listed, stale)
        return adoption, head
    # A replay half-written (or a reset half-done): back to HEAD's files, then the whole adoption again.
    known = set(record.get("dirty", []))
    if edited := edited_since(git, adoption, known):
        raise sync_adopt.Unsafe(f"{edited} was edited after a sync adopting an erased history was killed", "")
    restore(git, now, stale if now == rewritten else rewritten, known)
    sync_adopt.adopt(vault, adoption)
    return adoption, head


def sweep_replay_temp_files(vault: Vault, adoption: sync_adopt.Adoption) -> None:
    """A replay killed mid-write leaves its atomic write's temporary file beside the file: with the
    write lock held no one else writes the paths the stale side changed, so theirs go, whatever their age."""
    git = vault.git
    changed = git.run("diff", "--name-only", "-z", "--no-renames", adoption.base, adoption.stale).split("\0")
    vault.sweep_temp_files([PurePosixPath(git.vault_path(path)) for path in changed if path])


def edited_since(git: VaultGit, adoption: sync_adopt.Adoption, known: set[str]) -> str | None:
    """A file a person edited after the kill (one not in `known`, the record's): on disk neither a
    version either side holds nor what the replay writes there. Putting HEAD's back would lose it."""
    for _, rel in git.status():
        if rel in known:
            continue
        repo_path = git.repo_path(rel)
        full = git.work_dir / repo_path
        on_disk = full.read_bytes() if full.is_file() else None
        sides = {sync_adopt.blob_at(git, rev, repo_path) for rev in ("HEAD", adoption.rewritten, adoption.stale)}
        allowed = {None if sha is None else sync_adopt.encoded(blob(git, sha)) for sha in sides}
        text = sync_adopt.replayed(git, repo_path, adoption, onto=adoption.rewritten)
        if text is not sync_adopt.UNCHANGED:
            allowed.add(None if text is None else sync_adopt.encoded(text))
        if on_disk not in allowed:
            return rel
    return None


def is_commit(git: VaultGit, sha) -> bool:
    return isinstance(sha, str) and git.run_once(("cat-file", "-e", f"{sha}^{{commit}}"), None).returncode == 0


def is_ancestor(git: VaultGit, older: str, newer: str | None) -> bool:
    return newer is not None and git.run_once(("merge-base", "--is-ancestor", older, newer), None).returncode == 0


def replay_committed(git: VaultGit, rewritten: str, now: str | None) -> bool:
    """The adoption's replay commit is already made over the rewritten head."""
    if not is_ancestor(git, rewritten, now):
        return False
    subjects = git.run("log", "--format=%s", "--first-parent", f"{rewritten}..{now}").splitlines()
    return any(subject.endswith(sync_adopt.REPLAYED) for subject in subjects)
