"""What a failed git said, in one line a person can act on (a lock file is named with its fix)."""

from __future__ import annotations

import re
from pathlib import Path

from memvault.errors import VaultError

LOCK_FAILURE = re.compile(r"Unable to create '([^']+\.lock)'")  # git's words when a lock file exists
NOTHING_TO_COMMIT = ("nothing to commit", "no changes added", "nothing added")
IGNORED = "The following paths are ignored by one of your .gitignore files"


class GitFailed(VaultError):
    """A git command exited non-zero; `output` is all it said."""

    def __init__(self, message: str, output: str) -> None:
        super().__init__(message)
        self.output = output


def lock_advice(lock: Path, holders: list[int] | None) -> str:
    """One line: which lock file blocks git, and what to do about it."""
    if holders:
        who = f"git process {', '.join(map(str, holders))} is working in the repository"
        return f"{lock} exists: {who}; wait for it to finish and retry"
    return f"{lock} exists (left by a git that stopped?): if no git is running in the repository, remove it: rm {lock}"


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
