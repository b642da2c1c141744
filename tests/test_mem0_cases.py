"""mem0's own behavioural tests, ported to run against memvault's `Memory` and `AsyncMemory`.

Sources (each test names its origin): mem0ai 2.2.1's `mem0/memory/main.py` and its tests
`tests/memory/test_add_validation.py`, `test_actor_attribution.py`, `test_metadata_only_update.py`,
`test_expiration_tz.py`, and 1.0.11's `tests/memory/test_main.py` (UPDATE + ADD in one add, empty
LLM answer). mem0 mocks its vector store and LLM; here the vault, git, MiniLM and sqlite-vec are real
and only the LLM's judgement is scripted. Where memvault deliberately differs (history kept after
`reset`, text stored as given when the LLM fails), the test asserts memvault's behaviour and says so.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, date, datetime, timedelta

import pytest

import memvault
from memvault import errors
from tests import test_api_memory
from tests.support.scripted_llm import ScriptedLLM
from tests.test_api_memory import reconcile_calls, scripted

make = test_api_memory.make  # the same fixture: a Memory over a fresh vault, closed at the end


class ViaAsync:
    """An AsyncMemory driven like a Memory (each coroutine run to its end), so one test serves both."""

    def __init__(self, memory: memvault.AsyncMemory) -> None:
        self.aio = memory

    def __getattr__(self, name):
        if name.startswith("_"):  # the test's peek inside (the core, the prompts): the wrapped Memory's
            return getattr(self.aio.memory, name)
        attr = getattr(self.aio, name)  # AsyncMemory's own: a method it lacks must fail the test
        if asyncio.iscoroutinefunction(attr):
            return lambda *args, **kwargs: asyncio.run(attr(*args, **kwargs))
        return attr


@pytest.fixture(params=["Memory", "AsyncMemory"])
def both(request, tmp_path):
    """Like `make`, once with Memory and once with AsyncMemory."""
    opened = []

    def open_memory(llm=None, config=None):
        if request.param == "Memory":
            m = memvault.Memory(config, vault=tmp_path / "vault", llm=llm)
        else:
            m = ViaAsync(memvault.AsyncMemory(config, vault=tmp_path / "vault", llm=llm))
        opened.append(m)
        return m

    yield open_memory
    for m in opened:
        m.close()


def add_one(m, text, **kwargs):
    [event] = m.add(text, infer=False, **kwargs)["results"]
    return event["id"]


# -- test_add_validation.py (2.x) ---------------------------------------------------------------------

@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda m: m.add("hello"), memvault.ScopeError,
     "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."),
    (lambda m: m.add("hello", user_id="user-1", memory_type="invalid"), memvault.ValidationError,
     "Invalid 'memory_type'. Please pass procedural_memory to create procedural memories."),
    (lambda m: m.add(123, user_id="user-1"), memvault.ValidationError, "messages must be str, dict, or list[dict]"),
])
def test_add_validation_errors_are_value_errors_with_mem0_s_words(both, call, error, words):
    m = both()
    with pytest.raises(error, match=re.escape(words)) as caught:
        call(m)
    assert isinstance(caught.value, ValueError)  # `except ValueError` catches them, as with mem0


# -- main.py validation (2.x) ---------------------------------------------------------------------------

def test_entity_ids_are_trimmed_ints_become_strings_and_whitespace_is_refused(make):
    m = make()
    memory_id = add_one(m, "Alice likes tea", user_id="  alice  ")
    assert m.get(memory_id)["user_id"] == "alice"
    add_one(m, "User 42 likes coffee", user_id=42)
    assert [i["memory"] for i in m.get_all(filters={"user_id": 42})["results"]] == ["User 42 likes coffee"]
    for bad, words in (("   ", "Invalid user_id: cannot be empty or whitespace-only."),
                       ("al ice", "Invalid user_id: cannot contain whitespace.")):
        with pytest.raises(ValueError, match=re.escape(words)):
            m.add("x", user_id=bad, infer=False)
        with pytest.raises(ValueError, match=re.escape(words)):
            m.search("x", filters={"user_id": bad})


def test_search_and_get_all_validate_like_mem0_2(make):
    m = make()
    add_one(m, "Alice likes tea", user_id="alice")
    cases = [
        (lambda: m.search("", filters={"user_id": "alice"}), "Invalid query: cannot be empty or whitespace-only."),
        (lambda: m.search(None, filters={"user_id": "alice"}), "Invalid query: must be a non-empty string."),
        (lambda: m.search("tea", filters={"user_id": "alice"}, threshold=1.5),
         "Invalid threshold: 1.5. Must be between 0 and 1 (inclusive)."),
        (lambda: m.search("tea", filters={"user_id": "alice"}, top_k=-1), "Invalid top_k: -1. Must be a non-negative"),
        (lambda: m.get_all(filters={"user_id": "alice"}, top_k="3"), "top_k must be a valid integer"),
        (lambda: m.search("tea", filters={"topic": "x"}),
         "filters must contain at least one of: user_id, agent_id, run_id"),
        (lambda: m.delete_all(), "At least one filter is required to delete all memories."),
    ]
    for call, words in cases:
        with pytest.raises(ValueError, match=re.escape(words)):
            call()
    assert m.search("tea", filters={"user_id": "alice"}, top_k=0) == {"results": []}


def test_not_found_is_a_value_error_worded_as_mem0(both):
    m = both()
    missing = "7f1c2e3a-0000-4000-8000-000000000000"
    with pytest.raises(ValueError, match=re.escape(f"Memory with id {missing} not found")):
        m.delete(missing)
    with pytest.raises(ValueError, match=re.escape(f"Memory with id {missing} not found. Please provide a valid")):
        m.update(missing, text="x")
    assert m.get(missing) is None and m.history(missing) == []
    with pytest.raises(ValueError, match="At least one of text, metadata, or expiration_date must be provided."):
        m.update(missing)


# -- scopes in filters (2.x) and the 1.x keyword forms ------------------------------------------------

def test_scope_ids_inside_filters_in_every_form_and_the_1x_keywords(both):
    m = both()
    ids = {name: add_one(m, f"{name} likes tea", user_id=name) for name in ("alice", "bob", "carol")}
    listed = {(json.dumps(f)): sorted(i["id"] for i in m.get_all(filters=f)["results"]) for f in (
        {"user_id": "alice"}, {"user_id": {"eq": "bob"}}, {"user_id": {"in": ["alice", "carol"]}}, {"user_id": "*"})}
    assert listed == {
        '{"user_id": "alice"}': [ids["alice"]],
        '{"user_id": {"eq": "bob"}}': [ids["bob"]],
        '{"user_id": {"in": ["alice", "carol"]}}': sorted([ids["alice"], ids["carol"]]),
        '{"user_id": "*"}': sorted(ids.values()),
    }
    # mem0 1.x: user_id= and limit= on search and get_all keep working.
    assert [i["id"] for i in m.search("tea", user_id="bob", limit=5)["results"]] == [ids["bob"]]
    assert [i["id"] for i in m.get_all(user_id="carol", limit=5)["results"]] == [ids["carol"]]


def test_get_all_returns_at_most_20_by_default_as_mem0_2(make):
    m = make()
    m.add([{"role": "user", "content": f"fact number {n}"} for n in range(23)], user_id="alice", infer=False)
    assert len(m.get_all(filters={"user_id": "alice"})["results"]) == 20
    assert len(m.get_all(filters={"user_id": "alice"}, top_k=23)["results"]) == 23


# -- test_actor_attribution.py (2.x) -------------------------------------------------------------------

@pytest.mark.parametrize("content_parts", [False, True], ids=["string", "content-parts"])
def test_named_message_actor_survives_add_storage_history_and_search(both, content_parts):
    m = both(ScriptedLLM.failing())  # infer=False never asks the LLM
    text = "planner recommends tea"
    content = [{"type": "text", "text": text}] if content_parts else text
    messages = [{"role": "assistant", "name": "planner", "content": content}, {"role": "user", "content": content}]
    named, unnamed = m.add(messages, user_id="alice", metadata={"topic": "drink"}, infer=False)["results"]
    assert (named["actor_id"], unnamed["actor_id"]) == ("planner", None)
    for result, actor, role in ((named, "planner", "assistant"), (unnamed, None, "user")):
        item = m.get(result["id"])
        assert (item["memory"], item["user_id"], item["metadata"], item["role"], item.get("actor_id")) == (
            text, "alice", {"topic": "drink"}, role, actor)
        [record] = m.history(result["id"])
        assert (record["actor_id"], record["role"]) == (actor, role)
    for actor, expected in (("planner", [named["id"]]), ("nobody", [])):
        found = m.search(text, filters={"user_id": "alice", "actor_id": actor})["results"]
        assert [r["id"] for r in found] == expected


# -- test_metadata_only_update.py (2.x) -----------------------------------------------------------------

@pytest.mark.parametrize("changes", [
    {"metadata": {"reviewed": True}}, {"expiration_date": "2098-01-01"}, {"expiration_date": None},
    {"metadata": {"reviewed": True}, "expiration_date": None}],
    ids=["metadata", "set-expiry", "clear-expiry", "combined"])
def test_payload_update_keeps_the_text_and_hash(make, changes):
    m = make()
    memory_id = add_one(m, "prefers concise answers", user_id="owner", metadata={"reviewed": False, "source": "chat"},
                        expiration_date="2099-01-01")
    before = m.get(memory_id)
    assert m.update(memory_id, **changes) == {"message": "Memory updated successfully!"}
    after = m.get(memory_id)
    for key in ("memory", "hash", "created_at", "user_id"):
        assert after[key] == before[key]
    assert after["updated_at"] >= before["updated_at"]
    assert after["metadata"] == {**before["metadata"], **changes.get("metadata", {})}
    assert after.get("expiration_date") == changes.get("expiration_date", "2099-01-01")


def test_identity_keys_in_metadata_never_move_a_memory(make):
    m = make()
    memory_id = add_one(m, "prefers concise answers", user_id="owner",
                        metadata={"agent_id": "injected", "actor_id": "x", "topic": "style"})
    m.update(memory_id, metadata={"user_id": "other", "agent_id": "injected", "reviewed": True})
    item = m.get(memory_id)
    assert (item["user_id"], "agent_id" in item, "actor_id" in item, item["metadata"]) == (
        "owner", False, False, {"topic": "style", "reviewed": True})


def test_update_takes_text_and_the_1x_data_alias(both):
    m = both()
    memory_id = add_one(m, "likes tea", user_id="alice")
    m.update(memory_id, text="likes green tea")
    m.update(memory_id, data="likes jasmine tea")
    m.update(memory_id, "likes oolong tea")  # 1.x positional
    assert m.get(memory_id)["memory"] == "likes oolong tea"
    assert [h["new_memory"] for h in m.history(memory_id)] == [
        "likes tea", "likes green tea", "likes jasmine tea", "likes oolong tea"]


# -- test_expiration_tz.py and main.py's expiration (2.x) -----------------------------------------------

def test_expired_memories_are_hidden_unless_show_expired(both):
    m = both()
    today = datetime.now(UTC).date()
    live = add_one(m, "Alice is in Lisbon this week", user_id="alice", expiration_date=today)
    gone = add_one(m, "Alice was in Porto last week", user_id="alice",
                   expiration_date=(today - timedelta(days=1)).isoformat())
    forever = add_one(m, "Alice was born in Faro", user_id="alice")
    scope = {"user_id": "alice"}
    assert {i["id"] for i in m.get_all(filters=scope)["results"]} == {live, forever}  # not expired on its day
    assert {i["id"] for i in m.get_all(filters=scope, show_expired=True)["results"]} == {live, gone, forever}
    assert gone not in {i["id"] for i in m.search("where was Alice", filters=scope, threshold=0.0)["results"]}
    assert gone in {i["id"] for i in m.search("where was Alice", filters=scope, threshold=0.0,
                                             show_expired=True)["results"]}
    assert m.get(gone)["expiration_date"] == (today - timedelta(days=1)).isoformat()  # get shows it, as mem0


def test_expiration_dates_are_normalised_like_mem0(make):
    m = make()
    for given, stored in ((date(2026, 8, 13), "2026-08-13"), (datetime(2026, 8, 13, 23, 30), "2026-08-13"),
                          ("2026-08-13", "2026-08-13")):
        assert m.get(add_one(m, f"note {given!r}", user_id="a", expiration_date=given))["expiration_date"] == stored
    with pytest.raises(ValueError, match="expiration_date must be a valid date in YYYY-MM-DD format."):
        m.add("x", user_id="a", expiration_date="13/08/2026", infer=False)
    with pytest.raises(ValueError, match="expiration_date must be a date string in YYYY-MM-DD format."):
        m.add("x", user_id="a", expiration_date=20260813, infer=False)


def test_metadata_created_at_dates_the_memory(make):
    m = make()
    memory_id = add_one(m, "Alice moved to Lisbon", user_id="alice", metadata={"created_at": "2024-03-01T10:00:00Z"})
    item = m.get(memory_id)
    assert item["created_at"].startswith("2024-03-01T10:00:00") and item["metadata"] is None


# -- 1.0.11 tests/memory/test_main.py: one add, UPDATE + ADD; the spec's in-place UPDATE ----------------

def test_one_add_updates_in_place_and_adds(both):
    new = "The user likes rice and beans and cheese."
    llm = scripted({"I like rice and beans": ["The user likes rice and beans."],
                    "I like rice, beans, cheese and tacos": [new, "The user likes tacos."]},
                   {new: lambda prompt: json.dumps([
                       {"fact": 0, "event": "UPDATE", "id": "0", "text": new},
                       {"fact": 1, "event": "ADD", "text": "The user likes tacos."}])})
    m = both(llm)
    [first] = m.add("I like rice and beans", user_id="default_user")["results"]
    result = m.add("I like rice, beans, cheese and tacos", user_id="default_user")["results"]
    assert [(e["event"], e["memory"]) for e in result] == [("UPDATE", new), ("ADD", "The user likes tacos.")]
    assert result[0]["id"] == first["id"]  # in place: the id is kept
    item = m.get(first["id"])
    assert (item["memory"], item["hash"]) == (new, __import__("hashlib").md5(new.encode()).hexdigest())
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in m.history(first["id"])] == [
        ("ADD", None, "The user likes rice and beans."), ("UPDATE", "The user likes rice and beans.", new)]


def test_a_contradiction_updates_the_memory_in_place(both):
    """mem0's UPDATE on contradiction: a move replaces where the user lives, under the same id."""
    new = "The user lives in San Francisco."
    llm = scripted({"I live in NYC": ["The user lives in NYC."],
                    "I relocated to San Francisco last month": [new]},
                   {new: [{"fact": 0, "event": "UPDATE", "id": "0", "text": new}]})
    m = both(llm)
    [first] = m.add("I live in NYC", user_id="alice")["results"]
    result = m.add("I relocated to San Francisco last month", user_id="alice")["results"]
    assert [(e["event"], e["id"], e["memory"]) for e in result] == [("UPDATE", first["id"], new)]
    assert [h["event"] for h in m.history(first["id"])] == ["ADD", "UPDATE"]


