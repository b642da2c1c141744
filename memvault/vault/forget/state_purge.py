"""Erased records taken out of memvault's own state files under .memvault/ (held candidates,
scratchpads, the curation queue, the index journal). The index and past indexes are not edited here:
they are rebuilt or vacuumed by their owners (docs/architecture.md, "Erasure", step 3)."""

from __future__ import annotations

import json
from pathlib import Path

from memvault.vault.forget.intent import FILE_NAME as ERASE_INTENT
from memvault.vault.git.rewrites import COMMIT_MAP, REMOTE_HEADS

# Not records of memories: the index (purged by its keeper), locks, the rewrite's own traces, imports' marks.
KEPT_STATE = ("index.sqlite", "write.lock", ".gitignore", COMMIT_MAP, REMOTE_HEADS, "imports", ERASE_INTENT)
PAST_INDEXES = "asof"


def hit_files(state_dir: Path, hit) -> list[Path]:
    """The JSON and JSON-lines state files holding a record `hit(text)` is true of."""
    return [p for p in sorted(state_dir.rglob("*")) if p.is_file() and p.suffix in (".json", ".jsonl")
            and p.relative_to(state_dir).parts[0] not in KEPT_STATE
            and hit(p.read_bytes().decode("utf-8", "surrogateescape"))]


def purge_state(state_dir: Path, hit) -> list[str]:
    """Take every record `hit(text)` is true of out of the JSON and JSON-lines files under .memvault/;
    returns the files changed."""
    from memvault.vault.format import jsonlines
    from memvault.vault.format.atomic import atomic_write

    changed = []
    for path in sorted(state_dir.rglob("*")):
        rel = path.relative_to(state_dir)
        if not path.is_file() or path.is_symlink() or rel.parts[0].startswith(KEPT_STATE) \
                or rel.parts[0] == PAST_INDEXES:
            continue
        raw = path.read_bytes().decode("utf-8", "surrogateescape")
        if not hit(raw):
            continue
        if path.suffix == ".jsonl":
            kept = [r for r in jsonlines.read(path) if not hit(json.dumps(r, ensure_ascii=False))]
            atomic_write(path, jsonlines.encode(kept, redacted=False))
        elif path.suffix == ".json":
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            atomic_write(path, json.dumps(without_hits(value, hit), ensure_ascii=False, indent=1).encode("utf-8"))
        else:
            path.unlink()
        changed.append(str(rel))
    return changed


def without_hits(value, hit):
    """A JSON value without the dict entries and list items that `hit`."""
    if isinstance(value, dict):
        return {k: without_hits(v, hit) for k, v in value.items()
                if not hit(k) and not hit(json.dumps(v, ensure_ascii=False))}
    if isinstance(value, list):
        return [without_hits(v, hit) for v in value if not hit(json.dumps(v, ensure_ascii=False))]
    return None if isinstance(value, str) and hit(value) else value
