"""What a history rewrite (`memvault erase`, or a sync dropping erased blobs) leaves for later commands,
under .memvault/: the old commit ids mapped to the new ones (a commit id a person saved still answers
`--as-of`), and the remote heads from before it (what `push --force-with-lease` and `sync` replace)."""

from __future__ import annotations

import json
from pathlib import Path

COMMIT_MAP = "commit-map"  # "<old sha> <new sha>" lines, every erase chained in
REMOTE_HEADS = "remote-heads.json"  # remote-tracking refs' commits before the last erase


def save_json(path: Path, value) -> None:
    from memvault.vault.format.atomic import atomic_write

    atomic_write(path, json.dumps(value, indent=1, sort_keys=True).encode("utf-8"))


def load_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def keep_remote_heads(state_dir: Path, heads: dict[str, str]) -> None:
    """Remember remote-tracking refs' commits (ref -> sha) a rewrite is about to drop."""
    save_json(state_dir / REMOTE_HEADS, {**load_json(state_dir / REMOTE_HEADS), **heads})


def lease(state_dir: Path, remote: str, branch: str) -> str | None:
    """The commit a remote's branch held before an erase rewrote history (what push must replace)."""
    return load_json(state_dir / REMOTE_HEADS).get(f"refs/remotes/{remote}/{branch}")


def leased(state_dir: Path, remote: str, branch: str) -> None:
    """A force push replaced the remote's old history: its old head is no longer needed."""
    heads = load_json(state_dir / REMOTE_HEADS)
    if heads.pop(f"refs/remotes/{remote}/{branch}", None) is not None:
        save_json(state_dir / REMOTE_HEADS, heads)


def read_commit_map(path: Path) -> dict[str, str]:
    """git-filter-repo's own map (a header line, then "old new" lines): the ids that changed."""
    mapping = {}
    try:
        lines = path.read_text(encoding="ascii").splitlines()[1:]  # the first line is a header
    except FileNotFoundError:
        return {}
    for line in lines:
        old, _, new = line.partition(" ")
        if old and new.strip() and old != new.strip():
            mapping[old] = new.strip()
    return mapping


def save_commit_map(state_dir: Path, mapping: dict[str, str]) -> None:
    """Chain this erase's map into the saved one: an id from before two erases finds today's commit."""
    from memvault.vault.format.atomic import atomic_write

    saved = load_commit_map(state_dir)
    chained = {old: mapping.get(new, new) for old, new in saved.items()}
    chained.update(mapping)
    lines = "".join(f"{old} {new}\n" for old, new in sorted(chained.items()))
    atomic_write(state_dir / COMMIT_MAP, lines.encode("ascii"))


def load_commit_map(state_dir: Path) -> dict[str, str]:
    try:
        lines = (state_dir / COMMIT_MAP).read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return {}
    return dict(line.split(" ", 1) for line in lines if " " in line)


def mapped_commit(state_dir: Path, name: str) -> str | None:
    """Today's commit for a commit id (or an unambiguous prefix of one) from before an erase."""
    mapping = load_commit_map(state_dir)
    found = [new for old, new in mapping.items() if old.startswith(name.lower())]
    return found[0] if len(set(found)) == 1 else None
