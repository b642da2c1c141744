"""Starting git: the repository found (with or without gitpython), and each git process run to its
end in a session of its own, its paths passed in a file."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.errors import VaultError

# Every git memvault starts runs in a session of its own: a Ctrl-C in the terminal (SIGINT to the
# whole foreground process group) or a service manager's stop of the group must not kill GitPython's
# persistent `git cat-file` or a `git commit` half-way; memvault decides when they stop.
OWN_SESSION = {"start_new_session": True} if os.name == "posix" else {}
# Memvault's own commits run no hooks (a hook that rewrites the message strips the trailers; a slow one
# outlives a killed memvault) and are not signed (an automated commit cannot ask for a passphrase).
OWN_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false")


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


def run_git(command: list[str], cwd: Path, input: str | None, env: dict[str, str],
            network_timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run one git to its end, in its own session (OWN_SESSION). A Ctrl-C meanwhile (KeyboardInterrupt)
    lets it finish first and is raised after: git's step (a commit, an update-ref) is done or not
    done, never killed half-way; a second Ctrl-C leaves it to finish alone (the next writer waits).

    A network step (`network_timeout` given: a fetch or push, which a remote may hang forever) is the
    other way round: it is stopped with its whole session (its ssh, its helpers) on a Ctrl-C, on any
    exit of this process's (SIGTERM's), and after `network_timeout` seconds (0: never), raising
    GitTimeout. Nothing it half-wrote is kept by git (a fetch's refs and a push move only at the end)."""
    try:
        proc = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace",
                                env={**os.environ, **env}, **OWN_SESSION)
    except OSError as exc:
        raise VaultError(f"cannot run git: {exc.strerror or exc}") from None
    if network_timeout is not None:
        return run_network(proc, command, input, network_timeout)
    try:
        stdout, stderr = proc.communicate(input)
    except KeyboardInterrupt:
        proc.wait()
        raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


class GitTimeout(VaultError):
    """A network git (fetch, push) that did not finish in time."""


def run_network(proc: subprocess.Popen, command: list[str], input: str | None,
                timeout: float) -> subprocess.CompletedProcess:
    try:
        stdout, stderr = proc.communicate(input, timeout=timeout or None)
    except subprocess.TimeoutExpired:
        stop_session(proc)
        raise GitTimeout(f"git {command_name(command)} got no answer from the remote in {timeout:g} s "
                         "(sync.timeout_seconds)") from None
    except BaseException:
        stop_session(proc)
        raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def stop_session(proc: subprocess.Popen) -> None:
    """Kill a git and every process of its session (ssh, remote helpers), then reap it."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL) if OWN_SESSION else proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def command_name(command: list[str]) -> str:
    return next((word for word in command[1:] if not word.startswith("-") and "=" not in word), "?")


@contextmanager
def pathspec_file(repo_paths: list[str]) -> Iterator[list[str]]:
    """The git options that read these paths from a temporary file (NUL-separated), while it exists."""
    with tempfile.NamedTemporaryFile("wb", prefix="memvault-paths-", suffix=".txt") as handle:
        handle.write(b"\0".join(p.encode("utf-8", "surrogateescape") for p in repo_paths))
        handle.flush()
        yield [f"--pathspec-from-file={handle.name}", "--pathspec-file-nul"]


def git_dirs(work_dir: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the work tree at `work_dir`, read from the files as git lays them out:
    `.git` a folder, or a file naming it (a linked worktree, a submodule), whose `commondir` names where
    branches and objects live. None when there is none. No GitPython: importing it and its two
    `git version` runs cost an add more than the commit itself."""
    dot = work_dir / ".git"
    if dot.is_dir():
        git_dir = dot
    elif dot.is_file():
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if not text.startswith("gitdir:"):
            return None
        git_dir = (work_dir / text[len("gitdir:"):].strip()).resolve()
    else:
        return None
    common = git_dir / "commondir"
    if common.is_file():
        return git_dir, (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
    return git_dir, git_dir


SHA_HEX = re.compile(r"^[0-9a-f]{40}$")


def read_ref(git_dir: Path, common_dir: Path, name: str = "HEAD") -> str | None:
    """The commit a ref names (HEAD by default, followed through symbolic refs), from the ref files
    and packed-refs; None when it names none yet (an unborn branch)."""
    for _ in range(5):  # git follows at most 5 levels of symbolic refs
        text = None
        for folder in dict.fromkeys((git_dir, common_dir)):  # HEAD in the git dir, branches in the common one
            path = folder / name
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace").strip()
                break
        if text is None:
            text = packed_ref(common_dir, name)
        if text is None:
            return None
        if not text.startswith("ref:"):
            return text if SHA_HEX.match(text) else None
        name = text[len("ref:"):].strip()
    return None


def packed_ref(common_dir: Path, name: str) -> str | None:
    try:
        lines = (common_dir / "packed-refs").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        sha, _, ref = line.partition(" ")
        if ref == name and not line.startswith(("#", "^")):
            return sha
    return None


class ObjectReader:
    """One `git cat-file --batch` kept running for a repository: an object's bytes without a git
    process each (in a session of its own, as every git memvault starts: OWN_SESSION)."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.proc: subprocess.Popen | None = None

    def read(self, sha: bytes) -> bytes:
        """The object's bytes; a reader that died (a stop signal, a crash) is started again once."""
        try:
            return self._read(sha)
        except (OSError, EOFError):
            self.close()
            return self._read(sha)

    def _read(self, sha: bytes) -> bytes:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=self.work_dir, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **OWN_SESSION)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(sha.hex().encode() + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if not header:
            raise EOFError("git cat-file ended")
        if len(header) != 3:
            raise VaultError(f"git object {sha.hex()} is missing from the vault's repository")
        size = int(header[2])
        data = self.proc.stdout.read(size + 1)  # the object and git's newline after it
        if len(data) != size + 1:
            raise EOFError("git cat-file ended")
        return data[:size]

    def close(self) -> None:
        if self.proc is not None:
            for pipe in (self.proc.stdin, self.proc.stdout):
                try:
                    pipe.close()  # type: ignore[union-attr]
                except OSError:
                    pass
            self.proc.wait()
            self.proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit there is nothing left to tell
            pass
