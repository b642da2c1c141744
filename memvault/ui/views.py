"""What the pages show, shaped from the facade's answers (no reads here, only reshaping)."""

from __future__ import annotations

import difflib
import re
from datetime import datetime
from typing import Any

from memvault.shapes import Entry

WORDS = re.compile(r"\s+|[^\s]+")


def entry_row(item: Entry | dict[str, Any]) -> dict[str, Any]:
    """An index row (dict) or a parsed entry, as one row of a list: id, role, conversation, text, time."""
    if isinstance(item, Entry):
        return {"id": item.id, "role": item.role, "conversation_id": item.conversation_id, "text": item.text,
                "created_at": item.created_at, "source": item.source, "facts": []}
    created = item.get("created_at")
    return {"id": item["id"], "role": item["role"], "conversation_id": item["conversation_id"], "text": item["text"],
            "created_at": datetime.fromtimestamp(created).astimezone() if isinstance(created, float) else created,
            "source": item.get("source"), "facts": [entry_row(f) for f in item.get("facts", [])]}


def diff_words(old: str | None, new: str | None) -> list[tuple[str, str]]:
    """(op, text) runs from old to new, word by word: op is '=', '-' or '+'."""
    before, after = WORDS.findall(old or ""), WORDS.findall(new or "")
    runs: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            runs.append(("=", "".join(before[i1:i2])))
            continue
        if i2 > i1:
            runs.append(("-", "".join(before[i1:i2])))
        if j2 > j1:
            runs.append(("+", "".join(after[j1:j2])))
    return runs


def explain_rows(hit) -> list[tuple[str, str, float | None]]:
    """A hit's stages as (name, shown value, share of 1 for a bar or None)."""
    rows = []
    for name, value in hit.explain.items():
        if isinstance(value, float):
            share = value if 0.0 <= value <= 1.0 else None
            rows.append((name, f"{value:.4g}", share))
        else:
            rows.append((name, str(value), None))
    return rows


def operations() -> tuple[str, ...]:
    """The operations a commit's trailer names, for the log's filter."""
    return ("add", "chat", "update", "delete", "restore", "rule", "session", "core", "import", "gc", "reset", "init")


def provenance(entry: Entry, events: list) -> dict[str, Any]:
    """Where a memory came from: the commit that added it and the last that changed it, the turn it was
    taken from, and the session and model when its front matter records them (curation writes
    `model` and `session`, curate.events.PROVENANCE_KEYS; older facts and callers' metadata may
    name them otherwise, and mem0's run_id is a session too)."""
    first = events[0] if events else None
    last = events[-1] if events else None
    meta, extra = entry.metadata or {}, entry.extra or {}
    return {
        "added_commit": first.commit if first else None, "added_at": first.moment if first else entry.created_at,
        "added_by": first.subject if first else None,
        "last_commit": last.commit if last else None, "last_at": last.moment if last else None,
        "source": entry.source,
        "session": extra.get("session") or meta.get("session_id") or meta.get("session") or entry.run_id,
        "model": extra.get("model") or meta.get("model") or meta.get("llm_model"), "evidence": entry.evidence,
    }


def workspace_links(days: list[str]) -> dict[str, str]:
    """id -> page of the core files and these journal days: search finds them by their path's id."""
    from memvault.shapes import layout

    links = {layout.path_id(layout.core_path(name)): f"/core/{name}" for name in layout.CORE_NAMES}
    links.update({layout.path_id(layout.journal_path(day)): f"/journal/{day}" for day in days})
    return links
