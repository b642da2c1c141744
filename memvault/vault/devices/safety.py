"""A remote commit memvault cannot check out safely (docs/architecture.md, Sync, "Trust").

Git stores whatever tree a pusher builds with its plumbing (`git mktree`, `hash-object`), but its
checkout refuses some of it and would stop every later sync: an entry named `..` or `.`, a name with a
slash (an absolute path), `.git` in any spelling a file system may fold to it, two names in one folder
that differ only by case (one file on a case-insensitive disk, so a checkout there is never clean: refused
on every device, so all devices keep the same tree), and, at the vault's root, `.memvault` (this
device's own state, which a checkout would overwrite). Only the tree a sync would check out is read: the
remote head's. Its unsafe entries are left out of a commit made over it (`Memvault-Refused` trailers
name them), and the sync merges that instead: the rest of what arrived comes in, the remote's history
stays an ancestor (the next push is a plain one), and the commits that brought them are named."""

from __future__ import annotations

from dataclasses import dataclass, field

from memvault.vault.format import layout
from memvault.vault.git.log import format_message
from memvault.vault.git.repository import VaultGit

DOT_GIT = (".git", "git~1")  # and the same with trailing dots or spaces (NTFS), any case (HFS+, NTFS)


@dataclass
class Refusal:
    """What a sync left out of the remote's head, and the commits that brought it."""

    head: str  # the remote head as fetched
    safe: str  # the commit made over it without the refused entries
    paths: list[str] = field(default_factory=list)  # repository paths refused (as git lists them)
    commits: list[str] = field(default_factory=list)  # the new commits that added them

    def lines(self) -> list[str]:
        by = ", ".join(sha[:12] for sha in self.commits) or self.head[:12]
        shown = ", ".join(repr(p) for p in self.paths[:3]) + (" ..." if len(self.paths) > 3 else "")
        return [f"commit {by} holds {len(self.paths)} path(s) no checkout can hold safely ({shown}): refused, "
                "the rest merged"]


def bad_name(name: str, at_root: bool) -> bool:
    """Whether one tree entry's name cannot be checked out safely."""
    folded = name.casefold().rstrip(" .")
    return (name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name or folded in DOT_GIT
            or (at_root and name == layout.STATE_DIR))


def check(git: VaultGit, ours: str | None, theirs: str) -> Refusal | None:
    """None when the remote head's tree is safe to check out, else the commit to merge in its place."""
    root_prefix = root_prefix_of(git)
    flagged = unsafe_paths(git, theirs, root_prefix, ours)
    if not flagged:
        return None
    clean = clean_tree(git, theirs + "^{tree}", "", flagged, root_prefix)
    refusal = Refusal(theirs, "", sorted(flagged), introduced(git, ours, theirs, flagged))
    subject = f"memvault sync: left out {len(flagged)} unsafe path(s) of {theirs[:12]}"
    message = format_message(subject, "sync", None, []).rstrip("\n")
    message += "".join(f"\nMemvault-Refused: {sha}" for sha in refusal.commits or [theirs]) + "\n"
    refusal.safe = git.run("commit-tree", clean, "-p", theirs, "-F", "-", input=message).strip()
    return refusal


def root_prefix_of(git: VaultGit) -> str:
    """The vault's folder in an enclosing repository ('' when the vault is its repository's root)."""
    folder = git.repo_path(".")
    return "" if folder == "." else folder


def unsafe_paths(git: VaultGit, rev: str, root_prefix: str, ours: str | None = None) -> set[str]:
    """The paths of `rev`'s tree that no checkout can hold safely (`flagged`)."""
    def held() -> set[str]:  # read only when a clash needs it
        return set(names(git, ours)) if ours else set()

    return flagged(names(git, rev), root_prefix, held)


def flagged(listing: list[str], root_prefix: str, held=set) -> set[str]:
    """Of a tree's complete listing (every file and folder, as `ls-tree -r -t` gives it), the paths
    whose own name is unsafe, whose name holds a slash (its parent is not a folder of the tree), or
    which clash by case with another in the same folder (the one `held()` names is kept, else the
    first listed). Each folder is listed itself, so its name is checked once, not under every path."""
    folders = set(listing)
    found, folded = set(), {}
    for path in listing:
        parent, _, name = path.rpartition("/")
        if bad_name(name, parent == root_prefix) or path.startswith("/") or (parent and parent not in folders):
            found.add(path)
        folded.setdefault((parent, name.casefold()), []).append(path)
    clashes = [paths for paths in folded.values() if len(paths) > 1]
    if clashes:
        kept = held()
        for paths in clashes:
            keep = next((p for p in paths if p in kept), paths[0])
            found.update(p for p in paths if p != keep)
    return found


def names(git: VaultGit, rev: str) -> list[str]:
    """Every path of `rev`'s tree, folders too."""
    return [p for p in git.run("ls-tree", "-r", "-t", "-z", "--full-tree", "--name-only", rev).split("\0") if p]


def clean_tree(git: VaultGit, tree: str, prefix: str, flagged: set[str], root_prefix: str) -> str:
    """`tree` without its unsafe entries: only the folders on the way to one are read and written again."""
    lines = []
    for item in git.run("ls-tree", "-z", tree).split("\0"):
        if not item:
            continue
        info, name = item.split("\t", 1)
        mode, kind, sha = info.split()
        full = f"{prefix}{name}"
        if bad_name(name, prefix.rstrip("/") == root_prefix) or full in flagged:
            continue
        if kind == "tree" and any(path.startswith(full + "/") for path in flagged):
            sha = clean_tree(git, sha, full + "/", flagged, root_prefix)
        lines.append(f"{mode} {kind} {sha}\t{name}")
    return git.run("mktree", "-z", input="".join(f"{line}\0" for line in lines)).strip()


def introduced(git: VaultGit, ours: str | None, theirs: str, flagged: set[str]) -> list[str]:
    """The new commits (not in `ours`) whose own changes add a flagged path, oldest first."""
    span = f"{ours}..{theirs}" if ours else theirs
    out = git.run("log", "--reverse", "--format=%x1e%H", "--raw", "-z", "-r", "-t", "--no-renames", span)
    found = []
    for chunk in out.split("\x1e"):
        sha, _, raw = chunk.partition("\0")
        sha = sha.strip()
        fields = raw.split("\0")
        paths = {fields[i + 1] for i in range(0, len(fields) - 1, 2) if fields[i].lstrip("\n").startswith(":")}
        if sha and paths & flagged:
            found.append(sha)
    return found
