"""The library facade: one object that every surface (CLI, HTTP server, Python API, MCP) calls.

It opens what a call needs and nothing more: listing never loads a model, adding verbatim never
imports the LLM client. Writes go through the vault's transactions; the index follows them.
`Memvault` composes the services of `memvault/core/` in one place (its constructor) and hands each call
to the one service that makes it (docs/architecture.md, The facade).
"""

from __future__ import annotations

import functools
from pathlib import Path

from memvault.core.adding import Adding, AddResult
from memvault.core.base import Storage, clean_text, short
from memvault.core.browsing import Browsing
from memvault.core.erasing import Erasing, Erasure
from memvault.core.graph import Graphing
from memvault.core.importing import Importing
from memvault.core.maintenance import Maintenance
from memvault.core.reading import Listing, Reading, matches
from memvault.core.repairing import Repairs
from memvault.core.rules import Rules
from memvault.core.searching import RetrievalOverrides, Searching
from memvault.core.sessions import SessionEnd, Sessions
from memvault.core.shared import Sharing
from memvault.core.syncing import Syncing, clone_vault
from memvault.core.turns import TurnWriting
from memvault.core.workspace import Workspace
from memvault.errors import UsageError
from memvault.settings import Settings
from memvault.text import redact
from memvault.vault.write.store import Vault


def forward(method):
    """A facade method that hands the call to `method` of the service that defines it (its name,
    signature and docstring kept)."""
    service = method.__qualname__.split(".")[0]

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return getattr(self._services[service], method.__name__)(*args, **kwargs)

    return call


