"""A sync killed at any instant is finished by the next one (docs/architecture.md, Sync, "Crash
safety"): before the work tree moves, an intent file (.memvault/sync.json: the HEAD before, the commit
merged, the paths a person had changed) is written; the next sync aborts a merge left half-way and
puts back the files a checkout half-changed while HEAD did not move."""

from __future__ import annotations

import json

from memvault.vault.atomic import atomic_write
from memvault.vault.git import VaultGit
from memvault.vault.git_errors import GitFailed
from memvault.vault.git_process import pathspec_file
from memvault.vault.store import Vault

INTENT = "sync.json"


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
    try:
        intent = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        intent = None
    except ValueError:
        intent = {}
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
