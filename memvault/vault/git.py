"""The vault's git repository: init, one commit per mutation of exactly its paths, and the log."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memvault.errors import VaultError

IDENTITY = {"GIT_AUTHOR_NAME": "memvault", "GIT_AUTHOR_EMAIL": "memvault@localhost",
            "GIT_COMMITTER_NAME": "memvault", "GIT_COMMITTER_EMAIL": "memvault@localhost"}
TRAILER_PREFIX = "Memvault-"
FIELD_SEP, RECORD_SEP = "\x1f", "\x1e"
# Lock files git leaves behind when it is killed mid-write: they block every later write.
TOP_LOCKS = ("index.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "config.lock", "packed-refs.lock",
             "shallow.lock")
# Where the running processes cannot all be seen (no /proc, or a git process of another user), a lock
# is taken for stale only once it is this old: no git write holds its lock for minutes.
STALE_LOCK_AGE = 600.0
# A git a killed memvault started lives on and finishes its work: the next writer waits this long for it.
GIT_WAIT = 10.0
# Memvault's own commits run no hooks (a hook that rewrites the message strips the trailers; a slow one
# outlives a killed memvault) and are not signed (an automated commit cannot ask for a passphrase).
OWN_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false")
# Atomic writes' temporary files ('.<name>.XXXX.tmp', vault.atomic.atomic_write): never entries, never committed.
TEMP_FILES = ":(exclude,glob)**/.*.tmp"
LOCK_FAILURE = re.compile(r"Unable to create '([^']+\.lock)'")  # git's words when a lock file exists


class GitFailed(VaultError):
    """A git command exited non-zero; `output` is all it said."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


@dataclass
class Commit:
    sha: str
    time: datetime
    subject: str
    trailers: dict[str, list[str]] = field(default_factory=dict)
    changes: list[tuple[str, str, str | None]] = field(default_factory=list)  # (status, path, old path)

    def to_dict(self) -> dict:
        return {"commit": self.sha, "time": self.time.isoformat(), "subject": self.subject,
                "operation": (self.trailers.get("Operation") or [None])[0],
                "conversation": (self.trailers.get("Conversation") or [None])[0],
                "events": self.trailers.get("Event", [])}


# Every git memvault starts runs in a session of its own: a Ctrl-C in the terminal (SIGINT to the
# whole foreground process group) or a service manager's stop of the group must not kill GitPython's
# persistent `git cat-file` or a `git commit` half-way; memvault decides when they stop.
OWN_SESSION = {"start_new_session": True} if os.name == "posix" else {}


def repo_class():
    """git.Repo whose git processes (the persistent cat-file too) start in their own session."""
    global _REPO_CLASS
    if _REPO_CLASS is None:
        import git

        class SessionGit(git.Git):
            def execute(self, command, *args, **kwargs):
                return super().execute(command, *args, **{**OWN_SESSION, **kwargs})

        class SessionRepo(git.Repo):
            GitCommandWrapperType = SessionGit

        _REPO_CLASS = SessionRepo
    return _REPO_CLASS


_REPO_CLASS = None


