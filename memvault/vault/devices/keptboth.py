"""Settling the lines a sync kept both versions of in a core file (vault.devices.merge.kept_both), as a person chooses.

Where two devices changed the same lines of a core file, the sync's merge keeps both under the
KEPT_BOTH heading as "Version 1" and "Version 2", in an order both devices agree on (by their bytes),
not "ours" and "theirs". So a choice is one of:
- `1` or `2`: that version, as the file shows it;
- `both`: both versions' lines, one after the other, the headings dropped;
- `ours` or `theirs`: the version this device had before the merge, or the other one. Found in git:
  the merge commit that brought the heading in, and which of its two parents this device's HEAD
  has been at (its reflog: the device that merged, or one that fast-forwarded to that merge from
  its own commit). Where that cannot be told (a fresh clone, a reflog expired by `erase`), the
  choice is refused with a line saying to pick 1 or 2.
A block whose structure a person has already edited is refused, never guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from memvault.errors import UsageError, VaultError
from memvault.vault.devices.merge import KEPT_BOTH, KEPT_BOTH_END, SIDE_HEADING

CHOICES = ("ours", "theirs", "both", "1", "2")
MERGES_LOOKED_AT = 50  # merges of the file walked back to find the one that kept both


@dataclass(frozen=True)
class Block:
    """One kept-both block: lines [start, end) of the file, and each version's lines."""

    start: int
    end: int
    versions: tuple[tuple[str, ...], ...]


def has_kept_both(text: str) -> bool:
    return KEPT_BOTH in text.splitlines()


def blocks(text: str, rel: PurePosixPath | str = "the file") -> list[Block]:
    """The kept-both blocks of a file, as vault.devices.merge.kept_both writes them; UsageError for one a
    person has half edited (no end line, a missing version)."""
    lines = text.splitlines()
    found = []
    at = 0
    while at < len(lines):
        if lines[at] != KEPT_BOTH:
            at += 1
            continue
        try:
            end = lines.index(KEPT_BOTH_END, at)
        except ValueError:
            raise UsageError(f"{rel}: the kept-both block at line {at + 1} has no end line: finish it by hand "
                             "(memvault core edit)") from None
        headings = [i for i in range(at, end) if lines[i] in (SIDE_HEADING.format(n=1), SIDE_HEADING.format(n=2))]
        if [lines[i] for i in headings] != [SIDE_HEADING.format(n=1), SIDE_HEADING.format(n=2)]:
            raise UsageError(f"{rel}: the kept-both block at line {at + 1} was edited by hand (its two version "
                             "headings are not there): finish it by hand (memvault core edit)")
        bounds = zip(headings, [headings[1], end], strict=True)
        versions = tuple(trimmed(lines[begin + 1:stop]) for begin, stop in bounds)
        # kept_both put one blank line before the heading and one after the end line: they go with it
        start = at - 1 if at > 0 and not lines[at - 1].strip() else at
        stop = end + 2 if end + 1 < len(lines) and not lines[end + 1].strip() else end + 1
        found.append(Block(start, stop, versions))
        at = end + 1
    return found


def trimmed(lines: list[str]) -> tuple[str, ...]:
    """A version's lines without the one blank line kept_both wrote on each side of them."""
    if lines and not lines[0].strip():
        lines = lines[1:]
    if lines and not lines[-1].strip():
        lines = lines[:-1]
    return tuple(lines)


def settled(text: str, choice: str, rel: PurePosixPath | str = "the file",
            ours_is: Callable[[Block], int] | None = None) -> str:
    """The file with every kept-both block replaced by the chosen lines. `ours_is(block)` says which
    version (1 or 2) was this device's, for `ours` and `theirs`."""
    if choice not in CHOICES:
        raise UsageError(f"keep {choice!r}? choose one of {', '.join(CHOICES)}")
    found = blocks(text, rel)
    if not found:
        return text
    lines = text.splitlines()
    out: list[str] = []
    at = 0
    for block in found:
        out += lines[at:block.start]
        if choice == "both":
            chosen = [*block.versions[0], *block.versions[1]]
        elif choice in ("1", "2"):
            chosen = list(block.versions[int(choice) - 1])
        else:
            if ours_is is None:
                raise UsageError(f"{rel}: cannot tell which version was this device's: choose 1 or 2")
            ours = ours_is(block)
            chosen = list(block.versions[ours - 1 if choice == "ours" else 2 - ours])
        out += chosen
        at = block.end
    out += lines[at:]
    return "\n".join(out).strip("\n") + "\n"


def contains(lines: list[str], part: tuple[str, ...]) -> bool:
    """Whether `part` is a run of consecutive lines of `lines` (an empty part is found nowhere: it
    tells nothing)."""
    width = len(part)
    return width > 0 and any(tuple(lines[i:i + width]) == part for i in range(len(lines) - width + 1))


def device_sides(git, rel: PurePosixPath) -> tuple[list[str], list[str]] | None:
    """(this device's lines, the other device's lines) of the file before the merge that kept both
    versions; None when that merge, or which side was this device's, cannot be found."""
    path = git.repo_path(str(rel))
    merges = git.run("rev-list", "--merges", f"--max-count={MERGES_LOOKED_AT}", "HEAD", "--", path).split()
    try:
        seen = set(git.run("rev-list", "--walk-reflogs", "HEAD").split()) if merges else set()
    except VaultError:  # no reflog (expired by erase, or core.logAllRefUpdates off)
        return None
    for merge in merges:
        merged = git.show(merge, str(rel)) or ""
        parents = git.run("rev-list", "--parents", "-n", "1", merge).split()[1:3]
        before = [git.show(parent, str(rel)) or "" for parent in parents]
        if len(parents) != 2 or not has_kept_both(merged) or any(has_kept_both(text) for text in before):
            continue
        mine = [i for i, parent in enumerate(parents) if parent in seen]
        if len(mine) != 1:
            return None
        return before[mine[0]].splitlines(), before[1 - mine[0]].splitlines()
    return None


def ours_finder(sides: tuple[list[str], list[str]] | None, rel: PurePosixPath) -> Callable[[Block], int]:
    """ours_is for `settled`: the version (1 or 2) found in this device's file before the merge and
    not in the other's (or, for a version that is empty, the other one found in theirs)."""

    def ours_is(block: Block) -> int:
        if sides is not None:
            mine, theirs = sides
            for n, version in enumerate(block.versions, start=1):
                if contains(mine, version) and not contains(theirs, version):
                    return n
                if contains(theirs, version) and not contains(mine, version):
                    return 3 - n
        raise UsageError(f"{rel}: cannot tell which version was this device's (the merge that kept both is not "
                         "in this clone's own history): choose 1 or 2")

    return ours_is
