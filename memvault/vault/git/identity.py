"""Who wrote a commit and when, as `git commit-tree` writes it, for commits made in this process.

Git takes a name and an email from GIT_AUTHOR_NAME / GIT_COMMITTER_EMAIL and the like, then from
`author.name` / `committer.email`, then from `user.name` / `user.email` (memvault's own identity
stands in where the user has none: VaultGit.env), strips the characters it strips, and stamps the
time with the local zone. A date given in the environment (GIT_AUTHOR_DATE, in any of the many forms
git reads) or a name that comes out empty is left to git: None.
"""

from __future__ import annotations

import os
import time
from typing import Any

CRUD = ".,:;<>\"\\'"  # what git strips from both ends of a name or an email (with spaces and control characters)


def signature(git: Any, role: str, when: int) -> str | None:
    """'<name> <<email>> <seconds> <+hhmm>' for role "author" or "committer"; None: git must write it."""
    upper = role.upper()
    if f"GIT_{upper}_DATE" in os.environ:
        return None
    name, email = (field(git, role, key) for key in ("name", "email"))
    if not name or email is None:
        return None  # git refuses an empty name, and finds a missing one in ways of its own
    return f"{name} <{email}> {when} {zone(when)}"


def field(git: Any, role: str, key: str) -> str | None:
    variable = f"GIT_{role.upper()}_{key.upper()}"
    value = os.environ.get(variable, git.env.get(variable))
    if value is None:
        config = git.commit_config
        value = config.get(f"{role}.{key}", config.get(f"user.{key}"))
    return None if value is None else without_crud(value)


def without_crud(value: str) -> str:
    """As git's ident.c does: crud stripped from the ends, then no '<', '>' or newline inside."""
    start, end = 0, len(value)
    while start < end and (value[start] in CRUD or ord(value[start]) <= 32):
        start += 1
    while end > start and (value[end - 1] in CRUD or ord(value[end - 1]) <= 32):
        end -= 1
    return "".join(char for char in value[start:end] if char not in "<>\n")


def zone(when: int) -> str:
    """The local zone's offset at `when`, as git writes it: +0100, -0530."""
    offset = time.localtime(when).tm_gmtoff // 60
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset), 60)
    return f"{sign}{hours:02d}{minutes:02d}"
