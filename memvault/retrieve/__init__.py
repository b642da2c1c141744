"""Retrieval: mem0 filters → SQL, candidate lanes, rank fusion, rerank, threshold, recency, MMR."""

from memvault.retrieve.filters import compile_filter, scope_where
from memvault.retrieve.search import Hit, conversations_for, search

__all__ = ["Hit", "compile_filter", "conversations_for", "scope_where", "search"]
