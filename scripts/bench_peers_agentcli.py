"""agent-cli's side of scripts/bench_peers.py (run with .bench/peers/agentcli's Python; see bench_peers_runner.py).

agent-cli 0.112.0's memory as its proxy runs it: `MemoryClient` (its start-up: files, git repository,
Chroma collection, and re-indexing every file into Chroma), turns written by `persist_entries` (a
markdown file each, upserted into Chroma) and committed with its `commit_changes` once per batch (the
proxy commits after each turn's processing: the single add does), and `MemoryClient.search` (dense
candidates, rerank, recency, MMR) with top_k 10. Two changes, both because this run is offline:
- memvault's MiniLM-L6 int8 computes the embeddings, as Chroma's embedding function of the collection
  (agent-cli's hook: it builds an OpenAI-compatible one from --embedding-base-url/--embedding-model);
- agent-cli downloads its cross-encoder (Xenova/ms-marco-MiniLM-L-6-v2) from a model hub at start-up,
  which cannot happen here: each candidate's own dense similarity (1 - Chroma's distance) stands in
  for the cross-encoder's score; agent-cli min-max normalises either before blending with recency.
Its hits carry their text but no metadata of ours: they are mapped back to dia_ids by their text.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_peers_runner import dia_ids_by_text, minilm, serve, workload_of

NAMESPACE = uuid.UUID("5b0f0c4e-8f0e-4e53-9a57-0e8c0d6f7a31")  # turn ids derived from their place


def use_minilm_in_chroma() -> None:
    """Chroma's OpenAI embedding function (what agent-cli's init_collection builds) becomes MiniLM."""
    from chromadb.api.types import EmbeddingFunction
    from chromadb.utils import embedding_functions

    model = minilm()

    class MiniLMFunction(EmbeddingFunction):
        def __init__(self, *_args, **_kwargs) -> None:
            pass

        def __call__(self, input):  # noqa: A002 - Chroma's name for it
            return list(model.embed(list(input), kind="passage"))

        def embed_query(self, input):  # noqa: A002
            return list(model.embed(list(input), kind="query"))

        @staticmethod
        def name() -> str:
            return "memvault-minilm-l6-int8"

        def get_config(self) -> dict[str, Any]:
            return {}

        @staticmethod
        def build_from_config(_config: dict[str, Any]) -> MiniLMFunction:
            return MiniLMFunction()

    embedding_functions.OpenAIEmbeddingFunction = MiniLMFunction


class DenseSimilarity:
    """Stands in for agent-cli's cross-encoder: a candidate's score is its dense similarity to the
    query, as Chroma measured it for the candidate list (recorded by the wrapped query_memories)."""

    def __init__(self) -> None:
        self.similarity: dict[str, float] = {}

    def recording(self, query_memories):
        def wrapped(*args, **kwargs):
            records = query_memories(*args, **kwargs)
            self.similarity.update({r.content: 1.0 - (r.distance or 0.0) for r in records})
            return records

        return wrapped

    def predict(self, pairs, batch_size: int = 32) -> list[float]:  # noqa: ARG002 - the cross-encoder's shape
        return [self.similarity.get(document, 0.0) for _query, document in pairs]


class AgentCliStore:
    def __init__(self, folder: Path, fresh: bool) -> None:  # noqa: ARG002 - MemoryClient opens either
        import agent_cli.memory._retrieval as retrieval
        import agent_cli.memory.client as client_module
        from agent_cli.memory.client import MemoryClient

        use_minilm_in_chroma()
        reranker = DenseSimilarity()
        retrieval.query_memories = reranker.recording(retrieval.query_memories)
        client_module.get_reranker_model = lambda *_args, **_kwargs: reranker
        self.loop = asyncio.new_event_loop()
        # No LLM is reached: summaries are off, and nothing here extracts facts.
        self.client = MemoryClient(folder, openai_base_url="http://127.0.0.1:9/v1", enable_summarization=False,
                                   start_watcher=False, enable_git_versioning=True)
        self.dia = dia_ids_by_text(workload_of(folder)["memories"])
        self.notes = ["memvault's MiniLM-L6 int8 as the Chroma collection's embedding function",
                      "its cross-encoder cannot be downloaded offline: the candidates' dense similarity stands in",
                      "its start-up (MemoryClient) embeds every memory file into Chroma again: the cold start row"]

    def persist(self, conversation: str, memories: list[dict[str, Any]], message: str) -> None:
        from agent_cli.memory._git import commit_changes
        from agent_cli.memory._persistence import persist_entries
        from agent_cli.memory.entities import Turn

        turns = [Turn(id=str(uuid.uuid5(NAMESPACE, f"{conversation}/{m['dia_id'] or m['text']}")),
                      conversation_id=conversation, role="user", content=m["text"],
                      created_at=datetime.fromisoformat(m["created_at"])) for m in memories]
        persist_entries(self.client.collection, memory_root=self.client.memory_path, conversation_id=conversation,
                        entries=turns)
        self.loop.run_until_complete(commit_changes(self.client.memory_path, message))

    def add_bulk(self, conversation: str, memories: list[dict[str, Any]]) -> None:
        self.persist(conversation, memories, f"bench: {len(memories)} memories of {conversation}")

    def add_one(self, memory: dict[str, Any]) -> None:
        self.persist(memory["conversation"], [memory], "bench: one memory")

    def search(self, question: dict[str, Any], top_k: int) -> list[str | None]:
        found = self.loop.run_until_complete(self.client.search(question["text"], question["conversation"], top_k))
        return [self.dia.get((question["conversation"], entry.content)) for entry in found.entries]


if __name__ == "__main__":
    serve(AgentCliStore)
