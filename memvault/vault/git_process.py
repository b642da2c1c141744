"""Starting git: the repository found (with or without gitpython), and each git process run to its
end in a session of its own, its paths passed in a file."""

from __future__ import annotations

import os
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
