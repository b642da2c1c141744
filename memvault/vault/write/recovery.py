"""Crash recovery: what a transaction killed mid-way changed is put back by the next writer.

A process killed mid-transaction cannot undo anything itself, so each transaction first notes what
it is about to change in an intent file (.memvault/transaction.jsonl: the HEAD it started from,
then each path with its bytes before). The next writer, under the same lock, finds the file: if
HEAD has not moved, the commit never happened and the half-done change is undone as a rollback
would have; otherwise the commit landed and only the note is dropped (`recover_interrupted`).

`CrashRecovery` is one part of `Vault` (vault.write.store): it works on the vault's root, git and the open
transaction's starting HEAD (`_intent_head`), with the vault's lock held.
"""

from __future__ import annotations

import base64
import glob
from pathlib import Path, PurePosixPath

from memvault.errors import VaultError
from memvault.vault.format import jsonlines, layout
from memvault.vault.format.atomic import atomic_write

INTENT_FILE = "transaction.jsonl"


class CrashRecovery:
    """The vault's intent file: noted before each change, acted on by the next writer after a crash."""

    @property
    def intent_path(self) -> Path:
        return self.state_dir / INTENT_FILE

    def note_intent(self, rel: PurePosixPath, before: bytes | None) -> None:
        """Append to the intent file, before `rel` changes: its bytes before (None: it did not exist)."""
        lines = []
        if not self.intent_path.exists():
            lines.append({"head": self._intent_head})
        lines.append({"path": str(rel), "before": None if before is None else base64.b64encode(before).decode()})
        # Written before the change it describes; a killed process's writes survive it (no fsync:
        # thousands of paths in one gc would each pay for one, and the files' own writes are synced).
        jsonlines.append(self.intent_path, lines, mode=0o600, redacted=False)

    def recover_interrupted(self) -> list[PurePosixPath]:
        """Undo what a killed transaction changed but never committed (call with the lock held);
        returns the paths it had touched (their index rows may need refreshing)."""
        if not self.intent_path.exists():
            return []
        self.git.wait_for_git()  # the killed writer's `git commit` may still be running: let it land
        # Lines that are not records (the one being written when the process died, or damage) are
        # passed over: the file of a torn line had not been touched yet.
        records = jsonlines.read(self.intent_path)
        started_at = records[0].get("head") if records and "head" in records[0] else None
        befores = intended_befores(records)
        if started_at is not None and started_at == self.git.head_sha():  # the commit did not happen
            self.refuse_while_git_runs()
            for rel, before in befores.items():
                if self.linked_part(rel) is not None:
                    continue  # never act through a link: it may lead out of the vault
                if before is None:
                    (self.root / rel).unlink(missing_ok=True)
                else:
                    atomic_write(self.root / rel, before)
            if befores:
                self.git.unstage_paths([str(rel) for rel in befores])
        self.sweep_temp_files(befores)
        self.intent_path.unlink(missing_ok=True)
        self.forget_paths()
        touched = list(befores)
        if touched and self.on_recovered is not None:
            self.on_recovered(touched)
        return touched

    def sweep_temp_files(self, rels) -> None:
        """Remove the atomic writes' temporary files ('.<name>.XXXX.tmp', see atomic_write) of paths a
        killed transaction was writing: with the lock held no one else writes them, whatever their age."""
        for rel in rels:
            folder = self.root / rel.parent
            if self.linked_part(rel) is not None or not folder.is_dir():
                continue
            for tmp in folder.glob(f".{glob.escape(rel.name)}.*.tmp"):
                tmp.unlink(missing_ok=True)

    def refuse_while_git_runs(self) -> None:
        """A git still working in the repository after the wait may yet land the killed writer's
        commit: rolling the files back now would leave HEAD and the files disagreeing."""
        holders = self.git.lock_holders()
        if holders:
            raise VaultError(f"git process {', '.join(map(str, holders))} is still working in the vault's "
                             "repository (the commit of a memvault that was stopped?): try again when it ends")

    def commit_landed(self) -> bool:
        """Whether HEAD moved since the open transaction started (we hold the lock: its commit landed,
        whatever failed or was interrupted after). Unreadable HEAD counts as moved: files are kept."""
        try:
            return self.git.head_sha() != self._intent_head
        except Exception:  # noqa: BLE001 - keeping the files is the safe side
            return True


def intended_befores(records: list[dict]) -> dict[PurePosixPath, bytes | None]:
    """Each path an intent file notes, with its bytes before the transaction (None: it did not exist);
    the first note of a path holds the original. A note that is not a path a transaction writes
    (outside entries/ and the workspace files, '..') or whose bytes do not decode is passed over: never acted on."""
    befores: dict[PurePosixPath, bytes | None] = {}
    for record in records:
        path, before = record.get("path"), record.get("before")
        if not isinstance(path, str) or not (before is None or isinstance(before, str)):
            continue
        rel = PurePosixPath(path)
        written = layout.is_entry_path(rel) or layout.is_workspace_path(rel)
        if rel in befores or not written or ".." in rel.parts or rel.is_absolute():
            continue
        try:
            befores[rel] = None if before is None else base64.b64decode(before, validate=True)
        except ValueError:
            continue
    return befores