def test_a_refinement_merges_into_the_memory_it_refines(both):
    """mem0's merge: "works in tech" refined by "senior engineer at Google" is one memory, rewritten."""
    fact = "The user is a senior engineer at Google."
    merged = "The user is a senior engineer at Google, working in tech."
    llm = scripted({"I work in tech": ["The user works in tech."],
                    "I'm a senior engineer at Google": [fact]},
                   {fact: [{"fact": 0, "event": "UPDATE", "id": "0", "text": merged}]})
    m = both(llm)
    [first] = m.add("I work in tech", user_id="alice")["results"]
    result = m.add("I'm a senior engineer at Google", user_id="alice")["results"]
    assert [(e["event"], e["id"], e["memory"]) for e in result] == [("UPDATE", first["id"], merged)]


def test_a_rewrite_that_changes_a_name_or_mixes_people_is_dropped(make):
    fact = "The user lives in San Francisco."
    llm = scripted({"I live in NYC": ["The user lives in NYC."], "I moved to San Francisco": [fact]},
                   {fact: [{"fact": 0, "event": "UPDATE", "id": "0", "text": "The user lives in Oakland."}]})
    m = make(llm)
    m.add("I live in NYC", user_id="alice")
    events = m.add("I moved to San Francisco", user_id="alice")["results"]
    assert [(e["event"], e["memory"]) for e in events if e["event"] != "DROP"] == [("ADD", fact)]


