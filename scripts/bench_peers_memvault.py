"""memvault's side of scripts/bench_peers.py (run with memvault's own Python; see bench_peers_runner.py).

Defaults throughout: the vault's own settings, the verbatim path (Memvault.add_entries, one commit per
conversation, as scripts/bench_locomo.py stores LoCoMo; the index is caught up inside the timed add),
Memvault.add_verbatim for the single add, and Memvault.search (dense + BM25, fused) with top_k set.
Variant "dense" (the control row): the lexical lane off (retrieval.lexical_weight 0), all else as is.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_locomo import GIT_ENV, own_repository
from bench_peers_runner import serve, variant

from memvault import settings
from memvault.core import Memvault
from memvault.vault.format.entry import Entry


def entry(memory: dict[str, Any]) -> Entry:
    """A memory as bench_locomo stores a turn: role user, its time, its dia_id, its speaker."""
    return Entry(text=memory["text"], role="user", conversation_id=memory["conversation"],
                 created_at=datetime.fromisoformat(memory["created_at"]),
                 metadata={"dia_id": memory["dia_id"]} if memory["dia_id"] else {}, actor_id=memory["speaker"])


class MemvaultStore:
    def __init__(self, folder: Path, fresh: bool) -> None:
        os.environ.update(GIT_ENV)
        if fresh:
            own_repository(folder)
        overrides = {"vault.path": str(folder)}
        self.notes: list[str] = []
        if variant() == "dense":
            overrides["retrieval.lexical_weight"] = "0"
            self.notes = ["the control: memvault's lexical lane off (retrieval.lexical_weight 0)"]
        self.memvault = Memvault.open(settings.load(None, overrides), create=fresh)

    def add_bulk(self, conversation: str, memories: list[dict[str, Any]]) -> None:
        self.memvault.add_entries([entry(m) for m in memories], f"bench: {len(memories)} memories of {conversation}")
        self.memvault.reindex()  # searchable before the clock stops (a no-op when the add indexed them)

    def add_one(self, memory: dict[str, Any]) -> None:
        self.memvault.add_verbatim(memory["text"], memory["conversation"], role="user")

    def search(self, question: dict[str, Any], top_k: int) -> list[str | None]:
        hits = self.memvault.search(question["text"], question["conversation"], top_k=top_k)
        return [hit.metadata.get("dia_id") for hit in hits]


if __name__ == "__main__":
    serve(MemvaultStore)
