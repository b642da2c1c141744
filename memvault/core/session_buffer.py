"""The session buffer: what an open session knows before it ends, under `.memvault/session/<conversation>/`.

    held.jsonl   candidates labelled `hold` or `repeat` by the write policy, one JSON line each
    state.json   {"scopes", "started_at", "last_activity", "user_turns", "turn_ids", "learned"}

Never committed (`.memvault/` is git-ignored) and written before the call that labelled them returns,
so a restart, even a SIGKILL, loses nothing. Other layers may keep files in the same folder (the
scratchpad); ending a session removes the whole folder. Every read-modify-write holds one lock file,
so the server, a chat and a cron `memvault session end` can share the buffer.

`SessionBuffer(None)` keeps everything in the process (incognito writes no file).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.vault.format import jsonlines, layout

HELD_FILE = "held.jsonl"
STATE_FILE = "state.json"
ENDING_DIR = ".ending"  # a session being ended is moved here first: new turns then open a new session
LOCK_FILE = ".lock"
CLAIMS_DIR = ".claims"  # one lock file per conversation, held by whoever is ending its session
MAX_TURN_IDS = 200  # a session's user turns remembered for its summary (the newest)


@dataclass
class SessionRecord:
    """One session's buffer, as read."""

    conversation: str
    state: dict[str, Any] = field(default_factory=dict)
    held: list[dict[str, Any]] = field(default_factory=list)

    @property
    def user_turns(self) -> int:
        return int(self.state.get("user_turns") or 0)

    @property
    def last_activity(self) -> float:
        return float(self.state.get("last_activity") or 0.0)

    @property
    def scopes(self) -> dict[str, str]:
        return dict(self.state.get("scopes") or {})


