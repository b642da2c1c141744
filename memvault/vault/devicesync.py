"""`memvault sync` at the git level: fetch, merge by kind, push, again if another device pushed first.

Not to be confused with memvault.index.sync (files -> index). The order of one round:

1. Under the sync lock (.memvault/sync.lock: one sync at a time, a second one is told at once):
2. fetch the remote's branch (outside the vault's write lock: the network may be slow);
3. under the vault's write lock: mend what a killed sync left (a merge in progress, a half-done
   checkout, see `recover`), then fast-forward or merge with the vault's merge drivers
   (memvault.vault.merge), resolve what git cannot express (modify/delete, a folder replaced by a
   file) without conflict markers, drop what an erasure record lists, commit;
4. push; a push another device won first sends us back to 2 (MAX_ATTEMPTS in all).

An intent file (.memvault/sync.json: the HEAD before, the commit merged, the paths a person had
changed) is written before the work tree moves and removed once HEAD has moved, so a sync killed
at any instant is finished by the next one: the files it half-changed are put back, a merge left
half-way is aborted, and the merge runs again. A vault is never left mid-merge.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from memvault.errors import VaultError
from memvault.vault import layout
from memvault.vault.atomic import atomic_write
from memvault.vault.git import OWN_CONFIG, VaultGit
from memvault.vault.git_errors import GitFailed
from memvault.vault.git_log import format_message, parse_trailers
from memvault.vault.git_process import pathspec_file
from memvault.vault.merge import GITATTRIBUTES_FILE, NOTES_VARIABLE, driver_config, gitattributes_text, merge
from memvault.vault.store import Vault

MAX_ATTEMPTS = 5  # fetch-merge-push rounds before giving up on a remote other devices keep pushing to
SYNC_LOCK = "sync.lock"
INTENT = "sync.json"
NOTES = "merge-notes.jsonl"
REJECTED = ("[rejected]", "non-fast-forward", "fetch first", "stale info", "cannot lock ref")
ERASED_PATH, ERASED_BLOB = "Erased-Path", "Erased-Blob"  # erasure records' trailers (docs/architecture.md, Sync)


class SyncBusy(VaultError):
    """Another sync of this vault is running."""

    exit_code = 3


class RemoteUnreachable(VaultError):
    """The remote could not be fetched from."""

    exit_code = 4


class PushRaceLost(VaultError):
    """Other devices pushed first every time we tried."""

    exit_code = 5


class SyncBlocked(VaultError):
    """A person's uncommitted edit stands where the merge must write."""

    exit_code = 6


@dataclass
class SyncReport:
    remote: str
    branch: str
    outcome: str = "up-to-date"  # up-to-date | fast-forward | merged | pushed (only ours were new)
    pushed: bool = False
    attempts: int = 0
    recovered: bool = False  # a killed sync's leftovers were mended first
    before: str | None = None  # HEAD before the sync, after it
    after: str | None = None
    changed: list[str] = field(default_factory=list)  # vault paths the sync changed in the work tree
    merges: list[dict] = field(default_factory=list)  # the drivers' decisions (MERGE-KEPT-LATER, ...)
    fallbacks: list[str] = field(default_factory=list)  # one line per conflict git could not express

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in ("remote", "branch", "outcome", "pushed", "attempts", "recovered",
                                                      "before", "after", "changed", "merges", "fallbacks")}

    def by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.merges:
            key = f"{record.get('kind', '?')}:{record.get('event', '?')}"
            counts[key] = counts.get(key, 0) + 1
        return counts


# -- the drivers, installed in the vault --------------------------------------------------------------
def install_drivers(git: VaultGit, python: str | None = None) -> bool:
    """Register the merge drivers in .git/config (per clone: a copied or moved vault gets this
    machine's interpreter). True when something was written."""
    wanted = driver_config(python or sys.executable)
    try:
        out = git.run("config", "--local", "--get-regexp", r"^merge\.memvault-")
    except GitFailed:
        out = ""  # none yet (git config exits 1)
    have = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    missing = {key: value for key, value in wanted.items() if have.get(key.lower()) != value}
    for key, value in missing.items():
        git.run("config", "--local", key, value)
    return bool(missing)


