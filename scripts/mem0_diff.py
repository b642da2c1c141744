"""Differential check: one mem0 user's scenario through mem0ai 2.2.1 and through memvault, every
difference in return shape, error and result printed.

    PYTHONPATH=. python scripts/mem0_diff.py            # needs `pip install mem0ai==2.2.1` (dev extra)

Offline by construction: mem0 runs on its local stores (Qdrant in a folder, SQLite history) with
memvault's own MiniLM embedder behind mem0's `EmbeddingBase`, and both sides get the same scripted
LLM answers (the facts each message yields); spaCy and fastembed are hidden so mem0 downloads no
model, and any HTTP request mem0 makes fails loudly. Ids are compared by the step that made them,
times and scores by presence only (they differ by nature).
Exit status: 0 when the run completed (differences are the output, not a failure), 1 if it crashed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported
sys.modules.setdefault("spacy", None)  # mem0 would download en_core_web_sm; it falls back without it
sys.modules.setdefault("fastembed", None)

# What the LLM extracts from each user message, for both sides (mem0 2.x asks once per add).
FACTS = {
    "I love pizza and I live in Lisbon": ["The user loves pizza", "The user lives in Lisbon"],
    "I moved to Porto last month": ["The user lives in Porto"],
    "Pizza is still my favourite": ["The user loves pizza"],
}
VOLATILE = {"created_at", "updated_at", "timestamp", "score", "score_details", "hash", "commit", "id"}


class Mem0ScriptedLLM:
    """mem0's LLM interface (`generate_response`), answering mem0 2.x's additive extraction prompt."""

    def generate_response(self, messages, response_format=None, **_kwargs):
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        new = prompt.rsplit("## New Messages", 1)[-1].split("## Observation Date", 1)[0]
        facts = next((facts for message, facts in FACTS.items() if message in new), [])
        return json.dumps({"memory": [{"text": fact} for fact in facts]})


class MemvaultScriptedLLM:
    """memvault's LLM protocol: the same facts for extraction, nothing decided for the rest (facts a
    reconciliation answer leaves out are added, as mem0 2.x's additive pipeline does)."""

    def complete(self, messages, json_schema=None):
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        latest = prompt.split("Latest user message (extract from this only):\n", 1)
        if len(latest) == 2:
            return json.dumps(FACTS.get(latest[1].strip().splitlines()[0], []))
        return "[]" if "Stored memories:" in prompt else "The user shares a few things."

    def stream(self, messages):
        yield self.complete(messages)


def mem0_memory(folder: Path):
    import httpx
    from mem0 import Memory
    from mem0.embeddings.base import EmbeddingBase

    from memvault.models.embedders import load_embedder

    def no_network(*_args, **_kwargs):
        raise AssertionError("mem0 tried to reach the network")

    httpx.Client.send = no_network  # type: ignore[method-assign]
    minilm = load_embedder("minilm")

    class MiniLM(EmbeddingBase):
        def embed(self, text, memory_action=None):
            return [float(x) for x in minilm.embed([text], kind="query" if memory_action == "search" else "passage")[0]]

    memory = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": str(folder / "qdrant"), "collection_name": "diff",
                                                          "embedding_model_dims": minilm.dims, "on_disk": True}},
        "llm": {"provider": "openai", "config": {"api_key": "offline"}},
        "embedder": {"provider": "openai", "config": {"api_key": "offline", "embedding_dims": minilm.dims}},
        "history_db_path": str(folder / "history.db"),
    })
    memory.embedding_model = MiniLM()
    memory.llm = Mem0ScriptedLLM()
    return memory


def memvault_memory(folder: Path):
    import memvault

    return memvault.Memory({"retrieval": {"score_threshold": 0.0}}, vault=folder / "vault", llm=MemvaultScriptedLLM())


Step = tuple[str, Callable[[Any, dict], Any]]


