"""mem0's side of scripts/bench_peers.py (run with .bench/peers/mem0's Python; see bench_peers_runner.py).

mem0ai 2.2.1 as `pip install mem0ai` leaves it: its default vector store (Qdrant in local mode, on a
path: here inside the store folder instead of /tmp/qdrant), its SQLite history (likewise moved), its
search with its defaults (threshold 0.1) but top_k 10. The one change: memvault's MiniLM-L6 int8
embedder stands behind mem0's EmbeddingBase, where mem0 would call OpenAI's text-embedding-3-small.
Variant "chroma": mem0's own Chroma store (`vector_store.provider "chroma"` on a path) instead of
Qdrant, everything else the same: Chroma applies the user_id filter inside its query, where Qdrant's
local mode checks it point by point in Python. Each conversation is a user_id, stored with one
`add(messages, infer=False)` (one memory per message, its speaker as the message's name). mem0 keeps
no metadata per message of one call, so a hit is mapped back to its dia_id by its text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench_peers_runner import dia_ids_by_text, minilm, serve, variant, workload_of

DIMS = 384


def embedder():
    """memvault's default model as a mem0 embedder ("search" embeds a query, anything else a passage)."""
    from mem0.embeddings.base import EmbeddingBase

    class MiniLM(EmbeddingBase):
        def __init__(self) -> None:
            super().__init__()
            self.model = minilm()

        def embed(self, text, memory_action=None):
            return self.embed_batch([text], memory_action)[0]

        def embed_batch(self, texts, memory_action="add"):
            kind = "query" if memory_action == "search" else "passage"
            return self.model.embed(list(texts), kind=kind).tolist()

    return MiniLM()


def config(folder: Path) -> dict[str, Any]:
    if variant() == "chroma":
        store = {"provider": "chroma", "config": {"path": str(folder / "chroma"), "collection_name": "mem0"}}
    else:
        store = {"provider": "qdrant", "config": {"path": str(folder / "qdrant"), "embedding_model_dims": DIMS}}
    return {"vector_store": store, "history_db_path": str(folder / "history.db")}


class Mem0Store:
    def __init__(self, folder: Path, fresh: bool) -> None:
        from mem0 import Memory

        folder.mkdir(parents=True, exist_ok=True)
        self.memory = Memory.from_config(config(folder))
        self.memory.embedding_model = embedder()
        self.dia = dia_ids_by_text(workload_of(folder)["memories"])
        self.notes = ["memvault's MiniLM-L6 int8 behind mem0's EmbeddingBase (its default is OpenAI's API)",
                      f"vector store: {config(folder)['vector_store']['provider']} on a local path",
                      "semantic search only: the plain install has no fastembed (BM25) nor spaCy (entity boost)"]

    def add_bulk(self, conversation: str, memories: list[dict[str, Any]]) -> None:
        messages = [{"role": "user", "content": m["text"], **({"name": m["speaker"]} if m["speaker"] else {})}
                    for m in memories]
        self.memory.add(messages, user_id=conversation, infer=False)

    def add_one(self, memory: dict[str, Any]) -> None:
        self.memory.add(memory["text"], user_id=memory["conversation"], infer=False)

    def search(self, question: dict[str, Any], top_k: int) -> list[str | None]:
        hits = self.memory.search(question["text"], top_k=top_k, filters={"user_id": question["conversation"]})
        return [self.dia.get((question["conversation"], hit["memory"])) for hit in hits["results"]]


def defaults(_open, folder: Path, _workload) -> dict[str, str]:
    """Whether mem0's default configuration can run offline, from the installed mem0's own defaults."""
    from mem0.configs.base import MemoryConfig
    from mem0.utils.factory import EmbedderFactory

    default = MemoryConfig()
    try:  # the provider's class fills in its default model; building it calls nothing
        model = EmbedderFactory.create(default.embedder.provider, default.embedder.config, None).config.model
    except Exception as error:  # noqa: BLE001 - a provider that cannot even be built says why
        model = f"cannot be built: {error}".splitlines()[0]
    if default.embedder.provider in ("openai", "azure_openai", "gemini", "vertexai", "together", "aws_bedrock"):
        why = (f"cannot run offline: its embedder is {default.embedder.provider} ({model}), a remote API; "
               f"its LLM ({default.llm.provider}) is not needed with infer=False")
    else:
        why = f"its embedder is {default.embedder.provider} ({model}): not measured by this script"
    return {"why": why, "vector_store": default.vector_store.provider}


if __name__ == "__main__":
    serve(Mem0Store, {"defaults": defaults})
