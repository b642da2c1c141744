"""Chat turns written at once and committed in batches (the proxy's and chat's fast path)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from memvault.errors import MemvaultError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.write.relayout import finish_interrupted
from memvault.vault.write.transaction import Change

if TYPE_CHECKING:
    from memvault.core.base import Storage


class TurnWriting:
    """Turn files written now, committed later; leftovers of a hard stop committed at the next start."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper

    def write_turns(self, entries: list[Entry]) -> list[Change]:
        """Write chat turns' files now, durable but not committed: a client need not wait for git.
        `commit_turns` commits them later (many requests' turns in one commit); should the process
        stop before that, `commit_leftover_turns` at the next start does."""
        return self.vault.write_new(entries)

    def commit_turns(self, written: list[Change], subject: str, conversation: str | None = None) -> None:
        """Commit turn files `write_turns` wrote (any number of batches at once), then index them."""
        self.keeper.record(self.vault.commit_written(written, subject, "chat", conversation))

    def commit_leftover_turns(self, status: list[tuple[str, str]] | None = None) -> int:
        """Commit turn files a hard stop left written but uncommitted (untracked, or staged new);
        returns how many. Temporary files of atomic writes are never turns: old ones are removed.
        `status`: git's, when the caller has just read it (a million files take seconds)."""
        self.vault.remove_temp_files()
        finish_interrupted(self.vault)  # a killed move into day folders: its files are no new turns
        written = []
        for code, path in self.vault.git.status() if status is None else status:
            rel = PurePosixPath(path)
            if code != "??" and code[0] != "A":
                continue  # tracked already: a person's edit or removal is theirs to commit
            if not layout.is_entry_path(rel) or "turns" not in rel.parts or layout.is_deleted_path(rel):
                continue
            try:
                written.append(Change(rel, None, self.vault.read(rel)))
            except MemvaultError:
                continue  # not a readable entry: doctor reports it, we leave it alone
        if written:
            self.commit_turns(written, f"memvault serve: {len(written)} turn file(s) written before a stop, "
                              "committed now")
        return len(written)