def scenario() -> list[Step]:
    """(name, call(memory, ids)): `ids` maps names to the ids earlier steps returned on that side."""

    def add_facts(m, ids):
        result = m.add("I love pizza and I live in Lisbon", user_id="alice", metadata={"topic": "life"})
        for n, item in enumerate(result["results"]):
            ids[f"fact{n}"] = item["id"]
        return result

    def add_given(m, ids):
        result = m.add([{"role": "user", "content": "Remember my dentist is Dr. Rui", "name": "alice"},
                        {"role": "assistant", "content": "Noted."}], user_id="alice", infer=False,
                       metadata={"topic": "health"}, expiration_date="2099-12-31")
        for n, item in enumerate(result["results"]):
            ids[f"given{n}"] = item["id"]
        return result

    return [
        ("add, LLM extraction", add_facts),
        ("add, infer=False with a name and expiration_date", add_given),
        ("add, a duplicate fact", lambda m, ids: m.add("Pizza is still my favourite", user_id="alice")),
        ("add, new fact", lambda m, ids: m.add("I moved to Porto last month", user_id="alice")),
        ("add without a scope", lambda m, ids: m.add("hello")),
        ("add of a number", lambda m, ids: m.add(123, user_id="alice")),
        ("add, bad memory_type", lambda m, ids: m.add("x", user_id="alice", memory_type="episodic")),
        ("search, 2.x filters", lambda m, ids: m.search("where does the user live", filters={"user_id": "alice"},
                                                        top_k=3)),
        ("search, 1.x user_id=", lambda m, ids: m.search("pizza", user_id="alice")),
        ("search, metadata filter",
         lambda m, ids: m.search("dentist", filters={"user_id": "alice", "topic": "health"})),
        ("search, empty query", lambda m, ids: m.search("  ", filters={"user_id": "alice"})),
        ("search, whitespace user id", lambda m, ids: m.search("x", filters={"user_id": "a b"})),
        ("get_all, 2.x filters", lambda m, ids: m.get_all(filters={"user_id": "alice"})),
        ("get_all, user_id in", lambda m, ids: m.get_all(filters={"user_id": {"in": ["alice", "bob"]}})),
        ("get_all, no scope", lambda m, ids: m.get_all(filters={"topic": "life"})),
        ("get", lambda m, ids: m.get(ids["given0"])),
        ("get, unknown id", lambda m, ids: m.get("7f1c2e3a-0000-4000-8000-000000000000")),
        ("update, text=", lambda m, ids: m.update(ids["given0"], text="My dentist is Dr. Rui Costa")),
        ("update, metadata only", lambda m, ids: m.update(ids["given0"], metadata={"checked": True})),
        ("update, nothing", lambda m, ids: m.update(ids["given0"])),
        ("update, unknown id", lambda m, ids: m.update("7f1c2e3a-0000-4000-8000-000000000000", text="x")),
        ("history", lambda m, ids: m.history(ids["given0"])),
        ("delete, unknown id", lambda m, ids: m.delete("7f1c2e3a-0000-4000-8000-000000000000")),
        ("delete", lambda m, ids: m.delete(ids["given1"])),
        ("history after delete", lambda m, ids: m.history(ids["given1"])),
        ("delete_all without a scope", lambda m, ids: m.delete_all()),
        ("delete_all", lambda m, ids: m.delete_all(user_id="alice")),
        ("get_all after delete_all", lambda m, ids: m.get_all(filters={"user_id": "alice"})),
        ("reset", lambda m, ids: m.reset()),
        ("history after reset", lambda m, ids: m.history(ids["fact0"])),
    ]


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return {"returned": call()}
    except Exception as exc:  # noqa: BLE001 - the point is to compare what each side raises
        kinds = [k.__name__ for k in type(exc).__mro__ if k.__name__ in ("ValueError", "Exception")]
        return {"raised": type(exc).__name__, "is": kinds[0] if kinds else "?", "message": str(exc)}


def normalise(value: Any, ids: dict[str, str]) -> Any:
    """Ids as the names of the steps that made them; times, scores and hashes as their presence."""
    names = {v: k for k, v in ids.items()}
    if isinstance(value, dict):
        return {k: ("<set>" if v is not None else None) if k in VOLATILE and k != "id" else
                names.get(v, "<id>") if k in ("id", "memory_id") else normalise(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, ids) for v in value]
    return value


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in mem0 ({a[k]!r:.80})" for k in a if k not in b]
        out += [f"{where}.{k}: only in memvault ({b[k]!r:.80})" for k in b if k not in a]
        for k in a:
            if k in b:
                out += differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} item(s) in mem0, {len(b)} in memvault: {a!r:.300} vs {b!r:.300}"]
        return [d for n, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{n}]")]
    return [] if a == b else [f"{where}: mem0 {a!r:.200} vs memvault {b!r:.200}"]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "mem0").mkdir()
        sides = {"mem0": mem0_memory(folder / "mem0"), "memvault": memvault_memory(folder)}
        ids: dict[str, dict[str, str]] = {"mem0": {}, "memvault": {}}
        total = 0
        for name, step in scenario():
            results = {side: normalise(outcome(lambda m=m, s=side: step(m, ids[s])), ids[side])
                       for side, m in sides.items()}
            if name.startswith("get_all"):  # a listing has no order in mem0 (its store's): compare as sets
                for result in results.values():
                    listed = result.get("returned", {}).get("results")
                    if isinstance(listed, list):
                        listed.sort(key=lambda item: str(item.get("memory")))
            found = differences(results["mem0"], results["memvault"])
            total += len(found)
            print(f"== {name}: {'same' if not found else f'{len(found)} difference(s)'}")
            for line in found:
                print(f"   {line}")
        sides["memvault"].close()
        sides["mem0"].close()
        sides["mem0"].vector_store.client.close()
        print(f"\n{total} difference(s) in {len(scenario())} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