class SessionBuffer:
    """Open sessions' buffers, on disk under `root` (None: in this process only)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.memory: dict[str, SessionRecord] = {}
        self.thread_lock = threading.RLock()

    @classmethod
    def of_vault(cls, state_dir: Path) -> SessionBuffer:
        return cls(Path(state_dir) / layout.SESSION_STATE_DIR)

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self.thread_lock:
            if self.root is None:
                yield
                return
            from filelock import FileLock

            self.root.mkdir(parents=True, exist_ok=True)
            with FileLock(str(self.root / LOCK_FILE), timeout=60):
                yield

    @contextmanager
    def ending(self, conversation: str) -> Iterator[None]:
        """Held for the whole end of a conversation's session (take ... finish), so two processes
        ending it at once (a cron `session end` beside `serve`'s idle timer) do not both end the same
        buffer: the second waits, then finds what is left. The OS drops the lock of a killed process,
        so a half-ended session is still taken by the next end."""
        if self.root is None:
            with self.thread_lock:
                yield
            return
        from filelock import FileLock

        claims = self.root / CLAIMS_DIR
        claims.mkdir(parents=True, exist_ok=True)
        with FileLock(str(claims / f"{layout.folder_for(conversation)}.lock")):
            yield

    # -- reading and writing one session (call with the lock held) ---------------------------------
    def read(self, conversation: str, folder: Path | None = None) -> SessionRecord:
        if self.root is None:
            return self.memory.setdefault(conversation, SessionRecord(conversation))
        folder = folder or self.folder_of(conversation)
        return self._record(conversation, folder, state_of(folder))

    @staticmethod
    def _record(conversation: str, folder: Path, state: dict) -> SessionRecord:
        return SessionRecord(conversation, state, jsonlines.read(folder / HELD_FILE))

    def save_state(self, record: SessionRecord) -> None:
        if self.root is None:
            self.memory[record.conversation] = record
            return
        from memvault.vault.format.atomic import atomic_write

        atomic_write(self.folder_of(record.conversation) / STATE_FILE, state_json(record))  # makes the folder

    def append_held(self, record: SessionRecord, items: list[dict]) -> None:
        record.held.extend(items)
        if self.root is not None and items:  # synced: a held candidate survives a power cut
            jsonlines.append(self.folder_of(record.conversation) / HELD_FILE, items, mode=0o600, sync=True)

    def save_held(self, record: SessionRecord) -> None:
        """Rewrite the held candidates (after one was promoted or replaced)."""
        if self.root is None:
            return
        from memvault.vault.format.atomic import atomic_write

        atomic_write(self.folder_of(record.conversation) / HELD_FILE, jsonlines.encode(record.held))

    def note_turn(self, record: SessionRecord, turn_id: str | None, scopes: dict[str, str]) -> None:
        """One more user turn in the session (its first opens it)."""
        moment = time.time()
        state = record.state
        state.setdefault("started_at", moment)
        state["last_activity"] = moment
        state["scopes"] = scopes
        state["user_turns"] = int(state.get("user_turns") or 0) + 1
        if turn_id:
            state["turn_ids"] = [*(state.get("turn_ids") or []), turn_id][-MAX_TURN_IDS:]
        self.save_state(record)

    # -- the sessions that are open, and ending one ------------------------------------------------
    def open_sessions(self) -> list[SessionRecord]:
        """Every open session (and any a stopped `end` left half-ended), oldest activity first."""
        if self.root is None:
            return sorted(self.memory.values(), key=lambda r: r.last_activity)
        found = []
        for folder in self.folders():
            if (folder / STATE_FILE).exists() or (folder / HELD_FILE).exists():
                state = state_of(folder)
                found.append(self._record(conversation_in(folder, state), folder, state))
        return sorted(found, key=lambda r: r.last_activity)

    def folders(self) -> list[Path]:
        if self.root is None or not self.root.is_dir():
            return []
        ending = self.root / ENDING_DIR
        return sorted([p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
                      + ([p for p in ending.iterdir() if p.is_dir()] if ending.is_dir() else []))

    def folder_of(self, conversation: str) -> Path:
        """The conversation's folder: layout.folder_for's safe name (any id, no path tricks)."""
        return self.root / layout.folder_for(conversation)

    def take(self, conversation: str) -> tuple[SessionRecord, Path | None] | None:
        """The session's buffer, moved aside for ending (None when no session is open). A turn that
        arrives meanwhile opens a new session; a half-ended one (a stop during its end) is taken too."""
        with self.locked():
            if self.root is None:
                record = self.memory.pop(conversation, None)
                return (record, None) if record is not None else None
            states = {folder: state_of(folder) for folder in self.folders()}  # each state file read once
            candidates = [f for f, state in states.items() if conversation_in(f, state) == conversation]
            if not candidates:
                return None
            merged = SessionRecord(conversation)
            moved: list[Path] = []
            for folder in candidates:
                part = self._record(conversation, folder, states[folder])
                merge(merged, part)
                if folder.parent.name != ENDING_DIR:
                    target = self.root / ENDING_DIR / f"{layout.folder_for(conversation)}__{uuid.uuid4().hex[:12]}"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    folder.rename(target)
                    folder = target
                moved.append(folder)
            holder = self.root / ENDING_DIR / f"{layout.folder_for(conversation)}__{uuid.uuid4().hex[:12]}"
            if len(moved) > 1:  # one folder holds the merged session, the others go
                holder.mkdir()
                self.write_folder(holder, merged)
                for folder in moved:
                    shutil.rmtree(folder, ignore_errors=True)
                return merged, holder
            return merged, moved[0]

    def write_folder(self, folder: Path, record: SessionRecord) -> None:
        from memvault.vault.format.atomic import atomic_write

        atomic_write(folder / STATE_FILE, state_json(record))
        jsonlines.append(folder / HELD_FILE, record.held, mode=0o600, sync=True)

    def finish(self, folder: Path | None) -> None:
        """The session is ended (committed): its buffer goes."""
        if folder is not None:
            with self.locked():
                shutil.rmtree(folder, ignore_errors=True)


def state_of(folder: Path) -> dict:
    """A session folder's state (empty when missing or unreadable)."""
    try:
        state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def conversation_in(folder: Path, state: dict) -> str:
    """The conversation id a folder holds: as its state says (ids that are not folder names), else its name."""
    named = state.get("conversation")
    if isinstance(named, str) and named:
        return named
    return folder.name.split("__", 1)[0] if folder.parent.name == ENDING_DIR else folder.name


def state_json(record: SessionRecord) -> bytes:
    """The state file's bytes; it names the conversation, whose folder name may differ from its id."""
    return json.dumps({**record.state, "conversation": record.conversation}, ensure_ascii=False).encode("utf-8")


def merge(into: SessionRecord, part: SessionRecord) -> None:
    """Fold a second buffer of the same conversation into `into` (a half-ended session and a new one)."""
    state, other = into.state, part.state
    if not state:
        into.state = dict(other)
    elif other:
        state["started_at"] = min(state.get("started_at") or time.time(), other.get("started_at") or time.time())
        state["last_activity"] = max(state.get("last_activity") or 0.0, other.get("last_activity") or 0.0)
        state["user_turns"] = int(state.get("user_turns") or 0) + int(other.get("user_turns") or 0)
        state["turn_ids"] = [*(state.get("turn_ids") or []), *(other.get("turn_ids") or [])][-MAX_TURN_IDS:]
        state["learned"] = [*(state.get("learned") or []), *(other.get("learned") or [])]
        state["scopes"] = state.get("scopes") or other.get("scopes") or {}
    into.held.extend(part.held)