def find_repo(path: Path):
    """The git repository holding `path` (the vault may be a folder inside a user's own repo)."""
    import git

    try:
        return repo_class()(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def find_work_tree(path: Path) -> Path | None:
    """The nearest folder at or above `path` holding `.git` (a folder, or a file for worktrees),
    found without gitpython: importing it costs half a second that reads (search, list) never need."""
    path = path.resolve()
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


class VaultGit:
    """Git operations for one vault; paths given and returned are relative to the vault root.

    The gitpython repository is opened on first use: only writes, history and doctor need it."""

    def __init__(self, root: Path, work_dir: Path, repo=None) -> None:
        self.root = root
        self.work_dir = work_dir.resolve()
        self._repo = repo
        self._env: dict[str, str] | None = None

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
        return Path(self.repo.git_dir)

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
        if self._env is None:
            import git

            try:
                self.repo.git.config("user.email")
                self.repo.git.config("user.name")
                self._env = {}
            except git.GitCommandError:
                self._env = {k: v for k, v in IDENTITY.items() if k not in os.environ}
        return self._env

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
            if self.has_commits():  # git's plumbing when only these paths are staged (vault.fastcommit)
                from memvault.vault.fastcommit import NotForUs, commit_staged_alone

                try:
                    return commit_staged_alone(self, pathspec, message)
                except NotForUs:
                    pass  # the user's own staged changes, or HEAD moved: `commit --only` leaves theirs alone
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
        from git.refs.symbolic import SymbolicReference

        try:
            return SymbolicReference.dereference_recursive(self.repo, "HEAD")
        except ValueError:
            return None

    def tree_of(self, sha: str) -> str:
        """The tree of commit `sha`, from GitPython's persistent object reader (no new process); a
        reader that died (a stop signal, a crash) is started again once."""
        try:
            return self.repo.commit(sha).tree.hexsha
        except (OSError, ValueError):
            self.repo.git.clear_cache()  # drops the dead cat-file: the next read starts a new one
            return self.repo.commit(sha).tree.hexsha

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

    # -- stale lock files -----------------------------------------------------------------------------
    def lock_files(self) -> list[Path]:
        """Git's lock files present now (index.lock, HEAD.lock, refs/.../*.lock, ...)."""
        found: list[Path] = []
        for folder in dict.fromkeys((self.git_dir, Path(self.repo.common_dir))):
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

    def log(self, limit: int | None = None, pathspecs: list[str] | None = None,
            follow_changes: bool = False, grep: list[str] | None = None) -> list[Commit]:
        """Commits newest first, with memvault trailers parsed and (optionally) the files each changed;
        `grep`: only commits whose message holds every one of these strings (taken literally)."""
        import git

        if not self.has_commits():
            return []
        args = [f"--format={RECORD_SEP}%H{FIELD_SEP}%aI{FIELD_SEP}%s{FIELD_SEP}%B{FIELD_SEP}"]
        if limit:
            args.append(f"-n{limit}")
        if follow_changes:
            args += ["--name-status", "-M"]
        if grep:
            args += ["--fixed-strings", "--all-match", *(f"--grep={text}" for text in grep)]
        # --full-history: a sync's merge keeps one side's file; the other side's commits (an edit kept
        # in history; docs/architecture.md, Sync) and the merge itself are still listed.
        args.append("--full-history")
        if pathspecs:
            args += ["--", *pathspecs]
        else:
            args += ["--", self.repo_path(".")]
        try:
            out = self.repo.git.log(*args)
        except git.GitCommandError as exc:
            raise VaultError(f"git log failed: {(exc.stderr or str(exc)).strip().splitlines()[-1]}") from None
        return [self._parse_record(rec) for rec in out.split(RECORD_SEP) if rec.strip()]

    def _parse_record(self, record: str) -> Commit:
        sha, when, subject, body, rest = record.split(FIELD_SEP, 4)
        commit = Commit(sha=sha, time=datetime.fromisoformat(when), subject=subject, trailers=parse_trailers(body))
        for line in rest.strip().splitlines():
            parts = line.split("\t")
            if len(parts) == 3:  # rename: R100 old new
                commit.changes.append((parts[0][0], self.vault_path(parts[2]), self.vault_path(parts[1])))
            elif len(parts) == 2:
                commit.changes.append((parts[0][0], self.vault_path(parts[1]), None))
        return commit

    def show(self, sha: str, rel: str) -> str | None:
        """A file's text as it was at a commit, or None where it did not exist."""
        import git

        try:
            return self.repo.git.show(f"{sha}:{Path(self.repo_path(rel)).as_posix()}")
        except git.GitCommandError:
            return None

    def changed_paths(self, sha: str) -> list[str]:
        out = self.repo.git.diff_tree("--no-commit-id", "--name-only", "-r", "--root", sha)
        return [self.vault_path(line) for line in out.splitlines() if line]

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

    def pull(self, remote: str | None = None) -> str:
        """Fetch and rebase local commits on the remote's (memvault's commits touch distinct files)."""
        import git

        self.check_state()
        self.remove_stale_locks()  # memvault.core.Memvault.pull holds the vault's lock
        name = self.remote_name(remote)
        branch = self.repo.active_branch.name
        try:
            self.repo.git.pull("--rebase", "--autostash", name, branch, env=self.env)
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


NOTHING_TO_COMMIT = ("nothing to commit", "no changes added", "nothing added")


def run_git(command: list[str], cwd: Path, input: str | None, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run one git to its end, in its own session (OWN_SESSION). A Ctrl-C meanwhile (KeyboardInterrupt)
    lets it finish first and is raised after: git's step (a commit, an update-ref) is done or not
    done, never killed half-way; a second Ctrl-C leaves it to finish alone (the next writer waits)."""
    try:
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                                env={**os.environ, **env}, **OWN_SESSION)
    except OSError as exc:
        raise VaultError(f"cannot run git: {exc.strerror or exc}") from None
    try:
        stdout, stderr = proc.communicate(input)
    except KeyboardInterrupt:
        proc.wait()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


@contextmanager
def pathspec_file(repo_paths: list[str]) -> Iterator[list[str]]:
    """The git options that read these paths from a temporary file (NUL-separated), while it exists."""
    with tempfile.NamedTemporaryFile("wb", prefix="memvault-paths-", suffix=".txt") as handle:
        handle.write(b"\0".join(p.encode("utf-8", "surrogateescape") for p in repo_paths))
        handle.flush()
        yield [f"--pathspec-from-file={handle.name}", "--pathspec-file-nul"]


def is_vault_folder(root: Path) -> bool:
    from memvault.vault import layout

    return (root / layout.STATE_DIR).is_dir() or (root / layout.ENTRIES).is_dir()


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def lock_mtime(lock: Path, default: float) -> float:
    try:
        return lock.stat().st_mtime
    except OSError:
        return default


def lock_advice(lock: Path, holders: list[int] | None) -> str:
    """One line: which lock file blocks git, and what to do about it."""
    if holders:
        who = f"git process {', '.join(map(str, holders))} is working in the repository"
        return f"{lock} exists: {who}; wait for it to finish and retry"
    return f"{lock} exists (left by a git that stopped?): if no git is running in the repository, remove it: rm {lock}"


class PullClash(VaultError):
    """A pull whose commits arrived, but whose clashing uncommitted edits were set aside in the stash."""


def failed_lock(output: str) -> Path | None:
    """The lock file git could not create, if that is why it failed."""
    found = LOCK_FAILURE.search(output)
    return Path(found.group(1)) if found else None


def last_line(exc) -> str:
    """What a failed GitPython call said, in one line (see first_cause)."""
    return first_cause(f"{as_printed(exc.stdout)}\n{as_printed(exc.stderr)}") or str(exc)


def first_cause(output: str) -> str:
    """What git said, in one line: its first `error:` or `fatal:` line (the cause; a later `fatal:`
    is often its consequence), else its last line that is not a `hint:`; "" when it said nothing."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.strip().startswith("hint:")]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (said[:1] or lines[-1:] or [""])[0]


IGNORED = "The following paths are ignored by one of your .gitignore files"


def ignored_advice(output: str) -> str:
    """`git add` refused files a .gitignore ignores (a vault inside a repository that ignores *.md)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    after = lines[lines.index(next(line for line in lines if IGNORED in line)) + 1:]
    path = next((line for line in after if not line.startswith("hint:")), "")
    return (f"{IGNORED}: {path}: un-ignore the vault's folder in that .gitignore "
            f"(`git check-ignore -v {path}` names the rule)")


def as_printed(output: str | None) -> str:
    """GitPython's stdout/stderr of a failed command as git printed them (it wraps them as
    "\n  stderr: '...'", which left a stray quote at the end of our messages)."""
    text = (output or "").strip()
    for label in ("stdout: '", "stderr: '"):
        if text.startswith(label) and text.endswith("'"):
            return text[len(label):-1]
    return text


def parse_trailers(message: str) -> dict[str, list[str]]:
    trailers: dict[str, list[str]] = {}
    for line in message.splitlines():
        if line.startswith(TRAILER_PREFIX) and ":" in line:
            key, _, value = line[len(TRAILER_PREFIX):].partition(":")
            trailers.setdefault(key.strip(), []).append(value.strip())
    return trailers


# What a terminal acts on rather than prints (C0 and C1 controls: ESC starts CSI and OSC sequences) and
# what reorders text (bidi controls, as in "Trojan Source"): never raw in a subject `git log` prints.
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable_subject(subject: str) -> str:
    """The subject on one line, each control or bidi character shown as its escape (`\x1b`, `\u202e`)."""
    return UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), subject)


def format_message(subject: str, operation: str, conversation: str | None, events: list[tuple[str, str]]) -> str:
    """A commit message: a readable subject line (which may quote the memory: redacted, and with control
    characters shown as escapes), then trailers a program can parse."""
    from memvault.vault.redact import redact

    lines = [printable_subject(redact(subject)), "", f"{TRAILER_PREFIX}Operation: {operation}"]
    if conversation:
        lines.append(f"{TRAILER_PREFIX}Conversation: {conversation}")
    lines += [f"{TRAILER_PREFIX}Event: {event} {memory_id}" for event, memory_id in events]
    return "\n".join(lines) + "\n"