def test_a_duplicate_is_a_none_event(both):
    llm = scripted({"I love pizza": ["The user likes pizza."], "Pizza! I love pizza": ["The user likes pizza."]})
    m = both(llm)
    [added] = m.add("I love pizza", user_id="alice")["results"]
    again = m.add("Pizza! I love pizza", user_id="alice")["results"]
    assert [(e["event"], e["id"]) for e in again] == [("NONE", added["id"])]
    assert reconcile_calls(llm) == []
    assert [h["event"] for h in m.history(added["id"])] == ["ADD"]


def test_an_empty_llm_answer_adds_nothing(make):
    m = make(ScriptedLLM.always(""))
    assert m.add("test", user_id="alice") == {"results": []}
    assert m.get_all(filters={"user_id": "alice"}) == {"results": []}


# -- where memvault differs, on purpose ---------------------------------------------------------------

def test_when_the_llm_fails_the_text_is_stored_as_given(both):
    """mem0 2.x raises LLMError ("LLM extraction failed"); memvault never loses what the user said."""
    m = both(ScriptedLLM.failing())
    result = m.add("My sister is called Ana", user_id="alice")
    assert [(e["event"], e["memory"]) for e in result["results"]] == [("ADD", "My sister is called Ana")]
    assert "LLM failed" in result["notes"][0]


