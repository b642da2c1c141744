"""The proxy's daily log: what each conversation's curation learned, appended to journal/<date>.md
once the conversation has been idle a while, and at shutdown.

A stop-gap until session ends (the layers issue) write the daily log in the session's own commit:
then this module goes, and `Memvault.log_day` is called from the session end instead.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger("memvault.server")
IDLE_SECONDS = 20 * 60.0  # a conversation quiet this long has ended its session
TICK_SECONDS = 30.0  # how often idle conversations are looked for


class IdleDayLog:
    """Learned events per conversation, written to the daily log when the conversation goes idle."""

    def __init__(self, core, idle_seconds: float = IDLE_SECONDS, tick: float = TICK_SECONDS) -> None:
        self.core = core
        self.idle_seconds = idle_seconds
        self.tick = tick
        self.lock = threading.Lock()
        self.events: dict[str, list] = {}
        self.last_seen: dict[str, float] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="memvault-daily-log", daemon=True)
        self.thread.start()

    def learned(self, conversation: str, events: list) -> None:
        """Note what one turn's curation changed (NONE events are never logged)."""
        with self.lock:
            self.last_seen[conversation] = time.monotonic()
            if events:
                self.events.setdefault(conversation, []).extend(events)

    def flush(self, idle_only: bool = True) -> int:
        """Write the log of each conversation idle long enough (all of them: `idle_only` False);
        returns how many conversations were logged."""
        now = time.monotonic()
        with self.lock:
            due = [conv for conv in self.events
                   if not idle_only or now - self.last_seen.get(conv, 0.0) >= self.idle_seconds]
            batches = [(conv, self.events.pop(conv)) for conv in due]
            for conv in due:
                self.last_seen.pop(conv, None)
        for conversation, events in batches:
            try:
                self.core.write_day_log(events, f"proxy conversation {conversation}")
            except Exception:  # noqa: BLE001 - the facts are stored; only their log lines are lost
                log.exception("daily log for memory_id %s not written", conversation)
        return len(batches)

    def close(self) -> None:
        """Stop looking, and log every conversation (the server is going away: its sessions end)."""
        self.stopping.set()
        self.thread.join(timeout=10)
        self.flush(idle_only=False)

    def _run(self) -> None:
        while not self.stopping.wait(self.tick):
            self.flush()