def ensure_merge_setup(vault: Vault) -> bool:
    """Drivers in .git/config and .gitattributes committed (the migration of a vault made before
    sync existed: one commit). Call with the vault's write lock held; True when a commit was made."""
    install_drivers(vault.git)
    path = vault.root / GITATTRIBUTES_FILE
    text = gitattributes_text(path.read_text(encoding="utf-8") if path.is_file() else None)
    if text is None:
        return False
    atomic_write(path, text.encode("utf-8"))
    return vault.git.commit([GITATTRIBUTES_FILE], format_message(
        "memvault: merge drivers for sync (.gitattributes)", "migrate", None, [])) is not None


# -- one sync ------------------------------------------------------------------------------------------
class DeviceSync:
    """Sync one vault with one remote."""

    def __init__(self, vault: Vault, remote: str | None = None, on_merged=None) -> None:
        self.vault = vault
        # callable(paths) run after a merge, without the lock, before the push: its commits go out too
        self.on_merged = on_merged
        self.git = vault.git
        self.remote = self.git.remote_name(remote)
        try:
            self.branch = self.git.repo.active_branch.name
        except TypeError:
            raise VaultError("the vault's git repository has a detached HEAD: run `git switch <branch>` in the vault, "
                             "then sync") from None
        self.tracking = f"refs/remotes/{self.remote}/{self.branch}"

    @property
    def intent_path(self):
        return self.vault.state_dir / INTENT

    @property
    def notes_path(self):
        return self.vault.state_dir / NOTES

    def run(self) -> SyncReport:
        """Fetch, merge, push until the remote holds ours (or MAX_ATTEMPTS rounds lost the race)."""
        report = SyncReport(self.remote, self.branch, before=self.git.head_sha())
        with self.sync_lock():
            for attempt in range(1, MAX_ATTEMPTS + 1):
                report.attempts = attempt
                self.fetch()
                with self.vault.lock():
                    report.recovered |= self.recover()
                    ensure_merge_setup(self.vault)
                    moved_from = self.git.head_sha()
                    self.merge(report)
                if self.on_merged and moved_from != self.git.head_sha():
                    self.on_merged(self.changed_between(moved_from, self.git.head_sha()))
                if self.push(report):
                    break
                time.sleep(random.uniform(0.05, 0.3) * attempt)  # another device pushed first: let it finish
            else:
                raise PushRaceLost(f"other devices pushed to {self.remote} first {MAX_ATTEMPTS} times; "
                                   "what arrived is merged here, run `memvault sync` again")
        report.after = self.git.head_sha()
        if report.before != report.after and report.before:
            report.changed = self.changed_between(report.before, report.after)
        elif report.after and not report.before:
            report.changed = self.changed_between(None, report.after)
        return report

    @contextmanager
    def sync_lock(self) -> Iterator[None]:
        from filelock import FileLock, Timeout

        self.vault.ensure_state_dir()
        lock = FileLock(str(self.vault.state_dir / SYNC_LOCK), timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise SyncBusy("another `memvault sync` of this vault is running") from None
        try:
            yield
        finally:
            lock.release()

    # -- fetch and push --------------------------------------------------------------------------------
    def fetch(self) -> None:
        try:
            self.git.run("fetch", "--quiet", "--no-tags", self.remote,
                         f"+refs/heads/{self.branch}:{self.tracking}")
        except GitFailed as exc:
            if "couldn't find remote ref" in exc.output:
                self.git.run("update-ref", "-d", self.tracking)
                return  # an empty remote: nothing to merge, ours to push
            raise RemoteUnreachable(f"cannot fetch from {self.remote}: {exc}") from None

    def push(self, report: SyncReport) -> bool:
        """Push HEAD; False when the remote moved meanwhile (another device's push won)."""
        head, theirs = self.git.head_sha(), self.remote_sha()
        if head is None or head == theirs:
            return True
        try:
            self.git.run("push", "--quiet", "--no-verify", self.remote, f"{head}:refs/heads/{self.branch}")
        except GitFailed as exc:
            if any(word in exc.output for word in REJECTED):
                return False
            raise RemoteUnreachable(f"cannot push to {self.remote}: {exc}") from None
        self.git.run("update-ref", self.tracking, head)
        report.pushed = True
        if report.outcome == "up-to-date":
            report.outcome = "pushed"
        return True

    def remote_sha(self) -> str | None:
        try:
            return self.git.run("rev-parse", "--verify", "-q", f"{self.tracking}^{{commit}}").strip() or None
        except GitFailed:
            return None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git.run_once(("merge-base", "--is-ancestor", older, newer), None).returncode == 0

    # -- merge ------------------------------------------------------------------------------------------
    def merge(self, report: SyncReport) -> None:
        """Bring the fetched commits into HEAD (with the vault's write lock held)."""
        ours, theirs = self.git.head_sha(), self.remote_sha()
        if theirs is None or theirs == ours or (ours is not None and self.is_ancestor(theirs, ours)):
            return
        self.git.check_state()
        self.note_intent(ours, theirs)
        try:
            if ours is None or self.is_ancestor(ours, theirs):
                self.fast_forward(theirs)
                report.outcome = "fast-forward"
            else:
                self.three_way(ours, theirs, report)
                report.outcome = "merged"
        finally:
            if self.git.head_sha() != ours or not (self.git.git_dir / "MERGE_HEAD").exists():
                self.intent_path.unlink(missing_ok=True)

    def fast_forward(self, theirs: str) -> None:
        try:
            self.git.run("merge", "-q", "--ff-only", theirs)  # (an unborn branch too)
        except GitFailed as exc:
            raise blocked(exc) from None

    def three_way(self, ours: str, theirs: str, report: SyncReport) -> None:
        """A merge commit of both sides, through the drivers; never left half-done."""
        self.notes_path.unlink(missing_ok=True)
        done = run_merge(self.git, theirs, {NOTES_VARIABLE: str(self.notes_path)})
        try:
            if done.returncode != 0 and not (self.git.git_dir / "MERGE_HEAD").exists():
                raise blocked(GitFailed("git merge failed", f"{done.stdout}\n{done.stderr}"))
            report.fallbacks += self.resolve_unmerged()
            report.fallbacks += [f"{path}: erased on a device, removed" for path in self.drop_erased(ours, theirs)]
            report.merges += self.read_notes()
            self.git.run("commit", "-q", "--no-verify", "-F", "-",
                         input=self.message(theirs, report.merges, report.fallbacks))
        except BaseException:
            self.abort()
            raise
        finally:
            self.notes_path.unlink(missing_ok=True)

    def resolve_unmerged(self) -> list[str]:
        """Settle each path git left unmerged (what no driver can express: modify/delete, a rename on
        one side and an edit on the other, a folder replaced by a file): one line each."""
        stages: dict[str, dict[int, str]] = {}
        out = self.git.run("ls-files", "-u", "-z")
        for item in out.split("\0"):
            if not item:
                continue
            info, path = item.split("\t", 1)
            _, blob, stage = info.split()
            stages.setdefault(path, {})[int(stage)] = blob
        lines = []
        for path, blobs in sorted(stages.items()):
            lines.append(self.settle(path, blobs))
        leftovers = self.git.run("ls-files", "-o", "-z", "--exclude-standard")
        strays = [p for p in leftovers.split("\0") if p and "~" in PurePosixPath(p).name]
        for stray in strays:  # git keeps the losing side of a file/folder clash as 'name~<side>'
            lines.append(f"{self.git.vault_path(stray)}: the other side of a file/folder clash, kept beside it")
            self.git.run("add", "--", stray)
        return lines

    def settle(self, repo_path: str, blobs: dict[int, str]) -> str:
        rel = self.git.vault_path(repo_path)
        kind = kind_of(rel)
        full = self.git.work_dir / repo_path
        if 2 in blobs and 3 in blobs and kind is not None:  # a driver that could not run: merge here
            base = self.blob(blobs[1]) if 1 in blobs else None
            merged, record = merge(kind, base, self.blob(blobs[2]), self.blob(blobs[3]), rel)
            atomic_write(full, merged.encode("utf-8", "surrogateescape"))
            self.git.run("add", "--", repo_path)
            return f"{rel}: merged as {kind} ({(record or {}).get('event', 'clean')})"
        if 2 in blobs and 3 in blobs:  # not memvault's file: ours stays, theirs in history
            self.git.run("checkout", "--ours", "--", repo_path)
            self.git.run("add", "--", repo_path)
            return f"{rel}: changed on both devices; this device's version kept, the other in history"
        side = 2 if 2 in blobs else 3
        clash = PurePosixPath(rel).name.rpartition("~")[0]
        if clash and (full.parent / clash).is_dir():  # git moved the file aside as 'name~<side>'
            self.git.run("add", "--", repo_path)
            return (f"{PurePosixPath(rel).parent / clash}: a folder on one device, a file on the other; both kept, "
                    f"the file as {rel}")
        if full.is_dir():
            self.git.run("rm", "-q", "--cached", "--", repo_path)
            return f"{rel}: a folder on one device, a file on the other; the folder kept, the file in history"
        if kind == "entry" and self.has_tombstone(rel):
            self.git.run("rm", "-q", "-f", "--", repo_path)
            return f"{rel}: deleted on one device, edited on the other; the delete wins, the edit in history"
        atomic_write(full, self.blob(blobs[side]).encode("utf-8", "surrogateescape"))
        self.git.run("add", "--", repo_path)
        return f"{rel}: removed or moved on one device, edited on the other; the edit kept"

    def has_tombstone(self, rel: str) -> bool:
        """Whether the merged tree holds a tombstone of the live entry at `rel`."""
        parts = PurePosixPath(rel).parts
        if len(parts) < 4:
            return False
        tomb = PurePosixPath(parts[0], parts[1], layout.DELETED, *parts[2:])
        return bool(self.git.run("ls-files", "-z", "--", self.git.repo_path(str(tomb))).strip("\0"))

    def drop_erased(self, ours: str, theirs: str) -> list[str]:
        """The hook of `memvault erase`: an erasure record (a commit whose trailers list
        Memvault-Erased-Path and Memvault-Erased-Blob) on either side means those paths and blobs never
        come back through a merge."""
        out = self.git.run("log", "--format=%B%x1e", "--fixed-strings", "--grep=Memvault-Erased-", f"{ours}...{theirs}")
        paths: set[str] = set()
        blobs: set[str] = set()
        for message in out.split("\x1e"):
            trailers = parse_trailers(message)
            paths.update(trailers.get(ERASED_PATH, []))
            blobs.update(trailers.get(ERASED_BLOB, []))
        if not paths and not blobs:
            return []
        dropped = []
        for item in self.git.run("ls-files", "-s", "-z").split("\0"):
            if not item:
                continue
            info, repo_path = item.split("\t", 1)
            rel = self.git.vault_path(repo_path)
            if rel in paths or info.split()[1] in blobs:
                self.git.run("rm", "-q", "-f", "--", repo_path)
                dropped.append(rel)
        return dropped

    def abort(self) -> None:
        """Leave no merge half-done: back to HEAD as it was (a person's own edits are kept)."""
        if (self.git.git_dir / "MERGE_HEAD").exists():
            try:
                self.git.run("merge", "--abort")
            except GitFailed:
                self.git.run("reset", "-q", "--merge")

    def blob(self, sha: str) -> str:
        return self.git.run("cat-file", "blob", sha)

    def message(self, theirs: str, merges: list[dict], fallbacks: list[str]) -> str:
        events = [(record["event"], record.get("id") or record.get("path", "?")) for record in merges]
        lines = [f"memvault sync: merged {self.remote}/{self.branch} ({theirs[:8]})"]
        body = []
        for record in merges:
            if record["event"] == "MERGE-KEPT-LATER":
                body.append(f"- {record['path']}: edited on two devices; kept the later edit, the other "
                            f"(\"{record.get('other', '')[:80]}\", {record.get('other_updated_at', '')}) is in history")
            elif record["event"] == "MERGE-KEPT-BOTH":
                body.append(f"- {record['path']}: the same lines changed on two devices; both versions kept "
                            "(memvault doctor lists them)")
        body += [f"- {line}" for line in fallbacks]
        subject = lines[0]
        message = format_message(subject, "sync", None, events)
        if body:
            head, _, trailers = message.partition("\n\n")
            message = f"{head}\n\n" + "\n".join(body) + f"\n\n{trailers}"
        return message

    def read_notes(self) -> list[dict]:
        try:
            text = self.notes_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    # -- a killed sync ---------------------------------------------------------------------------------
    def note_intent(self, ours: str | None, theirs: str) -> None:
        dirty = sorted(path for _, path in self.git.status())
        atomic_write(self.intent_path, json.dumps({"head": ours, "target": theirs, "dirty": dirty}).encode("utf-8"))

    def recover(self) -> bool:
        """Mend what a sync killed mid-way left (call with the vault's write lock held): stale git
        locks, a merge in progress, files a checkout half-changed while HEAD did not move."""
        self.git.remove_stale_locks()
        self.vault.recover_interrupted()
        try:
            intent = json.loads(self.intent_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            intent = None
        except ValueError:
            intent = {}
        if intent is None:
            return False
        self.abort()
        head = self.git.head_sha()
        if intent.get("head") and head == intent["head"] and intent.get("target"):
            self.restore(head, intent["target"], set(intent.get("dirty", [])))
        self.intent_path.unlink(missing_ok=True)
        return True

    def restore(self, head: str, target: str, dirty: set[str]) -> None:
        """Put back HEAD's version of every path between `head` and `target` a person had not changed."""
        out = self.git.run("diff", "--name-only", "-z", "--no-renames", head, target)
        paths = [p for p in out.split("\0") if p and self.git.vault_path(p) not in dirty]
        if not paths:
            return
        in_head = set(self.git.run("ls-tree", "-r", "-z", "--name-only", head, "--", *paths).split("\0"))
        with pathspec_file(paths) as spec:
            self.git.run("reset", "-q", head, *spec)
        for path in paths:
            if path not in in_head:
                (self.git.work_dir / path).unlink(missing_ok=True)
        back = [p for p in paths if p in in_head]
        if back:
            with pathspec_file(back) as spec:
                self.git.run("checkout", "-f", head, *spec)

    def changed_between(self, before: str | None, after: str) -> list[str]:
        args = ("diff", "--name-only", "-z", "--no-renames", before, after) if before else \
            ("ls-tree", "-r", "-z", "--name-only", after)
        return [self.git.vault_path(p) for p in self.git.run(*args).split("\0") if p]


def kind_of(rel: str) -> str | None:
    """Which merge a vault path gets (as .gitattributes routes it), None for a file not memvault's."""
    path = PurePosixPath(rel)
    if layout.is_workspace_path(path):
        return "core" if path.parts[0] == layout.CORE_DIR else "journal"
    if path.parts and path.parts[0] == layout.ENTRIES and path.suffix == ".md":
        return "summary" if {"summaries", "sessions"} & set(path.parts) else "entry"
    return None


def blocked(exc: GitFailed) -> SyncBlocked:
    return SyncBlocked(f"the sync cannot merge: {exc} (an uncommitted edit: `memvault doctor --fix` commits an "
                       "entry edited by hand; or commit or undo it with git; then sync again)")


def run_merge(git: VaultGit, theirs: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`git merge --no-commit` of `theirs`, the drivers told where to note their decisions (through
    this process's environment only: several vaults may sync at once in one process)."""
    args = ["git", "--literal-pathspecs", *OWN_CONFIG, "merge", "-q", "--no-ff", "--no-commit",
            "--allow-unrelated-histories", theirs]
    return subprocess.run(args, cwd=git.work_dir, capture_output=True, text=True, encoding="utf-8", errors="replace",
                          env={**os.environ, **git.env, **env})