def test_history_survives_reset(both):
    """mem0 empties its history database on reset; memvault's history is git, which keeps it."""
    m = both()
    memory_id = add_one(m, "Alice likes tea", user_id="alice")
    m.reset()
    assert m.get(memory_id) is None and m.get_all(filters={"user_id": "alice"}) == {"results": []}
    assert [h["event"] for h in m.history(memory_id)] == ["ADD", "DELETE"]


# -- history records carry mem0's and the spec's names --------------------------------------------------

def test_history_records_have_both_field_sets(make):
    m = make()
    memory_id = add_one(m, "likes tea", user_id="alice")
    m.update(memory_id, text="likes green tea")
    m.delete(memory_id)
    records = m.history(memory_id)
    assert [(r["event"], r["old_memory"], r["new_memory"], r["is_deleted"]) for r in records] == [
        ("ADD", None, "likes tea", False), ("UPDATE", "likes tea", "likes green tea", False),
        ("DELETE", "likes green tea", None, True)]
    for record in records:
        assert {"id", "memory_id", "created_at", "updated_at", "actor_id", "role", "old_value", "new_value",
                "timestamp"} <= set(record)
        assert (record["old_value"], record["new_value"], record["timestamp"]) == (
            record["old_memory"], record["new_memory"], record["updated_at"])
    assert len({r["created_at"] for r in records}) == 1  # the memory's creation, as mem0 keeps it


