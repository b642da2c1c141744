"""Many devices, one memory: `sync` with a git remote, `clone` of a vault, and what follows a merge
(the rule cap, the index caught up with only the files that changed). The git side is
memvault.vault.devices.round; the merge drivers are memvault.vault.devices.merge."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memvault.errors import EntryFormatError, UsageError, VaultError
from memvault.vault.format import layout

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.erasing import Erasing
    from memvault.core.rules import Rules
    from memvault.vault.devices.round import SyncReport


class Syncing:
    """Sync with other devices through git."""

    def __init__(self, storage: Storage, rules: Rules, erasing: Erasing) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.rules = rules
        self.erasing = erasing

    def ensure_merge_setup(self) -> bool:
        """Merge drivers registered in this clone's .git/config and .gitattributes committed (the
        migration of an older vault); True when a commit was made."""
        from memvault.vault.devices.drivers import ensure_merge_setup

        with self.vault.lock():
            self.vault.git.check_state()
            return ensure_merge_setup(self.vault)

    def sync(self, remote: str | None = None) -> SyncReport:
        """Fetch, merge by kind, push (again when another device pushed first); then the rule cap
        and the index, for the files that changed only."""
        return self.caught_up(self.device_sync(remote).run())

    def finish_adoption(self) -> bool:
        """`doctor --fix`: the adoption of an erased history a killed sync left, finished as far as it
        can be without the network (vault.devices.round.DeviceSync.finish); False when a push is left."""
        from memvault.vault.devices.resume import ADOPTING

        self.caught_up(self.device_sync(None).finish())
        return not (self.vault.state_dir / ADOPTING).exists()

    def device_sync(self, remote: str | None):
        from memvault.vault.devices.round import DeviceSync

        return DeviceSync(self.vault, remote or self.settings.vault.git_remote or None, on_merged=self.cap_rules,
                          on_adopted=self.forget_adopted, timeout=self.settings.sync.timeout_seconds)

    def caught_up(self, report: SyncReport) -> SyncReport:
        """The index follows the files the sync changed."""
        if report.changed:
            self.storage.resync_paths([PurePosixPath(path) for path in report.changed])
        return report

    def forget_adopted(self, adoptions) -> None:
        """Another device's erase arrived (before the sync prunes the stale history): the index and
        state files forget it too."""
        self.erasing.forget_erased_elsewhere({i for a in adoptions for i in a.ids},
                                             {t for a in adoptions for t in a.texts})

    def add_remote(self, url: str, name: str = "origin") -> None:
        """Point the vault at a remote (`init --remote URL`): added, or its address changed."""
        git = self.vault.git
        if not url.strip():
            raise UsageError("the remote's URL is empty")
        names = [remote.name for remote in git.repo.remotes]
        git.run("remote", "set-url" if name in names else "add", name, url)

    def cap_rules(self, paths: list[str]) -> None:
        """Rules arrived from another device: past `rules.max_active` in a scope the oldest are
        archived, as adding one would (every device archives the same ones: oldest first)."""
        scopes_seen: dict[tuple, tuple[str, dict]] = {}
        for path in paths:
            rel = PurePosixPath(path)
            if len(rel.parts) < 4 or rel.parts[0] != layout.ENTRIES or rel.parts[2] != "rules" \
                    or not (self.vault.root / rel).is_file():
                continue
            try:
                rule = self.vault.read(rel)
            except EntryFormatError:
                continue
            scopes_seen[(rule.conversation_id, *sorted(rule.scopes.items()))] = (rule.conversation_id, rule.scopes)
        over = []
        for conversation, scopes in scopes_seen.values():
            active = self.rules.rules(conversation, scopes)
            over += active[:max(0, len(active) - self.settings.rules.max_active)]
        if not over:
            return
        with self.storage.write("sync", f"memvault sync: {len(over)} rule(s) over rules.max_active archived") as tx:
            for rule in over:
                if self.vault.is_live(rule.id):
                    tx.soft_delete(rule)

    def kept_both_files(self) -> list[PurePosixPath]:
        """The core files where a sync kept both versions of lines two devices changed."""
        from memvault.vault.devices.keptboth import has_kept_both

        return [rel for rel in map(layout.core_path, layout.CORE_NAMES)
                if has_kept_both(self.vault.read_workspace(rel) or "")]

    def resolve_kept_both(self, names: list[str] | None, keep: str) -> list[PurePosixPath]:
        """Settle what a sync kept both versions of in these core files (None: every such file), as
        chosen (memvault.vault.devices.keptboth: ours, theirs, both, 1, 2): one commit; the paths changed."""
        from memvault.vault.devices.keptboth import CHOICES, device_sides, ours_finder, settled

        if keep not in CHOICES:  # refused before anything is read, even with no such block left
            raise UsageError(f"keep {keep!r}? choose one of {', '.join(CHOICES)}")
        wanted = (self.kept_both_files() if names is None
                  else [layout.core_path(PurePosixPath(name).name) for name in names])
        texts = {}
        for rel in wanted:
            text = self.vault.read_workspace(rel) or ""
            sides = device_sides(self.vault.git, rel) if keep in ("ours", "theirs") else None
            after = settled(text, keep, rel, ours_finder(sides, rel))
            if after != text:
                texts[rel] = after
            elif names is not None:
                raise UsageError(f"{rel} holds no lines a sync kept both versions of")
        if not texts:
            return []
        listed = ", ".join(rel.name for rel in texts)
        with self.storage.write("resolve", f"memvault resolve: {listed}: kept {keep}") as tx:
            for rel, text in texts.items():
                tx.write_file(rel, text)
        return list(texts)


def clone_vault(url: str, settings) -> None:
    """`git clone` a vault into `vault.path` (a new or empty folder), its branch checked out
    (Memvault.clone then makes it this machine's)."""
    from pathlib import Path

    from memvault.vault.git.errors import first_cause
    from memvault.vault.git.process import run_git

    target = Path(settings.vault.path)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UsageError(f"{target} exists and is not an empty folder: clone into a new one")
    existed = target.exists()
    try:
        done = run_git(["git", "clone", "--quiet", "--", url, str(target)], Path.cwd(), None, {},
                       network_timeout=settings.sync.timeout_seconds)  # GitTimeout: one line, as sync's
    except BaseException:  # stopped (timeout, Ctrl-C): git had no time to clean up after itself
        import shutil

        for leftover in [target] if not existed else list(target.iterdir()):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
        raise
    if done.returncode != 0:
        raise VaultError(f"git clone of {url} failed: {first_cause(done.stderr) or 'no output'}")
    check_out_remote_branch(target)


def check_out_remote_branch(work_dir) -> None:
    """After `git clone`: when the remote's HEAD names no branch it has (a bare repository made with
    `git init --bare` says `master`; memvault pushes `main`), nothing was checked out, and the clone
    would start an empty history of its own beside the vault's. Check out the remote's branch instead:
    its `main`, else its only one. A remote with no branch at all is a new, empty vault."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(work_dir), *args], capture_output=True, text=True)

    if git("rev-parse", "--verify", "--quiet", "HEAD").returncode == 0:
        return  # the remote's HEAD was a branch it has: checked out already
    branches = git("for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin").stdout.split()
    branches = [name for name in branches if name != "HEAD"]
    chosen = "main" if "main" in branches else branches[0] if len(branches) == 1 else None
    if chosen is None:
        if branches:
            raise UsageError(f"the remote has several branches ({', '.join(branches)}) and its HEAD names none of "
                             "them: clone it with git (`git clone -b BRANCH`), then use --vault")
        return
    done = git("checkout", "-q", "-B", chosen, "--track", f"origin/{chosen}")
    if done.returncode != 0:
        raise VaultError(f"could not check out the remote's branch {chosen}: {done.stderr.strip() or 'no output'}")