class Memvault:
    """A vault and what is derived from it, configured by one Settings object: the operations the doors
    call, each handed to the one service that makes it."""

    def __init__(self, settings: Settings, vault: Vault) -> None:
        # The one place the services are composed: each gets what it uses, nothing reaches another
        # through the facade.
        storage = self._storage = Storage(settings, vault)
        searching = Searching(storage)
        reading = Reading(storage, searching)
        adding = Adding(storage, reading, searching)
        browsing = Browsing(storage, reading, searching)
        rules = Rules(storage, reading, adding)
        turns = TurnWriting(storage)
        erasing = Erasing(storage, turns)
        workspace = Workspace(storage, searching)
        services = (storage, searching, reading, adding, browsing, rules, turns, erasing, workspace,
                    Graphing(storage, searching), Importing(storage, adding, browsing),
                    Maintenance(storage, reading, searching, adding, erasing),
                    Sessions(storage, adding, rules, workspace), Sharing(storage, searching, self, type(self).open),
                    Syncing(storage, rules, erasing), Repairs(storage))
        self._services = {type(service).__name__: service for service in services}
        self.settings, self.vault, self.keeper = settings, vault, storage.keeper

    @classmethod
    def open(cls, settings: Settings, create: bool = False, use_enclosing_repo: bool = False) -> Memvault:
        path = settings.vault.path
        if not str(path).strip():  # a bare Settings() (settings.load fills it): never the current folder
            raise UsageError("no vault path: set vault.path (settings.load gives the default under the data directory)")
        vault = Vault.init(path, use_enclosing_repo) if create else Vault.open(path)
        vault.max_file_bytes = settings.limits.max_file_bytes
        redact.configure(settings.redaction.enabled, settings.redaction.allow)
        return cls(settings, vault)

    @classmethod
    def clone(cls, url: str, settings: Settings) -> Memvault:
        """`git clone` a vault into `vault.path` (a new or empty folder) and make it this machine's:
        merge drivers registered, state folder made; the index is built on first use."""
        clone_vault(url, settings)
        memvault = cls.open(settings, create=True)
        memvault.ensure_merge_setup()
        return memvault

    def close(self) -> None:
        try:
            self._services["Sharing"].close_shared()
        finally:
            self._storage.close()

    # -- storage: where the vault is, the index, the models -----------------------------------------
    @property
    def root(self) -> Path:
        """The vault's folder."""
        return self._storage.root

    @property
    def state_dir(self) -> Path:
        """The vault's `.memvault/` (derived state, never committed), created if it is missing."""
        return self._storage.state_dir

    @property
    def on_progress(self):
        """callable(done, total) shown during long syncs (the CLI sets it)."""
        return self._storage.on_progress

    @on_progress.setter
    def on_progress(self, callback) -> None:
        self._storage.on_progress = callback

    @property
    def on_notice(self):
        """callable(message) for things a person should know (index rebuilt...)."""
        return self._storage.on_notice

    @on_notice.setter
    def on_notice(self, callback) -> None:
        self._storage.on_notice = callback

    @property
    def session_buffer(self):
        """The open sessions' state under `.memvault/session/` (core.session_buffer)."""
        return self._services["Sessions"].session_buffer

    embedder = forward(Storage.embedder)
    reranker = forward(Storage.reranker)
    open_index = forward(Storage.open_index)
    index = forward(Storage.index)
    reindex = forward(Storage.reindex)
    resync_paths = forward(Storage.resync_paths)
    watch = forward(Storage.watch)
    index_summary = forward(Storage.index_summary)
    has_facts_from = forward(Storage.has_facts_from)
    clean_text = forward(Storage.clean_text)
    llm = forward(Storage.llm)
    # searching
    resolve_as_of = forward(Searching.resolve_as_of)
    index_as_of = forward(Searching.index_as_of)
    holding_past = forward(Searching.holding_past)
    search = forward(Searching.search)
    select = forward(Searching.select)
    entities = forward(Searching.entities)
    # graphing
    graph = forward(Graphing.graph)
    relations = forward(Graphing.relations)
    # reading
    get = forward(Reading.get)
    get_live = forward(Reading.get_live)
    list = forward(Reading.list)
    walk_entries = forward(Reading.walk_entries)
    stored_ids_and_paths = forward(Reading.stored_ids_and_paths)
    entry_defaults = forward(Reading.entry_defaults)
    history = forward(Reading.history)
    log = forward(Reading.log)
    # adding
    refusals = forward(Adding.refusals)
    add_entries = forward(Adding.add_entries)
    add_as_given = forward(Adding.add_as_given)
    add_verbatim = forward(Adding.add_verbatim)
    add = forward(Adding.add)
    extraction_prompt = forward(Adding.extraction_prompt)
    plan_turn = forward(Adding.plan_turn)
    live_entry = forward(Adding.live_entry)
    update = forward(Adding.update)
    delete = forward(Adding.delete)
    # browsing
    overview = forward(Browsing.overview)
    rows_page = forward(Browsing.rows_page)
    timeline = forward(Browsing.timeline)
    summary = forward(Browsing.summary)
    conversation_named = forward(Browsing.conversation_named)
    conversations = forward(Browsing.conversations)
    entry_file = forward(Browsing.entry_file)
    entry_as_of = forward(Browsing.entry_as_of)
    entries_as_of = forward(Browsing.entries_as_of)
    changes_between = forward(Browsing.changes_between)
    restore = forward(Browsing.restore)
    commits = forward(Browsing.commits)
    journal_days = forward(Browsing.journal_days)
    require_scopes = forward(Browsing.require_scopes)
    # rules
    rules = forward(Rules.rules)
    active_rules = forward(Rules.active_rules)
    add_rule = forward(Rules.add_rule)
    remove_rule = forward(Rules.remove_rule)
    # importing
    import_entries = forward(Importing.import_entries)
    # turns
    write_turns = forward(TurnWriting.write_turns)
    commit_turns = forward(TurnWriting.commit_turns)
    commit_leftover_turns = forward(TurnWriting.commit_leftover_turns)
    # erasing
    erase = forward(Erasing.erase)
    finish_interrupted_erase = forward(Erasing.finish_interrupted_erase)
    index_rows = forward(Erasing.index_rows)
    # maintenance
    gc = forward(Maintenance.gc)
    repository = forward(Maintenance.repository)
    push = forward(Maintenance.push)
    pull = forward(Maintenance.pull)
    stray_files = forward(Maintenance.stray_files)
    delete_scope = forward(Maintenance.delete_scope)
    reset = forward(Maintenance.reset)
    # workspace
    ensure_core = forward(Workspace.ensure_core)
    read_core = forward(Workspace.read_core)
    update_core = forward(Workspace.update_core)
    restore_workspace = forward(Workspace.restore_workspace)
    workspace_texts = forward(Workspace.workspace_texts)
    core_context = forward(Workspace.core_context)
    log_day = forward(Workspace.log_day)
    journal = forward(Workspace.journal)
    scratchpad = forward(Workspace.scratchpad)
    # sessions
    policy_add = forward(Sessions.policy_add)
    open_sessions = forward(Sessions.open_sessions)
    end_sessions = forward(Sessions.end_sessions)
    end_session = forward(Sessions.end_session)
    latest_session = forward(Sessions.latest_session)
    # sharing
    search_together = forward(Sharing.search_together)
    target = forward(Sharing.target)
    holder = forward(Sharing.holder)
    sync_shared = forward(Sharing.sync_shared)
    has_remote = forward(Sharing.has_remote)
    # syncing
    ensure_merge_setup = forward(Syncing.ensure_merge_setup)
    sync = forward(Syncing.sync)
    finish_adoption = forward(Syncing.finish_adoption)
    caught_up = forward(Syncing.caught_up)
    add_remote = forward(Syncing.add_remote)
    resolve_kept_both = forward(Syncing.resolve_kept_both)
    # repairs
    remove_stale_git_locks = forward(Repairs.remove_stale_git_locks)
    finish_interrupted_write = forward(Repairs.finish_interrupted_write)
    remove_temp_files = forward(Repairs.remove_temp_files)
    commit_left_files = forward(Repairs.commit_left_files)
    drop_wrong_triples = forward(Repairs.drop_wrong_triples)
    requeue_curations = forward(Repairs.requeue_curations)


__all__ = ["AddResult", "Erasure", "Listing", "Memvault", "RetrievalOverrides", "SessionEnd", "clean_text", "matches",
           "short"]
