"""The graph of the facts' triples: an entity's neighbourhood, and mem0's `relations` for a query."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memvault.core.caller import walls
from memvault.errors import UsageError
from memvault.vault.format import layout

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.searching import Searching
    from memvault.vault.git.timetravel import PastCommit

MAX_RELATIONS = 20  # relations returned with one search: a neighbourhood, not the whole graph


class Graphing:
    """Reads of the graph the index derives from triples (docs/architecture.md, Graph)."""

    def __init__(self, storage: Storage, searching: Searching) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.searching = searching

    def _graph_query(self, index, conversation: str | None, scopes: dict[str, Any] | None,
                     filters: dict | None = None, show_expired: bool = False):
        from memvault.index.graph import GraphQuery
        from memvault.retrieve.filters import and_where, compile_filter, scope_where, unexpired
        from memvault.retrieve.search import conversations_for

        if conversation is not None:
            layout.check_conversation_id(conversation)
        where, params = and_where(scope_where(conversations_for(conversation), walls(scopes)),
                                  compile_filter(unexpired(filters, show_expired)))
        return GraphQuery(index.conn, where, params)

    def graph(self, entity: str, depth: int = 1, conversation: str | None = None,
              scopes: dict[str, Any] | None = None, as_of: str | PastCommit | None = None):
        """The entity `entity` names (aliases merged) and the relations within `depth` hops of it,
        among the facts of `conversation` (and `global`; all when None) and these scopes; `as_of`:
        among the facts of the vault as it was then."""
        from memvault.index.graph import MAX_DEPTH, entity_key

        if not isinstance(entity, str) or not entity_key(entity):
            raise UsageError("the entity name is empty")
        if not 1 <= int(depth) <= MAX_DEPTH:
            raise UsageError(f"depth must be between 1 and {MAX_DEPTH}, got {depth}")
        with self.searching.index_as_of(as_of, ranking=False) as (index, _):
            return self._graph_query(index, conversation, scopes).neighbourhood(entity, int(depth))

    def relations(self, query: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
                  filters: dict | None = None, limit: int = MAX_RELATIONS,
                  as_of: str | PastCommit | None = None, show_expired: bool = False) -> list:
        """mem0's `relations` for a search: the relations of the entities `query` names, among the facts
        a search with the same conversation, scopes and filters would see (expired ones only with
        `show_expired`). [] when the graph is off.
        `as_of`: from the vault as it was then (the past's own index, as `search` reads it)."""
        if not self.settings.graph.enabled or not isinstance(query, str) or not query.strip():
            return []
        with self.searching.index_as_of(as_of, ranking=False) as (index, _):  # the past's relations, never today's
            return self._graph_query(index, conversation, scopes, filters, show_expired).for_query(query, limit)
