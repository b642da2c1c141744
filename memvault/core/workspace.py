"""The agent's workspace (AgenticX): core memory files, the daily log, and per-session scratchpads.

- Core files `core/USER.md`, `IDENTITY.md`, `SOUL.md`, `MEMORY.md`: written by a person, placed first
  in every chat and proxy prompt (each cut to `core.max_chars`, with a warning), indexed.
- The daily log `journal/<YYYY-MM-DD>.md`: one dated block per session that learned something.
- Scratchpads: memvault.vault.write.scratchpad, under the git-ignored state folder.
Every change to a vault file here is one commit (the vault's transaction), then indexed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memvault.core.base import short
from memvault.errors import UsageError
from memvault.vault.format import layout
from memvault.vault.write.scratchpad import Scratchpad

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.searching import Searching
    from memvault.vault.git.timetravel import PastCommit

log = logging.getLogger("memvault")

PURPOSES = {
    "USER": "who the user is: name, work, people, preferences, how they like to be answered.",
    "IDENTITY": "who the assistant is: its name, role and voice.",
    "SOUL": "the assistant's values and boundaries: what it always does, what it never does.",
    "MEMORY": "durable notes worth having in every conversation: ongoing projects, decisions, context.",
}
# The daily log: deduplicated line by line once a day's file passes the first size, never longer
# than the second (a runaway agent must not grow it, or a prompt that quotes it, without bound).
JOURNAL_DEDUP_CHARS = 2_000
JOURNAL_MAX_CHARS = 8_000
JOURNAL_FULL = "- … (the day's log is full: later changes are in `git log`)"
EVENT_WORDS = {"ADD": "added", "UPDATE": "updated", "DELETE": "deleted"}


def core_template(name: str) -> str:
    """A new core file: only a comment saying what it is for (comments never reach a prompt)."""
    return (f"<!-- {name}.md: {PURPOSES[name]}\n"
            "memvault puts what you write here (without comments like this one) at the top of every chat and "
            "proxy prompt, at most core.max_chars characters (4,000 by default), and search finds it. Edit it "
            f"with `memvault core edit {name}`; each saved change is a git commit. -->\n")


@dataclass(frozen=True)
class CoreFile:
    """One core file as a prompt gets it."""

    name: str  # "USER.md"
    text: str  # its text without comments, cut to the cap
    chars: int  # its length before the cut
    cut: bool


def event_line(event) -> str | None:
    """One line of the daily log for a memory event (mem0 shape), None for a NONE."""
    word = EVENT_WORDS.get(getattr(event, "event", ""))
    if word is None:
        return None
    new, old = getattr(event, "new_memory", None), getattr(event, "old_memory", None)
    text = " ".join(str(new if new is not None else old or "").split())
    line = f"- {word}: {text}"
    if event.event == "UPDATE" and old and old != new:
        line += f" (was: {' '.join(str(old).split())})"
    return line + (f" [{event.id[:8]}]" if getattr(event, "id", None) else "")


def dedupe_lines(text: str) -> str:
    """Each list line once (its first time); headings and blank lines stay, so blocks keep their dates."""
    seen: set[str] = set()
    kept = []
    for line in text.splitlines():
        if line.startswith("- "):
            if line in seen:
                continue
            seen.add(line)
        kept.append(line)
    return "\n".join(kept) + "\n"


def within_cap(text: str, cap: int = JOURNAL_MAX_CHARS) -> str:
    """`text` if it fits the day's cap; otherwise its head, whole lines only, then one line that says so."""
    if len(text) <= cap:
        return text
    room = cap - len(JOURNAL_FULL) - 1
    head = text[:room].rsplit("\n", 1)[0]
    return head.rstrip("\n") + "\n" + JOURNAL_FULL + "\n"


def journal_text(before: str | None, day: str, block: str) -> str:
    """The day's file after appending `block`: deduplicated past JOURNAL_DEDUP_CHARS, cut at JOURNAL_MAX_CHARS."""
    if before is not None and JOURNAL_FULL in before:
        return before  # full: nothing more today
    text = (before or f"# {day}\n").rstrip("\n") + "\n\n" + block
    if len(text) > JOURNAL_DEDUP_CHARS:
        text = dedupe_lines(text)
    return within_cap(text)


