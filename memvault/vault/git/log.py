"""Commit messages and the log: a readable subject, then `Memvault-` trailers a program parses back
(operation, conversation, one event per memory) from `git log`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memvault.errors import VaultError

TRAILER_PREFIX = "Memvault-"
FIELD_SEP, RECORD_SEP = "\x1f", "\x1e"
# What a terminal acts on rather than prints (C0 and C1 controls: ESC starts CSI and OSC sequences) and
# what reorders text (bidi controls, as in "Trojan Source"): never raw in a subject `git log` prints.
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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


class GitLog:
    """The log of one vault's repository; one part of `VaultGit` (vault.git)."""

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
        args += ["--", *pathspecs] if pathspecs else self.vault_scope()
        try:
            out = self.repo.git.log(*args)
        except git.GitCommandError as exc:
            raise VaultError(f"git log failed: {(exc.stderr or str(exc)).strip().splitlines()[-1]}") from None
        return [self._parse_record(rec) for rec in out.split(RECORD_SEP) if rec.strip()]

    def vault_scope(self) -> list[str]:
        """What limits `git log`/`rev-list` to the vault's commits: its folder in an enclosing repository;
        nothing in its own (a pathspec would hide the empty commits: erasure records)."""
        return ["--", self.repo_path(".")] if self.enclosing else []

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


def format_message(subject: str, operation: str, conversation: str | None, events: list[tuple[str, str]]) -> str:
    """A commit message: a readable subject line (which may quote the memory: redacted, and with control
    characters shown as escapes), then trailers a program can parse."""
    from memvault.text.redact import redact

    lines = [printable_subject(redact(subject)), "", f"{TRAILER_PREFIX}Operation: {operation}"]
    if conversation:
        lines.append(f"{TRAILER_PREFIX}Conversation: {conversation}")
    lines += [f"{TRAILER_PREFIX}Event: {event} {memory_id}" for event, memory_id in events]
    return "\n".join(lines) + "\n"


def printable_subject(subject: str) -> str:
    """The subject on one line, each control or bidi character shown as its escape (`\x1b`, `\u202e`)."""
    return UNPRINTABLE.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), subject)


def parse_trailers(message: str) -> dict[str, list[str]]:
    trailers: dict[str, list[str]] = {}
    for line in message.splitlines():
        if line.startswith(TRAILER_PREFIX) and ":" in line:
            key, _, value = line[len(TRAILER_PREFIX):].partition(":")
            trailers.setdefault(key.strip(), []).append(value.strip())
    return trailers
