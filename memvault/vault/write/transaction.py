"""A transaction's file changes: each write, soft delete, restore and purge that one commit will
hold, noted before it happens (so a crash's recovery can undo it, vault.write.recovery) and undone on rollback.

`Vault.transaction()` (vault.write.store) opens one under the vault's lock and commits what it changed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memvault.errors import NotFoundError, UnsafePathError, UsageError
from memvault.text.redact import redact, redact_entry
from memvault.vault.format import layout
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.entry import Entry, now
from memvault.vault.format.fields import check_text
from memvault.vault.format.markdown import render

if TYPE_CHECKING:
    from memvault.vault.write.store import Vault


@dataclass
class Change:
    """One file touched by a transaction: enough to undo it and to update the index after it."""

    rel: PurePosixPath
    before: bytes | None  # the file's bytes before, None if it did not exist
    entry: Entry | None  # the entry now at `rel`, None if the file is gone


@dataclass
class Transaction:
    vault: Vault
    operation: str
    conversation: str | None = None
    events: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    commit_sha: str | None = None  # the commit this transaction made (None: nothing changed)

    def _touch(self, rel: PurePosixPath, entry: Entry | None, data: bytes | None = None) -> None:
        """Write `entry` at `rel` (as rendered, or as `data` when given), or remove the file (None)."""
        if entry is not None:
            self.vault.check_new_folder(rel)
            clean = redact_entry(entry)  # secrets never reach the vault (docs/architecture.md, Redaction)
            if clean is not entry:
                entry, data = clean, None  # an exact import's bytes held the secret: rendered anew
            data = render(entry).encode("utf-8") if data is None else data
        self._put(rel, data if entry is not None else None, entry)

    def _put(self, rel: PurePosixPath, data: bytes | None, entry: Entry | None) -> None:
        """Write `data` at `rel` (None: remove it), noted first for a crash's recovery, undone on rollback."""
        path = self.vault.root / rel
        if self.vault.linked_part(rel) is not None:  # neither read, written nor deleted through a link
            raise UnsafePathError(f"refusing to change {rel}: it is reached through a symbolic link")
        before = path.read_bytes() if path.exists() else None
        self.vault.note_intent(rel, before)
        if data is not None:
            atomic_write(path, data)
        else:
            path.unlink(missing_ok=True)
        self.changes.append(Change(rel, before, entry))

    def write_file(self, rel: PurePosixPath, text: str) -> PurePosixPath:
        """Write a workspace file (core/<NAME>.md, journal/<date>.md) as plain markdown, no front
        matter. Only those paths: anything else is an UnsafePathError, as is a path through a link."""
        rel = PurePosixPath(rel)
        if not layout.is_workspace_path(rel):
            raise UnsafePathError(f"refusing to write {str(rel)[:80]}: only core/<NAME>.md and journal/<date>.md "
                                  "are written this way")
        if "\x00" in text:
            raise UsageError(f"the text of {rel} contains a NUL character")
        text = redact(check_text(text, f"the text of {rel}"))
        data = text.encode("utf-8")
        if len(data) > self.vault.max_file_bytes:
            raise UsageError(f"{rel} would be {len(data):,} bytes, more than limits.max_file_bytes "
                             f"({self.vault.max_file_bytes:,})")
        entry = self.vault.workspace_entry(rel, text)
        self._put(rel, data, entry if entry.text else None)  # an empty file leaves the index
        return rel

    def write(self, entry: Entry, event: str | None = None) -> PurePosixPath:
        """Create or overwrite the file of `entry` (an edit keeps the file where it is). A live entry
        whose only file is now a tombstone was deleted by another writer since it was read: refused."""
        rel = self.vault.path_of(entry.id) if event != "ADD" else None
        if rel is not None and layout.is_deleted_path(rel) and not entry.deleted:
            raise deleted_meanwhile(entry.id)
        rel = rel or layout.relative_path(entry)
        self._touch(rel, entry)
        self.vault.remember_path(entry.id, rel)
        if event:
            self.events.append((event, entry.id))
        return rel

    def write_exact(self, rel: PurePosixPath, data: bytes, entry: Entry) -> None:
        """Add a file with exactly these bytes at `rel` (an import reproducing an exported file, which
        memvault's rendering may not: a hand-written file, a key memvault does not know); `entry` is what
        the file reads as. The caller checks that `rel` is an entry path."""
        self._touch(rel, entry, data)
        self.vault.remember_path(entry.id, rel)
        self.events.append(("ADD", entry.id))

    def soft_delete(self, entry: Entry, replaced_by: str | None = None, event: str = "DELETE") -> PurePosixPath:
        """Move an entry into deleted/ as a tombstone (deleted_at, replaced_by): nothing is lost.
        The entry must still be live: callers read it before taking the lock, and another writer may
        have deleted it since (unlinking its path again would then remove the new tombstone)."""
        old_rel = self.vault.path_of(entry.id)
        if not self.vault.is_live(entry.id):
            raise deleted_meanwhile(entry.id)
        current = self.vault.read(old_rel)  # as it is now: an edit may have landed since `entry` was read
        tombstone = current.replace(deleted_at=now(), replaced_by=replaced_by)
        new_rel = layout.tombstone_path(old_rel, tombstone)
        self._touch(new_rel, tombstone)
        self._touch(old_rel, None)
        self.vault.remember_path(entry.id, new_rel)
        self.events.append((event, entry.id))
        return new_rel

    def restore(self, memory_id: str) -> tuple[PurePosixPath, Entry]:
        """Move a tombstone back to its live place (soft_delete undone); the caller checked that the
        memory is deleted and that no live file of its id came back meanwhile."""
        old_rel = self.vault.path_of(memory_id)
        if old_rel is None or not layout.is_deleted_path(old_rel):
            raise NotFoundError(f"memory {memory_id[:8]} is not deleted: nothing to restore")
        live = self.vault.read(old_rel).replace(deleted_at=None, replaced_by=None)
        new_rel = layout.relative_path(live)
        self._touch(new_rel, live)
        self._touch(old_rel, None)
        self.vault.remember_path(memory_id, new_rel)
        self.events.append(("RESTORE", memory_id))
        return new_rel, live

    def purge(self, rel: PurePosixPath, memory_id: str) -> None:
        """Remove a file for good (it stays in git history)."""
        self._touch(rel, None)
        self.events.append(("PURGE", memory_id))

    def rollback(self) -> None:
        for change in reversed(self.changes):
            path = self.vault.root / change.rel
            if change.before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, change.before)
        self.changes.clear()


def deleted_meanwhile(memory_id: str) -> NotFoundError:
    return NotFoundError(f"memory {memory_id[:8]} was deleted meanwhile (see `memvault history {memory_id[:8]}`)")
