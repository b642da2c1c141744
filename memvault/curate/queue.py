"""The durable queue of chat turns waiting for curation (`.memvault/curation-queue.jsonl`).

A turn is queued before its answer goes out and struck off only once curated, so a server that stops
in between curates it at the next start (memvault.server.turns.resume_curation). A curation that
fails stays queued: it is tried again after a back-off (`retry_delay`), and after MAX_FAILURES
failures it is set aside as poison (`poisoned`: not tried again by itself, shown by `memvault doctor`,
queued again by `doctor --fix` once the cause is mended). Nothing is ever dropped silently.
"""

from __future__ import annotations

from pathlib import Path

from memvault.vault.format import jsonlines

CURATION_QUEUE = "curation-queue.jsonl"
MAX_FAILURES = 5  # failed curations of one turn before it is poison
FIRST_DELAY, LONGEST_DELAY = 2.0, 300.0  # seconds before the next try: doubled per failure, capped
ERROR_CHARS = 300  # of a failure's message, kept for doctor


def retry_delay(failures: int) -> float:
    """Seconds to wait before the next try of a curation that has failed `failures` times."""
    return min(LONGEST_DELAY, FIRST_DELAY * 2 ** max(0, failures - 1))


class CurationQueue:
    """Turns handed to curation and not yet curated, on disk: one JSON line per turn queued
    ({"turn", "conversation", "scopes", "messages"}), one per failed try ({"failed": id, "error"}),
    one per turn done ({"done": id}) and one per poison turn queued again ({"retry": id}).
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

    def failed(self, turn_id: str, error: str) -> int:
        """Note a failed try (the turn stays queued); returns how many tries of it have failed."""
        self._append({"failed": turn_id, "error": error[:ERROR_CHARS]}, True)
        record = self._records().get(turn_id)
        return record.get("failures", 0) if record else 0

    def retry(self, turn_ids: list[str]) -> None:
        """Queue poison turns again, their failures forgotten (`doctor --fix`, once the cause is mended)."""
        jsonlines.append(self.path, [{"retry": turn_id} for turn_id in turn_ids], mode=0o600, sync=True)

    def _records(self) -> dict[str, dict]:
        """The turns queued and not done, oldest first, each with its "failures" and last "error"."""
        waiting: dict[str, dict] = {}
        for record in jsonlines.read(self.path):
            if "done" in record:
                waiting.pop(str(record["done"]), None)
            elif "failed" in record or "retry" in record:
                turn = waiting.get(str(record.get("failed", record.get("retry"))))
                if turn is not None and "failed" in record:
                    turn["failures"] = turn.get("failures", 0) + 1
                    turn["error"] = str(record.get("error", ""))
                elif turn is not None:
                    turn.pop("failures", None)
                    turn.pop("error", None)
            elif isinstance(record.get("turn"), str):
                waiting[record["turn"]] = record
        return waiting

    def pending(self) -> list[dict]:
        """The turns queued and not done, oldest first, poison turns left out (lines that are not
        records are passed over)."""
        return [record for record in self._records().values() if record.get("failures", 0) < MAX_FAILURES]

    def poisoned(self) -> list[dict]:
        """The turns whose curation failed MAX_FAILURES times: queued, but not tried again by themselves."""
        return [record for record in self._records().values() if record.get("failures", 0) >= MAX_FAILURES]

    def compact(self) -> list[dict]:
        """Rewrite the file with only the queued turns, their failure counts kept (at start-up, before
        any writer); returns those to curate (poison left out)."""
        from memvault.vault.format.atomic import atomic_write

        waiting = list(self._records().values())
        if waiting:
            atomic_write(self.path, jsonlines.encode(waiting))
        else:
            self.path.unlink(missing_ok=True)
        return [record for record in waiting if record.get("failures", 0) < MAX_FAILURES]