class Workspace:
    """Core files, the daily log and scratchpads, over the vault's transactions."""

    def __init__(self, storage: Storage, searching: Searching) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.searching = searching

    # -- core files ------------------------------------------------------------------------------
    def ensure_core(self) -> list[str]:
        """Create the core files a vault lacks (empty but explained), in one commit; returns their names.
        `init` calls it, and so does the first command that needs them on an older vault."""
        missing = [name for name in layout.CORE_NAMES if not (self.vault.root / layout.core_path(name)).exists()
                   and self.vault.linked_part(layout.core_path(name)) is None]
        if not missing:
            return []
        with self.storage.write("core", f"memvault core: create {', '.join(f'{n}.md' for n in missing)}") as tx:
            for name in missing:
                rel = layout.core_path(name)
                if not (self.vault.root / rel).exists():  # another process may have made it meanwhile
                    tx.write_file(rel, core_template(name))
        return missing

    def read_core(self, name: str, as_of: str | PastCommit | None = None) -> tuple[PurePosixPath, str]:
        """A core file's path and its whole text as on disk (created first if the vault lacks it);
        `as_of`: as it read then ("" if it did not exist yet)."""
        rel = layout.core_path(name)
        if as_of is not None:
            return rel, self.workspace_as_of(rel, as_of) or ""
        text = self.vault.read_workspace(rel)
        if text is None:
            self.ensure_core()
            text = self.vault.read_workspace(rel) or ""
        return rel, text

    def update_core(self, name: str, text: str) -> tuple[PurePosixPath, bool]:
        """Replace a core file's text, one commit; returns (path, whether it changed)."""
        rel = layout.core_path(name)
        text = text if text.endswith("\n") or not text else text + "\n"
        self.ensure_core()
        if self.vault.read_workspace(rel) == text:
            return rel, False
        summary = short(layout.workspace_text(text) or "(emptied)", 40)
        with self.storage.write("core", f"memvault core: edit {rel.name}: {summary}") as tx:
            tx.write_file(rel, text)
        return rel, True

    def restore_workspace(self, files: dict[PurePosixPath, str]) -> tuple[list[PurePosixPath], list[str]]:
        """Core files and journal days brought back as they were exported (`memvault export | memvault
        import -`), in one commit. A file is written where the vault has none, or only an untouched
        core template, or the same text; a file a person has written differently is kept, and named
        in the notes. Returns (paths written, notes)."""
        written_paths, notes = [], []
        wanted = {}
        for rel, text in files.items():
            if not layout.is_workspace_path(rel):
                raise UsageError(f"{rel} is not a core file or a journal day")
            current = self.vault.read_workspace(rel)
            if current == text:
                continue
            if current is not None and layout.workspace_text(current):
                notes.append(f"{rel}: kept the vault's own text (it differs from the imported one)")
                continue
            wanted[rel] = text
        if wanted:
            names = ", ".join(str(rel) for rel in wanted)
            with self.storage.write("import", f"memvault import: {short(names, 60)}") as tx:
                for rel, text in wanted.items():
                    written_paths.append(tx.write_file(rel, text))
        return written_paths, notes

    def workspace_texts(self) -> Iterator[tuple[PurePosixPath, str]]:
        """Every core file and journal day, with its whole text (for an export)."""
        for rel in self.vault.workspace_files():
            text = self.vault.read_workspace(rel)
            if text is not None:
                yield rel, text

    def core_context(self) -> list[CoreFile]:
        """The core files with something in them, in their fixed order, each cut to `core.max_chars`
        (with a warning: the model sees only the head). A missing or unreadable file adds nothing."""
        from memvault.errors import EntryFormatError

        cap = self.settings.core.max_chars
        found = []
        for name in layout.CORE_NAMES:
            rel = layout.core_path(name)
            try:
                text = self.vault.read(rel).text if (self.vault.root / rel).exists() else ""
            except EntryFormatError as exc:
                log.warning("core file %s left out of the prompt: %s", rel, exc.reason)
                continue
            if not text:
                continue
            cut = len(text) > cap
            if cut:
                log.warning("core file %s has %s characters, more than core.max_chars (%s): only its first %s "
                            "reach the prompt", rel, f"{len(text):,}", f"{cap:,}", f"{cap:,}")
            found.append(CoreFile(rel.name, text[:cap] if cut else text, len(text), cut))
        return found

    # -- the daily log -------------------------------------------------------------------------
    def log_day(self, tx, events, title: str, when: datetime | None = None) -> PurePosixPath | None:
        """Append today's block for what a session learned (facts added, updated, deleted) to
        journal/<YYYY-MM-DD>.md, inside the caller's transaction `tx` (so a session end is one
        commit). Nothing is written when nothing was learned; returns the path written, or None."""
        lines = [line for line in (event_line(event) for event in events) if line]
        if not lines:
            return None
        when = when or datetime.now(timezone.utc)
        day = when.date().isoformat()
        rel = layout.journal_path(day)
        block = f"## {when.strftime('%H:%M')} UTC · {' '.join(title.split())}\n" + "\n".join(lines) + "\n"
        before = self.vault.read_workspace(rel)
        after = journal_text(before, day, block)
        if after == before:
            return None
        return tx.write_file(rel, after)

    def journal(self, day: str | None = None,
                as_of: str | PastCommit | None = None) -> tuple[PurePosixPath, str | None]:
        """A day's log (today by default) and its text, None when that day has none (at `as_of`: had)."""
        rel = layout.journal_path(day or datetime.now(timezone.utc).date().isoformat())
        return rel, self.workspace_as_of(rel, as_of) if as_of is not None else self.vault.read_workspace(rel)

    def workspace_as_of(self, rel: PurePosixPath, as_of: str | PastCommit) -> str | None:
        """A core file's or journal day's text at a past moment, read from git (None: it had none)."""
        return self.vault.git.show(self.searching.resolve_as_of(as_of).sha, str(rel))

    # -- scratchpads -----------------------------------------------------------------------------
    def scratchpad(self, conversation: str) -> Scratchpad:
        """The scratchpad of a conversation's session (never committed, cleared at session end)."""
        return Scratchpad(self.vault.state_dir, conversation)
