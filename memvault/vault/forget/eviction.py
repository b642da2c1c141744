"""What `gc` removes: eviction above the per-conversation limit, and purge of old tombstones (pure)."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import PurePosixPath

from memvault.errors import UsageError
from memvault.vault.format.entry import Entry

EVICTABLE_ROLES = ("memory", "user", "assistant")  # summaries are exempt


@dataclass
class GcPlan:
    evict: list[Entry] = field(default_factory=list)
    purge: list[tuple[PurePosixPath, Entry]] = field(default_factory=list)


def parse_age(text: str) -> timedelta:
    """'90d', '12h', '2w', '30m' or a bare number of days."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text or "")
    if not match:
        raise UsageError(f"invalid age {text!r}: use a number with s, m, h, d or w, such as 90d")
    amount, unit = float(match.group(1)), match.group(2) or "d"
    try:
        return timedelta(seconds=amount * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit])
    except OverflowError:
        raise UsageError(f"invalid age {text!r}: too long (at most {timedelta.max.days:,} days)") from None


def plan_eviction(live: list[Entry], max_entries: int) -> list[Entry]:
    """Oldest facts and turns of each conversation beyond `max_entries`."""
    if max_entries < 1:
        raise UsageError("max_entries must be at least 1")
    by_conversation: dict[str, list[Entry]] = defaultdict(list)
    for entry in live:
        if entry.role in EVICTABLE_ROLES and not entry.deleted:
            by_conversation[entry.conversation_id].append(entry)
    evicted: list[Entry] = []
    for entries in by_conversation.values():
        excess = len(entries) - max_entries
        if excess > 0:
            evicted += sorted(entries, key=lambda e: (e.created_at, e.id))[:excess]
    return evicted


def plan_purge(tombstones: list[tuple[PurePosixPath, Entry]], older_than: timedelta, now: datetime
               ) -> list[tuple[PurePosixPath, Entry]]:
    cutoff = now - older_than
    return [(rel, entry) for rel, entry in tombstones if entry.deleted_at and entry.deleted_at < cutoff]