# -- the spec's filter form -----------------------------------------------------------------------------

@pytest.fixture
def filtered(make):
    m = make()
    names = {}
    for name, text, metadata in (("tea", "The user likes green tea.", {"category": "drink", "priority": 1}),
                                 ("pasta", "The user cooks pasta.", {"category": "food", "priority": 2}),
                                 ("cake", "The user bakes cake.", {"category": "food", "priority": 3})):
        names[add_one(m, text, user_id="alice", metadata=metadata)] = name
    return m, names


@pytest.mark.parametrize(("condition", "expected"), [
    ({"field": "category", "operator": "eq", "value": "food"}, {"pasta", "cake"}),
    ({"field": "priority", "operator": "in", "value": [1, 3]}, {"tea", "cake"}),
    ({"NOT": [{"field": "category", "operator": "eq", "value": "food"}]}, {"tea"}),
    ({"OR": [{"field": "priority", "operator": "gte", "value": 3},
             {"field": "memory", "operator": "contains", "value": "tea"}]}, {"tea", "cake"}),
    ({"AND": [{"field": "category", "operator": "eq", "value": "food"},
              {"field": "priority", "operator": "lt", "value": 3}]}, {"pasta"}),
])
def test_the_spec_filter_form_selects_exactly(filtered, condition, expected):
    m, names = filtered
    listed = m.get_all(filters={"user_id": "alice", "AND": [condition]})["results"]
    found = m.search("what does the user like", user_id="alice", filters=condition, threshold=0.0)["results"]
    assert {names[i["id"]] for i in listed} == {names[i["id"]] for i in found} == expected


