"""`memvault sync` at the git level: fetch, merge by kind, push, again if another device pushed first.

Not to be confused with memvault.index.catchup (files -> index). The order of one round:

1. Under the sync lock (.memvault/sync.lock: one sync at a time, a second one is told at once):
2. fetch the remote's branch (outside the vault's write lock: the network may be slow);
3. under the vault's write lock: mend what a killed sync left (a merge in progress, a half-done
   checkout, see `recover`), then fast-forward or merge with the vault's merge drivers
   (memvault.vault.devices.merge), resolve what git cannot express (modify/delete, a folder replaced by a
   file) without conflict markers (`settle`), drop what an erasure record lists, commit; or,
   when one side is a history an erase rewrote and the other still holds what it erased, adopt the
   rewritten one (`adopt`);
4. push (leased, when this device's erase replaces the remote's history); a push another device won
   first sends us back to 2 (MAX_ATTEMPTS in all). After an adoption, the stale history is pruned.

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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from memvault.errors import VaultError
from memvault.vault.devices import adopt as sync_adopt
from memvault.vault.devices import safety as sync_safety
from memvault.vault.devices.drivers import ensure_merge_setup
from memvault.vault.devices.merge import NOTES_VARIABLE
from memvault.vault.devices.resume import (
    INTENT,
    PRUNING,
    abort,
    adoption_done,
    note_adoption,
    note_intent,
    recover,
    resume_adoption,
)
from memvault.vault.devices.settle import drop_listed, resolve_unmerged
from memvault.vault.forget import erase
from memvault.vault.forget.record import Erased, erased
from memvault.vault.git import rewrites
from memvault.vault.git.errors import GitFailed
from memvault.vault.git.log import format_message
from memvault.vault.git.process import GitTimeout
from memvault.vault.git.repository import OWN_CONFIG, VaultGit
from memvault.vault.write.store import Vault

MAX_ATTEMPTS = 5  # fetch-merge-push rounds before giving up on a remote other devices keep pushing to
SYNC_LOCK = "sync.lock"
NOTES = "merge-notes.jsonl"
REJECTED = ("[rejected]", "non-fast-forward", "fetch first", "stale info", "cannot lock ref")


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
    outcome: str = "up-to-date"  # up-to-date | fast-forward | merged | pushed (only ours were new) | erasure adopted
    pushed: bool = False
    attempts: int = 0
    recovered: bool = False  # a killed sync's leftovers were mended first
    before: str | None = None  # HEAD before the sync, after it
    after: str | None = None
    changed: list[str] = field(default_factory=list)  # vault paths the sync changed in the work tree
    merges: list[dict] = field(default_factory=list)  # the drivers' decisions (MERGE-KEPT-LATER, ...)
    fallbacks: list[str] = field(default_factory=list)  # one line per conflict git could not express
    erased: list[str] = field(default_factory=list)  # paths an erase on some device took out here (devices.adopt)

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in ("remote", "branch", "outcome", "pushed", "attempts", "recovered",
                                                      "before", "after", "changed", "merges", "fallbacks", "erased")}

    def by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for record in self.merges:
            key = f"{record.get('kind', '?')}:{record.get('event', '?')}"
            counts[key] = counts.get(key, 0) + 1
        return counts


# -- one sync ------------------------------------------------------------------------------------------
class DeviceSync:
    """Sync one vault with one remote."""

    def __init__(self, vault: Vault, remote: str | None = None, on_merged=None, on_adopted=None,
                 timeout: float = 0.0) -> None:
        self.vault = vault
        self.timeout = timeout  # seconds a fetch or push may take (sync.timeout_seconds; 0: no limit)
        # callable(paths) run after a merge, without the lock, before the push: its commits go out too
        self.on_merged = on_merged
        # callable(adoptions) run without the lock before the stale history is pruned: derived stores forget it
        self.on_adopted = on_adopted
        self.git = vault.git
        self.remote = self.git.remote_name(remote)
        try:
            self.branch = self.git.repo.active_branch.name
        except TypeError:
            raise VaultError("the vault's git repository has a detached HEAD: run `git switch <branch>` in the vault, "
                             "then sync") from None
        self.tracking = f"refs/remotes/{self.remote}/{self.branch}"
        self.fetched_before: str | None = None  # the remote head this clone knew before the round's fetch
        self.adoption: sync_adopt.Adoption | None = None  # this round's adoption of an erased history
        self.adopted: list[sync_adopt.Adoption] = []  # every round's (the caller purges derived stores)

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
                    report.recovered |= recover(self.vault)
                    if attempt == 1:
                        self.resume(report)
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
            self.note_changes(report)
            if self.adopted:  # after the diff above: `before` may be a commit of the stale history
                self.forget_stale_history()
        return report

    def finish(self) -> SyncReport:
        """`doctor --fix`, without the network: an adoption a killed sync left is replayed and committed,
        derived stores purged and the stale history pruned; on the erasing device, whose remote still
        holds the stale history, the leased push and the prune wait for the next sync."""
        report = SyncReport(self.remote, self.branch, before=self.git.head_sha())
        with self.sync_lock():
            with self.vault.lock():
                report.recovered |= recover(self.vault)
                self.resume(report)
            self.note_changes(report)
            theirs = self.remote_sha()
            if self.adopted and (theirs is None or self.is_ancestor(theirs, report.after)):
                self.forget_stale_history()
        return report

    def note_changes(self, report: SyncReport) -> None:
        report.after = self.git.head_sha()
        if report.before != report.after and report.before:
            report.changed = self.changed_between(report.before, report.after)
        elif report.after and not report.before:
            report.changed = self.changed_between(None, report.after)

    def resume(self, report: SyncReport) -> None:
        """An adoption a killed sync left is finished up to its commit; its push, purge and prune follow."""
        try:
            resumed = resume_adoption(self.vault)
        except GitFailed as exc:
            raise blocked(exc) from None
        if resumed is None:
            return
        adoption, report.before = resumed
        report.recovered = True
        self.adopted.append(adoption)
        report.outcome = "erasure adopted"
        report.erased = sorted({*report.erased, *adoption.dropped})

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
        self.fetched_before = self.remote_sha()
        try:
            self.git.run_network("fetch", "--quiet", "--no-tags", self.remote,
                                 f"+refs/heads/{self.branch}:{self.tracking}", timeout=self.timeout)
        except GitTimeout as exc:
            raise RemoteUnreachable(f"cannot fetch from {self.remote}: {exc}") from None
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
        # After this device's erase the remote's old history is replaced, only if it is still the one fetched.
        lease = [f"--force-with-lease=refs/heads/{self.branch}:{self.adoption.lease}"] \
            if self.adoption and self.adoption.lease else []
        try:
            self.git.run_network("push", "--quiet", "--no-verify", *lease, self.remote,
                                 f"{head}:refs/heads/{self.branch}", timeout=self.timeout)
        except GitTimeout as exc:
            raise RemoteUnreachable(f"cannot push to {self.remote}: {exc}") from None
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
        self.adoption = None
        if theirs is None or theirs == ours or (ours is not None and self.is_ancestor(theirs, ours)):
            return
        self.git.check_state()
        refusal = sync_safety.check(self.git, ours, theirs)
        if refusal is not None:  # the remote head holds paths no checkout can hold: merged without them
            report.fallbacks += refusal.lines()
            theirs = refusal.safe
        claims = erased(self.vault.root, f"{ours}...{theirs}" if ours else theirs)
        report.fallbacks += [line for line in claims.refusals() if line not in report.fallbacks]
        if ours is not None:
            self.adoption = sync_adopt.plan(self.vault, self.remote, self.branch, ours, theirs, self.fetched_before)
        note_intent(self.vault, ours, theirs)
        try:
            if self.adoption:
                note_adoption(self.vault, self.adoption, ours)  # kept until the prune: a kill is finished
                try:
                    sync_adopt.adopt(self.vault, self.adoption)
                except sync_adopt.Unsafe as exc:  # refused before anything moved
                    adoption_done(self.vault)
                    raise blocked(exc) from None
                except GitFailed as exc:
                    raise blocked(exc) from None
                self.adopted.append(self.adoption)
                report.outcome = "erasure adopted"
                report.erased = sorted({*report.erased, *self.adoption.dropped})
            elif ours is None or self.is_ancestor(ours, theirs):
                self.fast_forward(theirs)
                report.outcome = "fast-forward"
            else:
                self.three_way(ours, theirs, claims, report)
                report.outcome = "merged"
        finally:
            if self.git.head_sha() != ours or not (self.git.git_dir / "MERGE_HEAD").exists():
                self.intent_path.unlink(missing_ok=True)

    def fast_forward(self, theirs: str) -> None:
        try:
            self.git.run("merge", "-q", "--ff-only", theirs)  # (an unborn branch too)
        except GitFailed as exc:
            raise blocked(exc) from None

    def three_way(self, ours: str, theirs: str, listed: Erased, report: SyncReport) -> None:
        """A merge commit of both sides, through the drivers; never left half-done."""
        self.notes_path.unlink(missing_ok=True)
        done = run_merge(self.git, theirs, {NOTES_VARIABLE: str(self.notes_path)})
        try:
            if done.returncode != 0 and not (self.git.git_dir / "MERGE_HEAD").exists():
                raise blocked(GitFailed("git merge failed", f"{done.stdout}\n{done.stderr}"))
            report.fallbacks += resolve_unmerged(self.git)
            report.fallbacks += [f"{path}: erased on a device, removed" for path in drop_listed(self.git, listed)]
            report.merges += self.read_notes()
            self.git.run("commit", "-q", "--no-verify", "-F", "-",
                         input=self.message(theirs, report.merges, report.fallbacks))
        except BaseException:
            abort(self.git)
            raise
        finally:
            self.notes_path.unlink(missing_ok=True)

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

    def forget_stale_history(self) -> None:
        """After an adoption and its push: derived stores forget what the erase took (`on_adopted`);
        the stale history is reachable from nothing now that the remote-tracking ref names the pushed
        head; reflogs, ORIG_HEAD and its objects go (under the write lock: a prune must not race a
        writer's fresh objects). The adoption's record goes last: a kill in here is finished too."""
        sync_adopt.pause(self.vault, "purge")
        if self.on_adopted:
            self.on_adopted(self.adopted)
        with self.vault.lock():
            note_adoption(self.vault, self.adopted[-1], self.adopted[-1].stale, PRUNING)
            sync_adopt.pause(self.vault, PRUNING)
            rewrites.leased(self.vault.state_dir, self.remote, self.branch)
            erase.clean_git(self.git.work_dir)
            adoption_done(self.vault)

    def changed_between(self, before: str | None, after: str) -> list[str]:
        args = ("diff", "--name-only", "-z", "--no-renames", before, after) if before else \
            ("ls-tree", "-r", "-z", "--name-only", after)
        return [self.git.vault_path(p) for p in self.git.run(*args).split("\0") if p]


def blocked(exc: GitFailed) -> SyncBlocked:
    """The merge stopped: an uncommitted edit is blamed only when git or the adoption names one."""
    if isinstance(exc, sync_adopt.Unsafe) or any(word in exc.output for word in ("overwritten", "not uptodate")):
        return SyncBlocked(f"the sync cannot merge: {exc} (an uncommitted edit: `memvault doctor --fix` commits an "
                           "entry edited by hand; or commit or undo it with git; then sync again)")
    return SyncBlocked(f"the sync cannot merge: {exc} (`memvault doctor` says what is in the way)")


def run_merge(git: VaultGit, theirs: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`git merge --no-commit` of `theirs`, the drivers told where to note their decisions (through
    this process's environment only: several vaults may sync at once in one process)."""
    args = ["git", "--literal-pathspecs", *OWN_CONFIG, "merge", "-q", "--no-ff", "--no-commit",
            "--allow-unrelated-histories", theirs]
    return subprocess.run(args, cwd=git.work_dir, capture_output=True, text=True, encoding="utf-8", errors="replace",
                          env={**os.environ, **git.env, **env})
