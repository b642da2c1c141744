"""The durable queue of chat turns waiting for curation (`.memvault/curation-queue.jsonl`).

A turn is queued before its answer goes out and struck off once curated, so a server that stops in
between curates it at the next start (memvault.server.turns.resume_curation).
"""

from __future__ import annotations

from pathlib import Path

from memvault.vault import jsonlines

CURATION_QUEUE = "curation-queue.jsonl"


class CurationQueue:
    """Turns handed to curation and not yet curated, on disk: one JSON line per turn queued
    ({"turn", "conversation", "scopes", "messages"}) and one per turn done ({"done": id}).
    Appends are single O_APPEND writes, so request threads and the curation worker share the file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / CURATION_QUEUE

    def _append(self, record: dict, sync: bool) -> None:
        jsonlines.append(self.path, [record], mode=0o600, sync=sync)  # 0600: the messages are the user's

    def add(self, turn_id: str, conversation: str, scopes: dict, messages: list[dict]) -> None:
        # Synced like the turn files themselves: a turn that survives a power cut keeps its curation.
        self._append({"turn": turn_id, "conversation": conversation, "scopes": scopes, "messages": messages}, True)

    def done(self, turn_id: str) -> None:
        # Not synced: a lost "done" costs a second look at the turn (its facts are found, nothing is redone).
        self._append({"done": turn_id}, False)

    def pending(self) -> list[dict]:
        """The turns queued and not done, oldest first (lines that are not records are passed over)."""
        waiting: dict[str, dict] = {}
        for record in jsonlines.read(self.path):
            if "done" in record:
                waiting.pop(str(record["done"]), None)
            elif isinstance(record.get("turn"), str):
                waiting[record["turn"]] = record
        return list(waiting.values())

    def compact(self) -> list[dict]:
        """Rewrite the file with only the pending turns (at start-up, before any writer); returns them."""
        from memvault.vault.store import atomic_write

        waiting = self.pending()
        if waiting:
            atomic_write(self.path, jsonlines.encode(waiting))
        else:
            self.path.unlink(missing_ok=True)
        return waiting
