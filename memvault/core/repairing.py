"""Repairs that cannot lose anything (what `memvault doctor --fix` applies), and the two rules they
rest on: which uncommitted files are safe to commit, and which facts carry a triple their text does
not say. `doctor` finds the problems by reading the vault; it mends them only through these methods.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import EntryFormatError
from memvault.vault.format import layout

if TYPE_CHECKING:
    from memvault.core.base import Storage


def uncommitted_entry_files(vault) -> tuple[list[str], dict[str, str]]:
    """Uncommitted vault paths split into (safe to commit, {left alone: why}): entry files that parse,
    and a deleted file only when its memory lives on in another file (moved, or tombstoned)."""
    safe: list[str] = []
    left: dict[str, str] = {}
    for path in vault.git.uncommitted():
        rel = PurePosixPath(path)
        if not layout.is_entry_path(rel):
            left[path] = "not an entry file"
        elif (vault.root / rel).exists():
            try:
                vault.read(rel)
                safe.append(path)
            except EntryFormatError as exc:
                left[path] = f"does not parse: {exc.reason}"
        else:
            memory_id = layout.id_from_filename(rel.name)
            if memory_id and vault.path_of(memory_id) is not None:
                safe.append(path)  # moved or tombstoned: the memory is still in the vault
            else:
                left[path] = "deleted by hand"
    return safe, left


def wrong_triples(vault) -> list[tuple[str, Any, str]]:
    """(path, fact, why) of each live fact whose triple its text does not say."""
    from memvault.text.wording import triple_problem

    found = []
    for rel, item in vault.iter_entries():
        if not isinstance(item, EntryFormatError) and item.role == "memory" and item.triple:
            problem = triple_problem(item.text, item.triple)
            if problem:
                found.append((str(rel), item, problem))
    return found


class Repairs:
    """The safe fixes, each under the vault's lock."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper

    def remove_stale_git_locks(self) -> list[Path]:
        """Git lock files no running git holds (a killed git left them)."""
        with self.vault.lock():
            return self.vault.git.remove_stale_locks()

    def finish_interrupted_write(self) -> list[PurePosixPath]:
        """Undo what a transaction a crash cut short left uncommitted; the paths it had touched."""
        with self.vault.lock():
            return self.vault.recover_interrupted()

    def remove_temp_files(self) -> list[Path]:
        """Atomic writes' temporary files a crash left (younger ones may belong to a write under way)."""
        return self.vault.remove_temp_files()

    def commit_left_files(self, paths: list[str]) -> list[str]:
        """Commit those of `paths` that are still safe to commit (checked again under the lock: files
        may have moved on), as they are on disk: one commit, nothing rewritten. Returns what it committed.
        Not a `write`: a transaction commits what it writes, and these files are written already."""
        from memvault.vault.git.log import format_message

        with self.vault.lock():
            self.vault.git.check_state()
            safe, _ = uncommitted_entry_files(self.vault)
            chosen = [path for path in paths if path in safe]
            subject = f"memvault doctor: commit {len(chosen)} entry file(s) left uncommitted"
            if chosen and self.vault.git.commit(chosen, format_message(subject, "doctor", None, [])):
                return chosen
        return []

    def drop_wrong_triples(self) -> list[str]:
        """Rewrite the facts whose triple contradicts their text without it (one commit: the text, the
        truth, is kept); the index follows. Returns their paths."""
        with self.vault.lock():
            wrong = wrong_triples(self.vault)  # again under the lock
        if wrong:
            subject = f"memvault doctor: drop {len(wrong)} triple(s) their facts do not say"
            with self.storage.write("doctor", subject) as tx:
                for _, fact, _ in wrong:
                    tx.write(fact.replace(subject=None, predicate=None, object=None), event="UPDATE")
        return [rel for rel, _, _ in wrong]

    def requeue_curations(self, turn_ids: list[str]) -> None:
        """Queue turns whose curation failed again and again (poison) for the next `serve` to try."""
        from memvault.curate.queue import CurationQueue

        CurationQueue(self.vault.state_dir).retry(turn_ids)
