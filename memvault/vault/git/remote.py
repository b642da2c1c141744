"""The vault's git remote: push and pull (memvault.vault.devices.round merges; this moves commits)."""

from __future__ import annotations

from collections.abc import Callable

from memvault.errors import VaultError
from memvault.vault.git.errors import GitFailed, last_line
from memvault.vault.git.process import OWN_CONFIG, GitTimeout, run_git


class GitRemote:
    """Push and pull for one vault's repository; one part of `VaultGit` (vault.git)."""

    def remote_name(self, remote: str | None) -> str:
        names = [r.name for r in self.repo.remotes]
        if remote:
            if remote not in names:
                raise VaultError(f"no git remote named {remote!r} "
                                 f"(add one: git -C {self.root} remote add {remote} URL)")
            return remote
        if not names:
            raise VaultError(f"the vault has no git remote: git -C {self.root} remote add origin URL")
        return "origin" if "origin" in names else names[0]

    def run_network(self, *args: str, timeout: float) -> str:
        """A git that talks to a remote (fetch, push): stopped with its ssh after `timeout` seconds (0:
        never), on Ctrl-C or on this process's exit (git.process.run_network); its stdout."""
        done = run_git(["git", *OWN_CONFIG, *args], self.work_dir, None, self.env, network_timeout=timeout)
        if done.returncode != 0:
            output = f"{done.stdout}\n{done.stderr}"
            raise GitFailed(f"git {args[0]} failed: {self.explain(output)}", output)
        return done.stdout

    def push(self, remote: str | None = None, force_with_lease: str | None = None, refused_hint: str = "") -> str:
        """Push HEAD to the remote's branch. `force_with_lease`: replace the remote's branch only if it
        still holds this commit ('': what the remote-tracking ref says); `refused_hint`: what to tell
        when a plain push is refused (after `memvault erase` rewrote history, docs/architecture.md, Erasure)."""
        import git

        name = self.remote_name(remote)
        branch = self.repo.active_branch.name
        options = [] if force_with_lease is None else [
            f"--force-with-lease=refs/heads/{branch}" + (f":{force_with_lease}" if force_with_lease else "")]
        try:
            self.repo.git.push(*options, name, f"HEAD:refs/heads/{branch}", env=self.env)
        except git.GitCommandError as exc:
            if refused_hint and force_with_lease is None:
                raise VaultError(f"git push to {name} was refused: {refused_hint}") from None
            raise VaultError(f"git push to {name} failed: {last_line(exc)}") from None
        return name

    def pull(self, remote: str | None = None, timeout: float = 0.0, check: Callable[[str], None] | None = None) -> str:
        """Fetch (stopped after `timeout` seconds, as sync's fetch) and rebase local commits on the
        remote's (memvault's commits touch distinct files). `check(tracking_ref)` may refuse what
        arrived before anything is checked out (core.maintenance: a tree no checkout can hold)."""
        import git

        self.check_state()
        self.remove_stale_locks()  # memvault.core.Memvault.pull holds the vault's lock
        name = self.remote_name(remote)
        branch = self.repo.active_branch.name
        tracking = f"refs/remotes/{name}/{branch}"
        try:
            self.run_network("fetch", "--quiet", "--no-tags", name, f"+refs/heads/{branch}:{tracking}",
                             timeout=timeout)
        except (GitFailed, GitTimeout) as exc:
            raise VaultError(f"git pull from {name} stopped: {exc}") from None
        if check is not None:
            check(tracking)
        try:
            self.repo.git.rebase("--autostash", tracking, env=self.env)
        except git.GitCommandError as exc:
            raise VaultError(f"git pull from {name} stopped: {last_line(exc)} (resolve it with git, then "
                             "run `memvault reindex`)") from None
        clashed = self.unmerged()
        if clashed:
            # --autostash exits 0 when the person's uncommitted edits clash with what arrived: the files
            # then hold conflict markers and the edits sit in the stash. Put the pulled version back
            # (the stash keeps the edits) rather than leave two versions in one memory.
            repo_paths = [self.repo_path(p) for p in clashed]
            self.repo.git.reset("-q", "--", *repo_paths, env=self.env)
            self.repo.git.checkout("--", *repo_paths, env=self.env)
            raise PullClash(
                f"git pull from {name} stopped: your uncommitted edit of {', '.join(clashed[:3])}"
                f"{' ...' if len(clashed) > 3 else ''} clashes with what arrived; the pulled version is in "
                f"place and your edit is kept in git's stash (`git -C {self.root} stash show -p`, then "
                "`git stash pop` to merge it by hand)")
        return name

    def unmerged(self) -> list[str]:
        """Vault paths git could not merge (they hold conflict markers)."""
        out = self.repo.git.diff("--name-only", "-z", "--diff-filter=U", "--", self.repo_path("."))
        return [self.vault_path(path) for path in out.split("\0") if path]


class PullClash(VaultError):
    """A pull whose commits arrived, but whose clashing uncommitted edits were set aside in the stash."""
