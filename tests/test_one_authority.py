"""The rules of what a memory is hold on every door (issue: the house III). Each test names the
disagreement between surfaces it pins down; each failed before core became the one authority."""

from __future__ import annotations

import pytest

import memvault
from memvault.converse.prompt import gather
from memvault.vault.format.layout import conversation_for_scopes
from tests.support.cli import Cli

SECRET_PLACE = "Alice keeps her diary in the blue notebook"


@pytest.fixture
def vault_path(tmp_path):
    return tmp_path / "vault"


def test_an_expired_memory_is_hidden_on_every_door_not_only_the_mem0_api(vault_path):
    """B2: expiration_date hid a memory from Memory.search only; the core search (CLI, MCP recall)
    returned it and chat and the proxy injected it."""
    with memvault.Memory(vault=vault_path) as m:
        expired = m.add("The user is in Lisbon this week", user_id="alice", infer=False,
                        expiration_date="2020-01-01")["results"][0]["id"]
        live = m.add("The user is learning the cello", user_id="alice", infer=False)["results"][0]["id"]
        core = m._core
        found = [hit.id for hit in core.search("Lisbon this week", None, {"user_id": "alice"})]
        assert expired not in found
        assert expired in [hit.id for hit in core.search("Lisbon this week", None, {"user_id": "alice"},
                                                         show_expired=True)]
        assert expired not in [row["id"] for row in core.select({"user_id": "alice"})]
        assert {expired, live} <= {row["id"] for row in core.select({"user_id": "alice"}, show_expired=True)}
        context = gather(core, "Where is the user this week? Lisbon?", conversation_for_scopes({"user_id": "alice"}),
                         {"user_id": "alice"})
        assert all(hit.id != expired for hit in context.memories)

    cli = Cli(vault_path)
    plain = cli.ok("search", "Lisbon this week", "--json").json()
    assert expired not in [hit["id"] for hit in plain]
    shown = cli.ok("search", "Lisbon this week", "--show-expired", "--json").json()
    assert expired in [hit["id"] for hit in shown]


def test_incognito_applies_the_filters_it_is_given_so_one_user_never_sees_another(tmp_path):
    """B1: incognito dropped `filters`, so bob's filtered search and list returned alice's memory."""
    with memvault.Memory(mode="incognito", vault=tmp_path / "vault") as m:
        alice = m.add(SECRET_PLACE, user_id="alice", infer=False, metadata={"topic": "diary"})["results"][0]["id"]
        m.add("Bob's bike is green", user_id="bob", infer=False, metadata={"topic": "bike"})
        assert m.search("blue notebook", filters={"user_id": "bob"})["results"] == []
        assert [item["memory"] for item in m.get_all(filters={"user_id": "bob"})["results"]] == ["Bob's bike is green"]
        assert [item["id"] for item in m.search("blue notebook", filters={"user_id": "alice"})["results"]] == [alice]
        # the rest of mem0's filter language, as the index applies it
        assert m.get_all(filters={"user_id": "alice", "AND": [{"topic": "bike"}]})["results"] == []
        assert [item["id"] for item in m.get_all(filters={"user_id": {"in": ["alice", "carol"]},
                                                          "topic": {"icontains": "DIA"}})["results"]] == [alice]
        m.delete(alice)
        assert m.get_all(filters={"user_id": "alice"})["results"] == []
    assert not (tmp_path / "vault").exists()


def test_mem0_shapes_history_ids_are_stable_uuids_and_attributed_to_is_promoted(vault_path):
    """mem0 2.2.1: history records have UUID ids; `attributed_to` stands beside the scopes, not in metadata."""
    import uuid

    with memvault.Memory(vault=vault_path) as m:
        added = m.add("Pia bakes sourdough", user_id="pia", infer=False,
                      metadata={"attributed_to": "user", "topic": "baking"})["results"][0]["id"]
        m.update(added, "Pia bakes sourdough and rye", user_id="pia")
        first, second = m.history(added), m.history(added)
        assert [record["id"] for record in first] == [record["id"] for record in second]  # stable across reads
        assert len({record["id"] for record in first}) == 2
        assert all(uuid.UUID(record["id"]) and len(record["commit"]) == 40 for record in first)
        item = m.get(added)
        assert item["attributed_to"] == "user" and item["metadata"] == {"topic": "baking"}
        [listed] = m.get_all(user_id="pia")["results"]
        assert listed["attributed_to"] == "user" and "attributed_to" not in (listed["metadata"] or {})


def test_a_session_end_names_its_own_commit_even_when_another_writer_commits_right_after(tmp_path, monkeypatch):
    """B6: SessionEnd read HEAD after the lock was released, so it could name another writer's commit."""
    import subprocess

    from memvault import settings
    from memvault.core import Memvault
    from tests.test_policy import policy_llm
    from tests.test_sessions import TURNS, talk

    core = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    try:
        llm = policy_llm({}, summary="The user planned a trip to Oslo to see the fjords.")
        talk(core, TURNS, llm)
        record = core.keeper.record

        def another_writer_lands_first(changes):  # runs after the session's lock is released
            record(changes)
            monkeypatch.setattr(core.keeper, "record", record)
            core.add_verbatim("Another writer's fact", "elsewhere")

        monkeypatch.setattr(core.keeper, "record", another_writer_lands_first)
        ended = core.end_session("default", llm)
        subject = subprocess.run(["git", "-C", str(core.vault.root), "log", "-1", "--format=%s", ended.commit],
                                 capture_output=True, text=True, check=True).stdout
        assert subject.startswith("memvault session end: default"), subject
    finally:
        core.close()
