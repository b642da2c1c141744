"""What a sync's merge leaves that no merge driver can express, settled without conflict markers
(docs/architecture.md, Sync): modify/delete, a rename on one side and an edit on the other, a folder
replaced by a file; and the files erasure records list, taken out of the merged tree."""

from __future__ import annotations

from pathlib import PurePosixPath

from memvault.vault.devices.merge import merge
from memvault.vault.forget.record import Erased
from memvault.vault.format import layout
from memvault.vault.format.atomic import atomic_write
from memvault.vault.git.repository import VaultGit


def resolve_unmerged(git: VaultGit) -> list[str]:
    """Settle each path git left unmerged: one line each."""
    stages: dict[str, dict[int, str]] = {}
    for item in git.run("ls-files", "-u", "-z").split("\0"):
        if not item:
            continue
        info, path = item.split("\t", 1)
        _, blob, stage = info.split()
        stages.setdefault(path, {})[int(stage)] = blob
    lines = [settle(git, path, blobs) for path, blobs in sorted(stages.items())]
    leftovers = git.run("ls-files", "-o", "-z", "--exclude-standard")
    strays = [p for p in leftovers.split("\0") if p and "~" in PurePosixPath(p).name]
    for stray in strays:  # git keeps the losing side of a file/folder clash as 'name~<side>'
        lines.append(f"{git.vault_path(stray)}: the other side of a file/folder clash, kept beside it")
        git.run("add", "--", stray)
    return lines


def settle(git: VaultGit, repo_path: str, blobs: dict[int, str]) -> str:
    rel = git.vault_path(repo_path)
    kind = kind_of(rel)
    full = git.work_dir / repo_path
    if 2 in blobs and 3 in blobs and kind is not None:  # a driver that could not run: merge here
        base = blob(git, blobs[1]) if 1 in blobs else None
        merged, record = merge(kind, base, blob(git, blobs[2]), blob(git, blobs[3]), rel)
        atomic_write(full, merged.encode("utf-8", "surrogateescape"))
        git.run("add", "--", repo_path)
        return f"{rel}: merged as {kind} ({(record or {}).get('event', 'clean')})"
    if 2 in blobs and 3 in blobs:  # not memvault's file: ours stays, theirs in history
        git.run("checkout", "--ours", "--", repo_path)
        git.run("add", "--", repo_path)
        return f"{rel}: changed on both devices; this device's version kept, the other in history"
    side = 2 if 2 in blobs else 3
    clash = PurePosixPath(rel).name.rpartition("~")[0]
    if clash and (full.parent / clash).is_dir():  # git moved the file aside as 'name~<side>'
        git.run("add", "--", repo_path)
        return (f"{PurePosixPath(rel).parent / clash}: a folder on one device, a file on the other; both kept, "
                f"the file as {rel}")
    if full.is_dir():
        git.run("rm", "-q", "--cached", "--", repo_path)
        return f"{rel}: a folder on one device, a file on the other; the folder kept, the file in history"
    if kind == "entry" and has_tombstone(git, rel):
        git.run("rm", "-q", "-f", "--", repo_path)
        return f"{rel}: deleted on one device, edited on the other; the delete wins, the edit in history"
    atomic_write(full, blob(git, blobs[side]).encode("utf-8", "surrogateescape"))
    git.run("add", "--", repo_path)
    return f"{rel}: removed or moved on one device, edited on the other; the edit kept"


def has_tombstone(git: VaultGit, rel: str) -> bool:
    """Whether the merged tree holds a tombstone of the live entry at `rel`, in its day folder or in
    the kind folder itself (where a device on the older layout puts it)."""
    parts = PurePosixPath(rel).parts
    if len(parts) < 4:
        return False
    tomb = PurePosixPath(parts[0], parts[1], layout.DELETED, *parts[2:])
    places = [git.repo_path(str(place)) for place in layout.both_places(tomb)]
    return bool(git.run("ls-files", "-z", "--", *places).strip("\0"))


def drop_listed(git: VaultGit, erased: Erased) -> list[str]:
    """Take out of the merged tree each path and each file whose blob an erasure record lists."""
    dropped = listed_files(git, erased) if erased else []
    for rel in dropped:
        git.run("rm", "-q", "-f", "--", git.repo_path(rel))
    return dropped


def listed_files(git: VaultGit, erased: Erased, rev: str | None = None) -> list[str]:
    """The vault paths of the index's files (or `rev`'s) that erasure records list, by path or by blob."""
    listing, column = (("ls-tree", "-r", "-z", rev), 2) if rev else (("ls-files", "-s", "-z"), 1)
    found = []
    for item in git.run(*listing).split("\0"):
        if item:
            info, repo_path = item.split("\t", 1)
            if info.split()[column] in erased.blobs or git.vault_path(repo_path) in erased.paths:
                found.append(git.vault_path(repo_path))
    return list(dict.fromkeys(found))


def blob(git: VaultGit, sha: str) -> str:
    return git.run("cat-file", "blob", sha)


def kind_of(rel: str) -> str | None:
    """Which merge a vault path gets (as .gitattributes routes it), None for a file not memvault's."""
    path = PurePosixPath(rel)
    if layout.is_workspace_path(path):
        return "core" if path.parts[0] == layout.CORE_DIR else "journal"
    if path.parts and path.parts[0] == layout.ENTRIES and path.suffix == ".md":
        return "summary" if {"summaries", "sessions"} & set(path.parts) else "entry"
    return None