@pytest.mark.parametrize("condition", [
    {"field": "category", "operator": "between", "value": [1, 2]},
    {"field": "category", "operator": "eq"},
    {"field": "category", "operator": "eq", "value": "x", "extra": 1},
    {"NOT": [{"field": 3, "operator": "eq", "value": "x"}]},
])
def test_an_unreadable_expression_is_an_error_never_everything_or_nothing(filtered, condition):
    m, _ = filtered
    with pytest.raises(memvault.ValidationError):
        m.get_all(filters={"user_id": "alice", "AND": [condition]})
    with pytest.raises(memvault.ValidationError):
        m.search("tea", user_id="alice", filters=condition)


# -- one failing embedding must not abort an add ------------------------------------------------------

def test_a_failing_embedder_does_not_abort_an_add_and_the_journal_indexes_it_later(make, monkeypatch):
    llm = scripted({"I keep bees": ["The user keeps bees."]})
    m = make(llm)
    add_one(m, "The user likes honey.", user_id="alice")  # the index is open: writes are indexed at once
    embedder = m.core.embedder()

    def broken(texts, kind="passage"):
        raise errors.EmbeddingError("embedding with minilm failed: out of memory")

    monkeypatch.setattr(embedder, "embed", broken)
    plain = m.add("The user has a hive.", user_id="alice", infer=False)
    curated = m.add("I keep bees", user_id="alice")
    assert [e["memory"] for e in plain["results"]] == ["The user has a hive."]
    assert [(e["event"], e["memory"]) for e in curated["results"]] == [("ADD", "The user keeps bees.")]
    assert any("embedding failed" in note for note in plain["notes"])
    assert any("embedding failed" in note for note in curated["notes"])
    monkeypatch.undo()  # the model works again: the next search embeds what waited in the journal
    found = {i["memory"] for i in m.search("bees and hives", filters={"user_id": "alice"}, threshold=0.0)["results"]}
    assert {"The user has a hive.", "The user keeps bees."} <= found


# -- AsyncMemory: the same cases as coroutines ----------------------------------------------------------

def test_async_memory_takes_the_2x_forms(tmp_path):
    async def scenario():
        m = memvault.AsyncMemory(vault=tmp_path / "vault")
        try:
            [added] = (await m.add("Alice likes tea", user_id="alice", infer=False,
                                   expiration_date="2099-01-01"))["results"]
            found = await m.search("tea", filters={"user_id": "alice"}, top_k=3, explain=True)
            listed = await m.get_all(filters={"user_id": {"in": ["alice"]}}, top_k=5)
            await m.update(added["id"], text="Alice likes green tea", expiration_date=None)
            item = await m.get(added["id"])
            with pytest.raises(ValueError, match="not found"):
                await m.delete("7f1c2e3a-0000-4000-8000-000000000000")
            return added, found, listed, item
        finally:
            m.close()

    added, found, listed, item = asyncio.run(scenario())
    assert [r["id"] for r in found["results"]] == [added["id"]] and "score_details" in found["results"][0]
    assert [r["id"] for r in listed["results"]] == [added["id"]]
    assert item["memory"] == "Alice likes green tea" and "expiration_date" not in item


def test_metadata_created_at_dates_curated_facts_too(make):
    m = make(scripted({"I moved to Lisbon in 2024": ["The user lives in Lisbon."]}))  # moved to -> lives in
    [event] = m.add("I moved to Lisbon in 2024", user_id="alice",
                    metadata={"created_at": "2024-05-01T09:30:00+00:00", "source": "import"})["results"]
    item = m.get(event["id"])
    assert item["created_at"].startswith("2024-05-01T09:30:00") and item["metadata"] == {"source": "import"}
