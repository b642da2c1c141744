"""The library facade: one object that every surface (CLI, HTTP server, Python API, MCP) calls.

It opens what a call needs and nothing more: listing never loads a model, adding verbatim never
imports the LLM client. Writes go through the vault's transactions; the index follows them.
`Memvault` is assembled from one module per job (docs/architecture.md, The facade).
"""

from __future__ import annotations

from memvault.core.adding import Adding, AddResult
from memvault.core.base import MemvaultBase, clean_text, short
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
from memvault.core.syncing import Syncing
from memvault.core.turns import TurnWriting
from memvault.core.workspace import Workspace


class Memvault(Adding, TurnWriting, Searching, Graphing, Rules, Reading, Maintenance, Sessions, Workspace,
               Browsing, Erasing, Syncing, Sharing, Repairs, Importing, MemvaultBase):
    """A vault and what is derived from it, configured by one Settings object."""


__all__ = ["AddResult", "Erasure", "Listing", "Memvault", "RetrievalOverrides", "SessionEnd", "clean_text", "matches",
           "short"]
