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
