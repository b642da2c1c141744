"""The vault's git repository: init, one commit per mutation of exactly its paths, and git's stale locks.

VaultGit is assembled from parts with one job each: the log and commit messages (vault.git.log),
push and pull (vault.git.remote); starting git is vault.git.process's, wording its failures
vault.git.errors'.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from memvault.errors import VaultError
from memvault.vault.git.errors import (
    IGNORED,
    NOTHING_TO_COMMIT,
    GitFailed,
    failed_lock,
    first_cause,
    ignored_advice,
    lock_advice,
)
from memvault.vault.git.log import GitLog
from memvault.vault.git.process import (
    OWN_CONFIG,
    ObjectReader,
    find_repo,
    find_work_tree,
    git_dirs,
    pathspec_file,
    read_ref,
    repo_class,
    run_git,
)
from memvault.vault.git.remote import GitRemote

IDENTITY = {"GIT_AUTHOR_NAME": "memvault", "GIT_AUTHOR_EMAIL": "memvault@localhost",
            "GIT_COMMITTER_NAME": "memvault", "GIT_COMMITTER_EMAIL": "memvault@localhost"}
# The settings that name who wrote a commit (vault.git.identity).
COMMIT_CONFIG = r"^(user|author|committer)\.(name|email)$"
# Lock files git leaves behind when it is killed mid-write: they block every later write.
TOP_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "config.lock", "packed-refs.lock",
             "shallow.lock")
# Where the running processes cannot all be seen (no /proc, or a git process of another user), a lock
# is taken for stale only once it is this old: no git write holds its lock for minutes.
STALE_LOCK_AGE = 600.0
# A git a killed memvault started lives on and finishes its work: the next writer waits this long for it.
GIT_WAIT = 10.0
# Atomic writes' temporary files ('.<name>.XXXX.tmp', vault.format.atomic.atomic_write): never entries, never committed.
TEMP_FILES = ":(exclude,glob)**/.*.tmp"


class VaultGit(GitLog, GitRemote):
    """Git operations for one vault; paths given and returned are relative to the vault root.

    The gitpython repository is opened on first use: history, sync and doctor need it; a write does
    not (its commit is vault.git.fastcommit's, reading refs and objects through git_process)."""

    def __init__(self, root: Path, work_dir: Path, repo=None) -> None:
        self.root = root
        self.work_dir = work_dir.resolve()
        self._repo = repo
        self._env: dict[str, str] | None = None
        self._commit_config: dict[str, str] | None = None
        self._dirs: tuple[Path, Path] | None = None
        self._objects = ObjectReader(self.work_dir)

    def close(self) -> None:
        """Stop the git processes kept running for this repository (each starts again on next use)."""
        self._objects.close()
        if self._repo is not None:
            self._repo.close()  # GitPython's persistent cat-file processes

    @property
    def repo(self):
        if self._repo is None:
            repo = find_repo(self.work_dir)
            if repo is None or repo.bare:
                raise VaultError(f"{self.root} is not a git repository: run `memvault init --vault {self.root}`")
            self._repo = repo
        return self._repo

    @property
    def git_dir(self) -> Path:
        return self.dirs[0]

    @property
    def common_dir(self) -> Path:
        """Where branches and objects live (the git dir itself, unless this is a linked worktree)."""
        return self.dirs[1]

    @property
    def dirs(self) -> tuple[Path, Path]:
        """(git dir, common dir), read from the files (git_process.git_dirs): no GitPython."""
        if self._dirs is None:
            self._dirs = git_dirs(self.work_dir)
            if self._dirs is None:
                raise VaultError(f"{self.root} is not a git repository: run `memvault init --vault {self.root}`")
        return self._dirs

    @classmethod
    def open(cls, root: Path) -> VaultGit:
        work_dir = find_work_tree(root)
        if work_dir is None:
            raise VaultError(f"{root} is not a git repository: run `memvault init --vault {root}`")
        return cls(root.resolve(), work_dir)

    @classmethod
    def init(cls, root: Path, use_enclosing: bool = False) -> VaultGit:
        """Make `root` a repository of its own. A repository that `root` lies inside (someone else's
        project, a notes repository) carries the vault's commits only when asked (`use_enclosing`),
        or when `root` is already a vault in it (made that way before)."""
        root = root.resolve()
        repo = find_repo(root)
        if repo is not None and not repo.bare and Path(repo.working_tree_dir).resolve() != root \
                and not use_enclosing and not is_vault_folder(root):
            repo = None  # never commit silently into the enclosing repository
        if repo is None:
            repo = repo_class().init(root, initial_branch="main")
        if repo.bare:
            raise VaultError(f"{root} is inside a bare git repository: choose another folder")
        return cls(root, Path(repo.working_tree_dir), repo)

    @property
    def enclosing(self) -> bool:
        """True when the vault is a folder inside a larger repository (not a repository of its own)."""
        return self.work_dir != self.root.resolve()

    def describe(self) -> str:
        """Which repository carries the vault's commits, in words."""
        if self.enclosing:
            return f"the enclosing git repository at {self.work_dir} (the vault is its folder {self.repo_path('.')})"
        return f"the vault's own git repository at {self.work_dir}"

    def repo_path(self, rel: str) -> str:
        return os.path.relpath(self.root / rel, self.work_dir)

    def vault_path(self, repo_rel: str) -> str:
        return os.path.relpath(self.work_dir / repo_rel, self.root)

    @property
    def env(self) -> dict[str, str]:
        """Identity variables for commits, only where the user has no git identity of their own."""
        if self._env is None and all(key in os.environ for key in IDENTITY):
            self._env = {}  # the environment names everyone: no config to read
        if self._env is None:
            has_identity = {"user.name", "user.email"} <= self.commit_config.keys()
            self._env = {} if has_identity else {k: v for k, v in IDENTITY.items() if k not in os.environ}
        return self._env

    @property
    def commit_config(self) -> dict[str, str]:
        """Git's settings that name who writes a commit (user.name, author.email, ...; keys in lower
        case): one git a process, whatever the number of commits (each git costs ms)."""
        if self._commit_config is None:
            found = run_git(["git", "config", "--get-regexp", COMMIT_CONFIG], self.work_dir, None, {})
            pairs = (line.split(" ", 1) for line in found.stdout.splitlines() if found.returncode == 0)
            self._commit_config = {pair[0].lower(): pair[1] if len(pair) > 1 else "" for pair in pairs}
        return self._commit_config

    def check_state(self) -> None:
        """Refuse to write into a repository mid-merge, mid-rebase or on a detached HEAD."""
        for marker, what in (("MERGE_HEAD", "a merge"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                             ("REVERT_HEAD", "a revert"), ("rebase-merge", "a rebase"), ("rebase-apply", "a rebase")):
            if (self.git_dir / marker).exists():
                raise VaultError(f"the vault's git repository is in the middle of {what}: finish or abort it first")
        head = (self.git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref:"):
            raise VaultError("the vault's git repository has a detached HEAD: run `git switch <branch>` in the vault")

    def has_commits(self) -> bool:
        return self.repo.head.is_valid()

    def commit(self, paths: list[str], message: str) -> str | None:
        """Commit exactly `paths` (added, changed or removed), leaving the user's other changes alone.
        Call it holding the vault's write lock (stale git locks are then removed, see remove_stale_locks).

        The message goes on stdin and the paths in a file: a transaction of thousands of entries
        carries a trailer per event and a path per file, more than a command line takes. If the
        commit fails, the paths are unstaged again, so git's index is as it was."""
        repo_paths = sorted({self.repo_path(p) for p in paths})
        if not repo_paths:
            return None
        self.remove_stale_locks()
        with pathspec_file(repo_paths) as pathspec:
            if self.head_sha() is not None:  # objects written in-process, then three small gits (vault.git.fastcommit)
                from memvault.vault.git.fastcommit import NotForUs, commit_paths

                try:
                    return commit_paths(self, repo_paths, message)
                except NotForUs:
                    pass  # HEAD moved meanwhile, or files git converts: `commit --only` as before
                except BaseException:
                    self.unstage(pathspec)
                    raise
            self.run("add", "-A", *pathspec)
            only = ["--only"] if self.has_commits() else []
            try:
                self.run("commit", "-q", "--no-verify", "-F", "-", *only, *pathspec, input=message)
            except BaseException as exc:
                self.unstage(pathspec)
                if isinstance(exc, GitFailed) and any(phrase in exc.output for phrase in NOTHING_TO_COMMIT):
                    return None  # a rewrite with the same bytes: nothing to record
                raise
        return self.head_sha()

    def head_sha(self) -> str | None:
        """The commit HEAD names, None on an unborn branch. Read from the ref files alone: no git
        process (`repo.head.commit` asks the cat-file, which may be gone when a stop came, and a
        commit that has landed must not look failed because of it)."""
        return read_ref(*self.dirs)

    def tree_of(self, sha: str) -> bytes:
        """The tree (binary sha) of commit `sha`: a commit's text starts 'tree <hex>'."""
        return bytes.fromhex(self.read_object(bytes.fromhex(sha))[5:45].decode())

    def read_object(self, sha: bytes) -> bytes:
        """An object's bytes (loose or packed), from a persistent `git cat-file --batch` (no new process
        a read; git_process.ObjectReader)."""
        return self._objects.read(sha)

    @property
    def objects_dir(self) -> Path:
        return self.common_dir / "objects"

    def unstage_paths(self, paths: list[str]) -> None:
        """Put git's index back to HEAD for these vault paths (with the vault's write lock held)."""
        self.remove_stale_locks()
        with pathspec_file(sorted({self.repo_path(p) for p in paths})) as pathspec:
            self.unstage(pathspec)

    def unstage(self, pathspec: list[str]) -> None:
        """Put git's index back to HEAD for these paths (what a failed commit staged)."""
        try:
            self.run("reset", "-q", *pathspec)  # (on an unborn branch too: then it empties the index)
        except VaultError:
            pass  # the commit's own error is the one to report

    def run(self, *args: str, input: str | None = None) -> str:
        """Run git in the work tree (paths taken literally, never as patterns); its stdout, or a
        one-line VaultError naming what went wrong.

        A lock that a live git took meanwhile (a person's `git status` refreshes the index under
        index.lock) is waited for and the command tried again, for up to GIT_WAIT seconds."""
        deadline = time.monotonic() + GIT_WAIT
        while True:
            done = self.run_once(args, input)
            if done.returncode == 0 or not self.lock_passing(done.stderr) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if done.returncode != 0:
            output = f"{done.stdout}\n{done.stderr}"
            raise GitFailed(f"git {args[0]} failed: {self.explain(output)}", output)
        return done.stdout

    def lock_passing(self, stderr: str) -> bool:
        """Whether git failed on a lock that is gone already or that a live git holds (worth waiting
        for), rather than on one nobody will remove."""
        lock = failed_lock(stderr)
        # exists() again after the scan: a git that ended during it has removed its lock meanwhile.
        return lock is not None and (not lock.exists() or bool(self.lock_holders()) or not lock.exists())

    def run_once(self, args: tuple[str, ...], input: str | None) -> subprocess.CompletedProcess:
        return run_git(["git", "--literal-pathspecs", *OWN_CONFIG, *args], self.work_dir, input, self.env)

    def explain(self, output: str) -> str:
        """The line of git's output that says what went wrong; a lock file is named with its fix."""
        lock = failed_lock(output)
        if lock is not None:
            return lock_advice(lock, self.lock_holders())
        if IGNORED in output:
            return ignored_advice(output)
        return first_cause(output) or "no output"

    def compact(self) -> None:
        """`git gc`, then the shared parts of a split index that no index names any more removed: git
        writes a new one (160 MB at a million files) each time it re-splits and deletes the old ones
        only after two weeks (splitIndex.sharedIndexExpire)."""
        self.run("gc", "--quiet")
        if len(list(self.git_dir.glob("sharedindex.*"))) > 1:
            self.run("-c", "splitIndex.sharedIndexExpire=now", "update-index", "--split-index")

    # -- stale lock files -----------------------------------------------------------------------------
    def lock_files(self) -> list[Path]:
        """Git's lock files present now (index.lock, HEAD.lock, refs/.../*.lock, ...)."""
        found: list[Path] = []
        for folder in dict.fromkeys((self.git_dir, self.common_dir)):
            found += [folder / name for name in TOP_LOCKS if (folder / name).is_file()]
            found += sorted(p for p in (folder / "refs").rglob("*.lock") if p.is_file())
        return list(dict.fromkeys(found))

    def lock_holders(self) -> list[int] | None:
        """Pids of running git processes in this repository (cwd or arguments inside it), from /proc;
        None where that cannot be told (no /proc, or a git process whose cwd cannot be read)."""
        proc = Path("/proc")
        if not (proc / "self" / "cwd").exists():
            return None
        places = [str(self.work_dir), str(self.git_dir.resolve())]
        holders: list[int] = []
        unknown = False
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if not (entry / "comm").read_text().startswith("git"):
                    continue
                args = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
                cwd = os.readlink(entry / "cwd")
            except (FileNotFoundError, ProcessLookupError):
                continue  # it exited meanwhile (ENOENT or ESRCH, depending on when)
            except OSError:
                unknown = True  # another user's git (EACCES), or /proc will not say: we cannot see where it works
                continue
            if "cat-file" in args[1:3]:
                continue  # gitpython's persistent object reader: it never takes a lock
            if any(inside(cwd, place) for place in places) or any(
                    inside(arg, place) for arg in args[1:] for place in places):
                holders.append(int(entry.name))
        return None if unknown and not holders else holders

    def stale_locks(self) -> list[Path]:
        """Lock files no live git process holds: none runs in this repository (seen in /proc), or,
        where that cannot be seen, the lock is older than STALE_LOCK_AGE."""
        locks = self.lock_files()
        if not locks:
            return []
        holders = self.lock_holders()
        if holders:
            return []
        if holders is None:
            now = time.time()
            return [lock for lock in locks if now - lock_mtime(lock, now) > STALE_LOCK_AGE]
        return locks

    def wait_for_git(self) -> None:
        """Wait a little (GIT_WAIT) for git processes working in this repository to end: when a
        memvault process is killed, the git it was running goes on and finishes its commit."""
        deadline = time.monotonic() + GIT_WAIT
        while self.lock_holders() and time.monotonic() < deadline:
            time.sleep(0.05)

    def remove_stale_locks(self) -> list[Path]:
        """Remove git lock files a killed git left behind; returns them. Only with the vault's write
        lock held: memvault's own git commands then cannot be running, except the orphans of a
        killed memvault, which are waited for."""
        if self.lock_files():
            self.wait_for_git()
        removed = []
        for lock in self.stale_locks():
            try:
                lock.unlink()
                removed.append(lock)
            except FileNotFoundError:
                continue
        return removed

    def uncommitted(self) -> list[str]:
        """Vault files that differ from HEAD or are untracked (what a crash or a hand edit leaves)."""
        return [path for _, path in self.status()]

    def status(self) -> list[tuple[str, str]]:
        """(two-letter status code, vault path) of each file that differs from HEAD or is untracked."""
        # -z: paths come raw (not quoted and escaped as non-ASCII names otherwise are), NUL-separated.
        out = self.repo.git.status("--porcelain", "-z", "--untracked-files=all", "--", self.repo_path("."),
                                     TEMP_FILES)
        fields = out.split("\0")
        found: list[tuple[str, str]] = []
        i = 0
        while i < len(fields):
            item = fields[i]
            i += 1
            if len(item) < 4:
                continue
            found.append((item[:2], self.vault_path(item[3:])))
            if item[0] in "RC":
                i += 1  # a rename or copy is followed by its old path
        return found


def is_vault_folder(root: Path) -> bool:
    from memvault.vault.format import layout

    return (root / layout.STATE_DIR).is_dir() or (root / layout.ENTRIES).is_dir()


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def lock_mtime(lock: Path, default: float) -> float:
    try:
        return lock.stat().st_mtime
    except OSError:
        return default
