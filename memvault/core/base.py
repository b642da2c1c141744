"""Storage, the service every other one stands on: settings, the vault, the index keeper, the one
write context, and the models, opened on first need."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from memvault.errors import UsageError
from memvault.index.keeper import IndexKeeper
from memvault.settings import Settings
from memvault.vault.format.fields import check_text
from memvault.vault.write.store import Vault
from memvault.vault.write.transaction import Transaction


def clean_text(text: str, max_chars: int | None = None) -> str:
    text = (text or "").strip()
    if not text:
        raise UsageError("the memory text is empty")
    if "\x00" in text:
        raise UsageError("the memory text contains a NUL character")
    return check_text(text, max_chars=max_chars)  # no lone surrogates, at most limits.max_text_chars



def short(text: str, width: int = 50) -> str:
    """One line of at most `width` characters, for commit subjects."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def add_subject(entries: list) -> str:
    """The commit subject of memories stored as given: the one memory, or how many."""
    if len(entries) == 1:
        return f"memvault add: {short(entries[0].text)} [{entries[0].id[:8]}]"
    return f"memvault add: {len(entries)} memories"


class Storage:
    """A vault and what is derived from it, configured by one Settings object: the vault, the index's
    keeper, the one write context (`write`, core's own: never a door's) and the models."""

    def __init__(self, settings: Settings, vault: Vault) -> None:
        self.settings = settings
        self.vault = vault
        self.keeper = IndexKeeper(vault, self.embedder)
        vault.on_recovered = self.keeper.journal_paths  # files a crashed write left and recovery put back
        vault.on_committing = self.keeper.journal_paths  # a kill between a commit and its indexing: caught up

    def close(self) -> None:
        try:
            self.keeper.close()
        finally:
            self.vault.close()

    @contextmanager
    def write(self, operation: str, subject: str, conversation: str | None = None) -> Iterator[Transaction]:
        """The one way a change reaches the vault: a transaction (one commit with `subject` and the
        `Memvault-Operation` trailer; everything undone on an error), then the index told what it
        touched. The transaction's `commit_sha` names the commit once the block is left."""
        with self.vault.transaction(operation, subject, conversation) as tx:
            yield tx
        self.keeper.record(tx.changes)

    # -- where the vault is (for surfaces, which never hold the vault itself) ----------------------
    @property
    def root(self) -> Path:
        """The vault's folder."""
        return self.vault.root

    @property
    def state_dir(self) -> Path:
        """The vault's `.memvault/` (derived state, never committed), created if it is missing."""
        self.vault.ensure_state_dir()
        return self.vault.state_dir

    # -- models and index (loaded on first need) ----------------------------------------------------
    def embedder(self):
        """The model, shared by the process; concurrent searches' queries share its calls."""
        from memvault.models.query_batcher import shared_embedder

        return shared_embedder(self.settings.embedder)

    def reranker(self):
        from memvault.models.reranker import load_reranker

        return load_reranker(self.settings.retrieval.reranker)

    @property
    def on_progress(self):
        """callable(done, total) shown during long syncs (the CLI sets it)."""
        return self.keeper.on_progress

    @on_progress.setter
    def on_progress(self, callback) -> None:
        self.keeper.on_progress = callback

    @property
    def on_notice(self):
        """callable(message) for things a person should know (index rebuilt...)."""
        return self.keeper.on_notice

    @on_notice.setter
    def on_notice(self, callback) -> None:
        self.keeper.on_notice = callback

    def open_index(self):
        """The index file, opened (created or repaired if need be) but not yet caught up."""
        return self.keeper.open()

    def index(self):
        """The index, caught up with every write (see memvault.index.keeper)."""
        return self.keeper.current()

    def reindex(self, full: bool = False, wait: float | None = None):
        """Bring the index in step with the files, embedding only what changed (`full`: everything).
        `wait`: how long to wait for the vault's lock (LockBusyError after it; default: the usual)."""
        return self.keeper.reindex(full, wait)

    def resync_paths(self, paths: Collection[PurePosixPath], skip: Collection[str] = ()) -> None:
        """Catch the index up with these files after they changed on disk (a watcher's report);
        `skip`: paths whose indexing is under way elsewhere (turns written and not yet committed)."""
        self.keeper.resync(paths, skip)

    def watch(self, on_change: Callable[[frozenset[PurePosixPath]], bool | None], stop_event=None, ready=None,
              vouch: bool = False) -> None:
        """Call `on_change(paths)` after each burst of file changes in the vault, until `stop_event`
        (`vouch`: see memvault.index.watch.watch)."""
        from memvault.index.watch import watch

        watch(self.vault, on_change, stop_event=stop_event, ready=ready, vouch=vouch)

    def index_summary(self) -> dict[str, Any]:
        """The model the index was built with, and how many entries are searchable."""
        with self.keeper.caught_up() as index:
            return {"embedder": index.identity, "size": index.count()}

    def has_facts_from(self, turn_id: str) -> bool:
        """True when the index holds a fact taken from this turn (its curation was committed)."""
        with self.keeper.caught_up() as index:
            return index.count("e.role = 'memory' AND e.source = ?", (turn_id,)) > 0

    def clean_text(self, text: str) -> str:
        return clean_text(text, self.settings.limits.max_text_chars)

    def llm(self):
        """The configured LLM client, or None when no model is configured."""
        if not self.settings.llm.model:
            return None
        from memvault.curate.llm import LLMClient

        return LLMClient(self.settings.llm)
