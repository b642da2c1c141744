"""The graph from hand-written triple front matter alone (no LLM): real files, git, index and MiniLM.
`memvault graph`, mem0-style `relations` in search (CLI, Python API, REST), aliases merged, scopes kept,
and relations that follow the files: gone when the fact is deleted, changed when it is edited."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from memvault import Memory
from memvault.index import db
from memvault.index.graph import entity_key
from memvault.server.run import running
from tests.support.cli import Cli
from tests.support.server import isolated_env, server_settings

ALICE = "11111111-1111-4111-8111-111111111111"
ALIAS = "22222222-2222-4222-8222-222222222222"
CAPITAL = "33333333-3333-4333-8333-333333333333"
BOB = "44444444-4444-4444-8444-444444444444"
PLAIN = "55555555-5555-4555-8555-555555555555"


def write_fact(vault: Path, memory_id: str, text: str, folder: str = "default", **fields: str) -> Path:
    """A fact file as a person writes it: front matter by hand, no hash, no updated_at."""
    extra = "".join(f"{key}: {value}\n" for key, value in fields.items())
    path = vault / "entries" / folder / "facts" / f"{memory_id}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(f"""\
        ---
        id: {memory_id}
        role: memory
        conversation_id: {folder}
        created_at: 2026-11-0{memory_id[0]}T10:00:00Z
        """) + extra + f"---\n{text}\n", encoding="utf-8")
    return path


@pytest.fixture
def vault(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    root = tmp_path / "vault"
    write_fact(root, ALICE, "Alice lives in Lisbon.", subject="Alice", predicate="lives in", object="Lisbon",
               category="location", evidence='"I moved to Lisbon with Alice"')
    write_fact(root, ALIAS, "Everyone calls Alice Ali.", subject="Ali", predicate="ALSO_KNOWN_AS", object="Alice")
    write_fact(root, CAPITAL, "Lisbon is the capital of Portugal.", subject="Lisbon", predicate="IS_CAPITAL_OF",
               object="Portugal")
    write_fact(root, PLAIN, "Alice likes green tea.")  # no triple: a valid fact, no relation
    commit_by_hand(root)
    cli.ok("reindex")
    return cli


def commit_by_hand(root: Path) -> None:
    """What the person does after writing files: commit them."""
    git = ["git", "-C", str(root), "-c", "user.name=A Person", "-c", "user.email=person@example.org"]
    subprocess.run([*git, "add", "entries"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "facts written by hand"], check=True, capture_output=True)


def test_memvault_graph_prints_a_neighbourhood_with_aliases_merged(vault):
    found = vault.ok("graph", "Ali", "--json").json()
    assert found["entity"] == "alice"  # the name most facts use names the merged entity
    assert found["names"] == ["Alice", "Ali"]
    assert [(r["source"], r["relationship"], r["destination"], r["memory_id"]) for r in found["relations"]] == [
        ("alice", "lives_in", "lisbon", ALICE)]

    deeper = vault.ok("graph", "the user's friend ALICE", "--depth", "2", "--json").json()["relations"]
    assert deeper == []  # a different name is a different entity
    two_hops = vault.ok("graph", "alice", "--depth", "2", "--json").json()["relations"]
    assert [(r["source"], r["destination"], r["depth"], r["text"]) for r in two_hops] == [
        ("alice", "lisbon", 1, "Alice lives in Lisbon."),
        ("lisbon", "portugal", 2, "Lisbon is the capital of Portugal.")]

    shown = vault.ok("graph", "Alice")
    assert "alice (Alice, Ali): 1 relation(s)" in shown.stderr
    assert "lives_in" in shown.stdout and "portugal" not in shown.stdout
    assert "No relations for 'Bob'." in vault.ok("graph", "Bob").stderr


def test_search_shows_the_relations_of_the_entities_the_query_names(vault):
    out = vault.ok("search", "where does Ali live?").stdout
    assert "Relations (from facts' triples):" in out
    assert "alice\tlives_in\tlisbon\t11111111" in out
    assert "Relations" not in vault.ok("search", "green tea").stdout  # no entity of the graph named


def test_relations_are_gone_after_the_fact_is_deleted_and_follow_an_edit(vault, tmp_path):
    assert relation_rows(tmp_path / "vault") == 3
    vault.ok("rm", ALICE[:8])
    assert vault.ok("graph", "Alice", "--json").json()["relations"] == []
    assert relation_rows(tmp_path / "vault") == 2  # the row itself is gone, not just hidden by the join
    assert "Relations" not in vault.ok("search", "where does Alice live?").stdout

    path = write_fact(tmp_path / "vault", BOB, "Bob lives in Porto, near Braga.", subject="Bob", predicate="LIVES_IN",
                      object="Porto")
    commit_by_hand(tmp_path / "vault")
    vault.ok("reindex")
    assert [r["destination"] for r in vault.ok("graph", "Bob", "--json").json()["relations"]] == ["porto"]
    path.write_text(path.read_text(encoding="utf-8").replace("object: Porto", "object: Braga"), encoding="utf-8")
    vault.ok("reindex")  # only the front matter changed: the relation follows it (the text names both)
    assert [r["destination"] for r in vault.ok("graph", "Bob", "--json").json()["relations"]] == ["braga"]


def relation_rows(root: Path) -> int:
    conn = db.connect(root / ".memvault" / "index.sqlite")
    try:
        return conn.execute("SELECT count(*) FROM relations").fetchone()[0]
    finally:
        conn.close()


def test_graph_rejects_bad_input_with_one_line(vault):
    empty = vault("graph", "  ")
    assert empty.exit_code == 2 and "the entity name is empty" in empty.stderr
    deep = vault("graph", "Alice", "--depth", "9")
    assert deep.exit_code == 2


def test_python_api_returns_mem0_relations_within_the_scope(tmp_path):
    root = tmp_path / "vault"
    write_fact(root, ALICE, "Alice lives in Lisbon.", folder="user-alice", user_id="alice", subject="Alice",
               predicate="LIVES_IN", object="Lisbon")
    write_fact(root, BOB, "Alice works at Acme.", folder="user-bob", user_id="bob", subject="Alice",
               predicate="WORKS_AT", object="Acme")
    with Memory({"vault": {"path": str(root)}}) as memory:
        found = memory.search("Where does Alice live?", user_id="alice")
        assert found["relations"] == [{"source": "alice", "relationship": "lives_in", "destination": "lisbon",
                                       "memory_id": ALICE}]  # bob's fact about Alice stays bob's
        assert "relations" not in memory.search("green tea", user_id="alice")
    with Memory({"vault": {"path": str(root)}, "enable_graph": False}) as memory:
        assert "relations" not in memory.search("Where does Alice live?", user_id="alice")
    with Memory({"vault": {"path": str(root)}, "enable_graph": False,
                 "graph_store": {"provider": "neo4j", "config": {"url": "bolt://localhost"}}}) as memory:
        assert memory.settings.graph.enabled  # a graph store turns it on: here it is the index


def test_relations_leave_out_expired_facts_unless_show_expired(tmp_path):
    """A fact past its expiration_date is hidden from search, and so are its relations (mem0 hides both)."""
    root = tmp_path / "vault"
    write_fact(root, ALICE, "Alice lives in Lisbon.", folder="user-alice", user_id="alice", subject="Alice",
               predicate="LIVES_IN", object="Lisbon", expiration_date="2099-12-31")
    write_fact(root, BOB, "Alice works at Acme.", folder="user-alice", user_id="alice", subject="Alice",
               predicate="WORKS_AT", object="Acme", expiration_date="2001-01-01")
    with Memory({"vault": {"path": str(root)}}) as memory:
        shown = memory.search("What about Alice?", user_id="alice", threshold=0.0)
        assert BOB not in {hit["id"] for hit in shown["results"]}
        assert [r["memory_id"] for r in shown["relations"]] == [ALICE]
        everything = memory.search("What about Alice?", user_id="alice", threshold=0.0, show_expired=True)
        assert sorted(r["memory_id"] for r in everything["relations"]) == [ALICE, BOB]


def test_rest_search_returns_relations(tmp_path):
    root = tmp_path / "vault"
    write_fact(root, ALICE, "Alice lives in Lisbon.", folder="user-alice", user_id="alice", subject="Alice",
               predicate="LIVES_IN", object="Lisbon")
    settings = server_settings(root)
    with isolated_env(tmp_path / "home"), running(settings) as url, httpx.Client(base_url=url, timeout=120) as client:
        reply = client.post("/v1/memories/search/", json={"query": "where does alice live", "user_id": "alice"})
        assert reply.status_code == 200, reply.text
        assert reply.json()["relations"] == [{"source": "alice", "relationship": "lives_in", "destination": "lisbon",
                                              "memory_id": ALICE}]


def test_an_index_from_before_the_graph_gains_it_without_re_embedding(vault, tmp_path):
    index = tmp_path / "vault" / ".memvault" / "index.sqlite"
    conn = db.connect(index)  # what an older memvault left: no triple column, no relations, no m004
    conn.execute("DROP TRIGGER relations_follow_entries; DROP TABLE relations; ALTER TABLE entries DROP COLUMN triple;"
                 "DROP TABLE entries_coarse; DROP TABLE vector_log;"  # and none of the migrations after m004
                 "DELETE FROM migrations WHERE name IN ('m004_graph', 'm005_coarse_vectors', 'm006_vector_log', "
                 "'m007_relation_kinds')")
    conn.close()
    report = vault.ok("reindex", "--json").json()
    assert report["embedded"] == 0 and report["updated"] == 4
    assert [r["memory_id"] for r in vault.ok("graph", "Alice", "--json").json()["relations"]] == [ALICE]


@pytest.mark.parametrize(("name", "key"), [
    ("Alice", "alice"), ("  the Eiffel  Tower ", "eiffel_tower"), ("I", "user"), ("the user", "user"),
    ("Alice's", "alice"), ("São Paulo", "são_paulo"), ("New-York", "new_york"),
])
def test_entity_names_are_normalised(name, key):
    assert entity_key(name) == key
