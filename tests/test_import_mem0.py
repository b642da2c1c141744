"""`memvault import` of a mem0 store made by mem0ai itself (2.2.1, its own code: local Qdrant, SQLite
history, `infer=False` so no LLM is asked; a word-length embedder, as mem0 is offline here)."""

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from tests.support.cli import Cli

pytest.importorskip("mem0", reason="mem0ai is a dev dependency (pyproject.toml)")

MAKE_STORE = textwrap.dedent('''
    import json, sys
    from mem0 import Memory

    class WordLengths:  # mem0 calls embed(text, memory_action); no network
        def embed(self, text, memory_action=None):
            vector = [0.0] * 8
            for word in text.lower().split():
                vector[len(word) % 8] += 1.0
            return vector

    out = sys.argv[1]
    m = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": out + "/qdrant", "collection_name": "t",
                                                           "embedding_model_dims": 8, "on_disk": True}},
        "history_db_path": out + "/history.db"})
    m.embedding_model = WordLengths()
    tea = m.add("Alice prefers green tea", user_id="alice", metadata={"topic": "drinks",
                "created_at": "2024-05-01T10:00:00.123456+00:00"}, infer=False)["results"][0]["id"]
    home = m.add("Alice lives in Porto", user_id="alice", agent_id="helper", infer=False)["results"][0]["id"]
    runs = m.add("Bob runs every morning", user_id="bob", run_id="r1", infer=False)["results"][0]["id"]
    m.update(home, "Alice lives in Lisbon")
    m.delete(runs)
    dump = {"results": [memory for user in ("alice", "bob")
                        for memory in m.get_all(filters={"user_id": user})["results"]]}
    with open(out + "/dump.json", "w") as handle:
        json.dump(dump, handle)
    print(json.dumps({"tea": tea, "home": home, "runs": runs}))
''')


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("mem0")
    env = {**os.environ, "MEM0_TELEMETRY": "False", "OPENAI_API_KEY": "sk-not-used", "HOME": str(out)}
    done = subprocess.run([sys.executable, "-c", MAKE_STORE, str(out)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def test_history_db_and_dump_together_keep_ids_scopes_metadata_times_and_deletions(store, cli):
    out, ids = store
    report = cli.ok("import", str(out / "history.db"), str(out / "dump.json"), "--json").json()
    assert (report["format"], report["entries"], report["notes"]) == ("mem0", 3, [])
    rows = {row["id"]: row for row in cli.ok("list", "--deleted", "--json").json()}
    assert set(rows) == set(ids.values())
    tea = rows[ids["tea"]]
    assert (tea["text"], tea["user_id"], tea["conversation_id"]) == ("Alice prefers green tea", "alice", "user-alice")
    assert tea["created_at"] == "2024-05-01T10:00:00.123+00:00"  # mem0 honours a given created_at; kept to the ms
    assert tea["metadata"] == {"topic": "drinks", "role": "user"}
    home = rows[ids["home"]]
    assert (home["text"], home["user_id"], home["agent_id"]) == ("Alice lives in Lisbon", "alice", "helper")
    history = {r[0]: r for r in sqlite3.connect(out / "history.db").execute(
        "SELECT event, created_at, updated_at FROM history WHERE memory_id = ?", (ids["home"],))}
    assert home["created_at"] == history["ADD"][1][:23] + "+00:00"
    assert home["updated_at"] == history["UPDATE"][2][:23] + "+00:00"
    runs = rows[ids["runs"]]  # deleted in mem0: a tombstone, found by its id
    assert runs["text"] == "Bob runs every morning" and runs["deleted_at"] and "/deleted/" in runs["path"]
    assert cli.ok("show", ids["runs"][:8], "--json").json()["deleted_at"]
    # mem0's users reach them as before, through memvault's mem0-style API.
    from memvault import Memory

    m = Memory(vault=str(cli.vault))
    assert m.get(ids["tea"])["memory"] == "Alice prefers green tea"
    assert [r["memory"] for r in m.get_all(user_id="alice")["results"]] == ["Alice lives in Lisbon",
                                                                          "Alice prefers green tea"]
    again = cli.ok("import", str(out / "history.db"), str(out / "dump.json"), "--json").json()
    assert (again["imported"], again["entries"]) == (0, 0)


def test_the_dump_alone_or_the_history_alone(store, tmp_path):
    out, ids = store
    dump_only = Cli(tmp_path / "a")
    dump_only.ok("init")
    assert dump_only.ok("import", str(out / "dump.json"), "--json").json()["entries"] == 2  # live ones only
    history_only = Cli(tmp_path / "b")
    history_only.ok("init")
    result = history_only.ok("import", str(out / "history.db"), "--json")
    report = result.json()
    assert report["entries"] == 3 and "holds no scopes or metadata" in report["notes"][0]
    rows = {row["id"]: row for row in history_only.ok("list", "--deleted", "--json").json()}
    assert rows[ids["home"]]["text"] == "Alice lives in Lisbon" and rows[ids["home"]]["conversation_id"] == "mem0"


def test_two_paths_are_one_source_only_for_mem0(store, cli):
    out, _ = store
    result = cli("import", str(out / "dump.json"), str(out / "dump.json"), "--format", "jsonl")
    assert result.exit_code == 2 and "several paths are one source only for mem0" in result.stderr


def test_curate_refuses_a_source_without_chat_turns(store, cli):
    out, _ = store
    result = cli("import", str(out / "dump.json"), "--curate", "--model", "openai/none")
    assert result.exit_code == 2 and "holds no chat turns to curate" in result.stderr
