"""The refusal log (`.memvault/refusals.jsonl`): every fact memvault was offered and did not store.

A refusal (a DROP event: a secret, an ungrounded fact, a candidate the write policy dropped, a held
one the session did not support) is returned to the door that asked. Curation through the proxy
runs after its answer has gone out, and a session may end from cron, so the refusal is also noted
here: `memvault log` lists it, `memvault doctor` counts refusals by reason, and the proxy tells
the client in its next answer for the same conversation (memvault.server.proxy).

Never committed (it lives under .memvault/, which ignores itself); the texts are redacted as every
state file's (memvault.vault.format.jsonlines) and shortened; the file is capped at MAX_BYTES (the oldest
half goes when an append would pass it). An erase takes its records out (memvault.vault.forget.state_purge).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memvault.vault.format import jsonlines

REFUSALS = "refusals.jsonl"
MAX_BYTES = 512 * 1024
MAX_TEXT_CHARS = 300  # of a refused text, kept: enough to recognise it
KIND_CHARS = 60
MAX_UNREPORTED = 20  # per conversation, the newest, until its next answer


def reason_kind(reason: str | None) -> str:
    """What a reason says before its details ("ungrounded: lives not in ..." -> "ungrounded"), so
    doctor can count refusals of one kind together."""
    head = (reason or "no reason given").split(":", 1)[0].strip()
    return head[:KIND_CHARS] or "no reason given"


@dataclass(frozen=True)
class Refusal:
    """One refused fact, as the log holds it."""

    at: datetime
    conversation: str | None
    memory: str
    reason: str
    operation: str = "add"  # add | policy | session end
    turn_id: str | None = None
    scopes: dict[str, str] | None = None

    @property
    def kind(self) -> str:
        return reason_kind(self.reason)

    def to_dict(self) -> dict[str, Any]:
        """As the doors show it: a mem0-shaped DROP event, with when, where (`memvault log`'s operation
        `refused`; `during`: the add, the write policy or a session's end) and why."""
        return {"event": "DROP", "id": None, "memory": self.memory, "reason": self.reason,
                "time": self.at.isoformat(timespec="seconds"), "operation": "refused", "during": self.operation,
                "conversation": self.conversation, "turn_id": self.turn_id, **(self.scopes or {})}

    @classmethod
    def from_record(cls, record: dict) -> Refusal | None:
        try:
            at = datetime.fromisoformat(str(record["at"]))
        except (KeyError, ValueError):
            return None
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        scopes = record.get("scopes") if isinstance(record.get("scopes"), dict) else None
        return cls(at, text_or_none(record.get("conversation")), str(record.get("memory") or ""),
                   str(record.get("reason") or ""), str(record.get("operation") or "add"),
                   text_or_none(record.get("turn_id")), scopes)


def text_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


class RefusalLog:
    """The refusals of one vault, appended by core and read by `log`, `doctor` and the proxy."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / REFUSALS

    def record(self, events: list, conversation: str | None, scopes: dict[str, str] | None = None,
               turn_id: str | None = None, operation: str = "add") -> list[Refusal]:
        """Note the DROP events among `events` (curate.ingest.MemoryEvent); returns what was noted."""
        moment = datetime.now(timezone.utc)
        noted = [Refusal(moment, conversation, str(e.new_memory or e.old_memory or "")[:MAX_TEXT_CHARS],
                         str(e.reason or ""), operation, turn_id, dict(scopes) if scopes else None)
                 for e in events if e.event == "DROP"]
        if noted:
            self._append([record_of(refusal) for refusal in noted])
        return noted

    def _append(self, records: list[dict]) -> None:
        from filelock import FileLock

        # The lock only orders appends with the trim below (appends alone are single O_APPEND writes).
        with FileLock(str(self.path) + ".lock", timeout=10):
            jsonlines.append(self.path, records, mode=0o600)  # 0600: refused texts are the user's words
            if self.path.stat().st_size > MAX_BYTES:
                self._trim()

    def _trim(self) -> None:
        """Keep the newest records that fill half the cap."""
        from memvault.vault.format.atomic import atomic_write

        kept: list[bytes] = []
        size = 0
        for record in reversed(jsonlines.read(self.path)):
            line = jsonlines.encode([record], redacted=False)
            if size + len(line) > MAX_BYTES // 2:
                break
            kept.append(line)
            size += len(line)
        atomic_write(self.path, b"".join(reversed(kept)))

    def read(self, days: float | None = None, conversation: str | None = None) -> list[Refusal]:
        """The refusals noted, oldest first: of the last `days`, of one conversation."""
        since = datetime.now(timezone.utc) - timedelta(days=days) if days is not None else None
        found = (Refusal.from_record(record) for record in jsonlines.read(self.path))
        return [r for r in found if r is not None and (since is None or r.at >= since)
                and (conversation is None or r.conversation == conversation)]


def record_of(refusal: Refusal) -> dict[str, Any]:
    record = {"at": refusal.at.isoformat(timespec="milliseconds"), "conversation": refusal.conversation,
              "memory": refusal.memory, "reason": refusal.reason, "operation": refusal.operation}
    if refusal.turn_id:
        record["turn_id"] = refusal.turn_id
    if refusal.scopes:
        record["scopes"] = refusal.scopes
    return record


class RefusalTail:
    """The refusals noted since this reader last looked, per conversation (the proxy: a client hears of
    its turn's refusals in its next answer). Reads only the bytes appended since; a trimmed file is
    read again from its start, skipping what was already seen."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / REFUSALS
        self.offset = self._size()  # what was refused before this reader started is in `memvault log`
        self.last_seen: datetime | None = None
        self.unreported: dict[str, list[Refusal]] = {}

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def take(self, conversation: str) -> list[Refusal]:
        """The conversation's refusals not yet taken (each is given once)."""
        self._read_new()
        return self.unreported.pop(conversation, [])

    def _read_new(self) -> None:
        size = self._size()
        if size == self.offset:
            return
        seen = None
        if size < self.offset:  # trimmed: read again, skipping what was seen
            self.offset, seen = 0, self.last_seen
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read(size - self.offset)
        whole = data.rfind(b"\n") + 1  # a line still being written is read next time
        self.offset += whole
        for record in jsonlines.parse(data[:whole]):
            refusal = Refusal.from_record(record)
            if refusal is None or (seen is not None and refusal.at <= seen):
                continue
            waiting = self.unreported.setdefault(refusal.conversation or "", [])
            waiting.append(refusal)
            del waiting[:-MAX_UNREPORTED]
            self.last_seen = max(refusal.at, self.last_seen or refusal.at)
