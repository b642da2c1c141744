"""The vault's git repository: init, one commit per mutation of exactly its paths, and the log."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memvault.errors import VaultError

IDENTITY = {"GIT_AUTHOR_NAME": "memvault", "GIT_AUTHOR_EMAIL": "memvault@localhost",
            "GIT_COMMITTER_NAME": "memvault", "GIT_COMMITTER_EMAIL": "memvault@localhost"}
TRAILER_PREFIX = "Memvault-"
FIELD_SEP, RECORD_SEP = "\x1f", "\x1e"


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


def find_repo(path: Path):
    """The git repository holding `path` (the vault may be a folder inside a user's own repo)."""
    import git

    try:
        return git.Repo(path, search_parent_directories=True)
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
    def init(cls, root: Path) -> VaultGit:
        """Make `root` a repository, or use the repository it is already in, as it is."""
        import git

        repo = find_repo(root)
        if repo is None:
            repo = git.Repo.init(root, initial_branch="main")
        if repo.bare:
            raise VaultError(f"{root} is inside a bare git repository: choose another folder")
        return cls(root.resolve(), Path(repo.working_tree_dir), repo)

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
        """Commit exactly `paths` (added, changed or removed), leaving the user's other changes alone."""
        import git

        repo_paths = sorted({self.repo_path(p) for p in paths})
        if not repo_paths:
            return None
        try:
            self.repo.git.add("-A", "--", *repo_paths, env=self.env)
            only = ["--only"] if self.has_commits() else []
            self.repo.git.commit("-q", "--no-verify", "-m", message, *only, "--", *repo_paths, env=self.env)
            return self.repo.head.commit.hexsha
        except git.GitCommandError as exc:
            output = f"{exc.stdout or ''}\n{exc.stderr or ''}"
            if any(phrase in output for phrase in ("nothing to commit", "no changes added", "nothing added")):
                return None  # a rewrite with the same bytes: nothing to record
            detail = [line for line in output.strip().splitlines() if line.strip()]
            raise VaultError(f"git commit failed: {detail[-1] if detail else exc}") from None

    def log(self, limit: int | None = None, pathspecs: list[str] | None = None,
            follow_changes: bool = False) -> list[Commit]:
        """Commits newest first, with memvault trailers parsed and (optionally) the files each changed."""
        import git

        if not self.has_commits():
            return []
        args = [f"--format={RECORD_SEP}%H{FIELD_SEP}%aI{FIELD_SEP}%s{FIELD_SEP}%B{FIELD_SEP}"]
        if limit:
            args.append(f"-n{limit}")
        if follow_changes:
            args += ["--name-status", "-M"]
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

    def push(self, remote: str | None = None) -> str:
        import git

        name = self.remote_name(remote)
        branch = self.repo.active_branch.name
        try:
            self.repo.git.push(name, f"HEAD:refs/heads/{branch}", env=self.env)
        except git.GitCommandError as exc:
            raise VaultError(f"git push to {name} failed: {last_line(exc)}") from None
        return name

    def pull(self, remote: str | None = None) -> str:
        """Fetch and rebase local commits on the remote's (memvault's commits touch distinct files)."""
        import git

        self.check_state()
        name = self.remote_name(remote)
        branch = self.repo.active_branch.name
        try:
            self.repo.git.pull("--rebase", "--autostash", name, branch, env=self.env)
        except git.GitCommandError as exc:
            raise VaultError(f"git pull from {name} stopped: {last_line(exc)} (resolve it with git, then "
                             "run `memvault reindex`)") from None
        return name

    def uncommitted(self) -> list[str]:
        """Vault files that differ from HEAD or are untracked (what a crash or a hand edit leaves)."""
        return [path for _, path in self.status()]

    def untracked(self) -> list[str]:
        """Vault files git does not know yet."""
        return [path for code, path in self.status() if code == "??"]

    def status(self) -> list[tuple[str, str]]:
        """(two-letter status code, vault path) of each file that differs from HEAD or is untracked."""
        # -z: paths come raw (not quoted and escaped as non-ASCII names otherwise are), NUL-separated.
        out = self.repo.git.status("--porcelain", "-z", "--untracked-files=all", "--", self.repo_path("."))
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


def last_line(exc) -> str:
    lines = [line for line in f"{exc.stdout or ''}\n{exc.stderr or ''}".splitlines() if line.strip()]
    return lines[-1].strip() if lines else str(exc)


def parse_trailers(message: str) -> dict[str, list[str]]:
    trailers: dict[str, list[str]] = {}
    for line in message.splitlines():
        if line.startswith(TRAILER_PREFIX) and ":" in line:
            key, _, value = line[len(TRAILER_PREFIX):].partition(":")
            trailers.setdefault(key.strip(), []).append(value.strip())
    return trailers


def format_message(subject: str, operation: str, conversation: str | None, events: list[tuple[str, str]]) -> str:
    """A commit message: a readable subject line, then trailers a program can parse."""
    lines = [subject, "", f"{TRAILER_PREFIX}Operation: {operation}"]
    if conversation:
        lines.append(f"{TRAILER_PREFIX}Conversation: {conversation}")
    lines += [f"{TRAILER_PREFIX}Event: {event} {memory_id}" for event, memory_id in events]
    return "\n".join(lines) + "\n"
