"""The mem0-style `Memory` API and mem0's behavioural cases, end to end: real vault, git, MiniLM and
sqlite-vec; a scripted LLM gives the judgement (extraction and reconciliation answers)."""

import json
import re
import subprocess
import uuid

import pytest

import memvault
from memvault import errors
from memvault.api.config import build_settings
from memvault.settings import Settings
from memvault.vault.format.markdown import parse
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "Latest user message (extract from this only):\n"
RECONCILE = "Stored memories:"
SUMMARY = "Previous summary:"


def scripted(facts_by_message=None, decisions_by_fact=None, summary="The user shares a few things."):
    """Extraction answers by the latest user message; reconciliation answers by the first fact asked."""
    rules = [(EXTRACT + message, json.dumps(facts)) for message, facts in (facts_by_message or {}).items()]
    rules += [(f"fact 0: {fact}", reply if callable(reply) else json.dumps(reply))
              for fact, reply in (decisions_by_fact or {}).items()]
    rules.append((SUMMARY, summary))
    return ScriptedLLM(rules, default="[]")


def short_id(prompt, stored_text):
    """The short id the reconciliation prompt gave a stored memory ("3: The user lives in Paris.")."""
    stored = prompt.split(RECONCILE + "\n")[1].split("\n\n")[0]
    return next(line.split(": ", 1)[0] for line in stored.splitlines() if line.split(": ", 1)[1] == stored_text)


def reconcile_calls(llm):
    return [c for c in llm.calls if RECONCILE in c.prompt]


@pytest.fixture
def make(tmp_path):
    """Memory over a fresh vault, optionally with a scripted LLM."""
    opened = []

    def open_memory(llm=None, config=None):
        m = memvault.Memory(config, vault=tmp_path / "vault", llm=llm)
        opened.append(m)
        return m

    yield open_memory
    for m in opened:
        m.close()


def git(m, *args):
    return subprocess.run(["git", *args], cwd=m.vault_path, capture_output=True, text=True, check=True).stdout


def commit_count(m):
    return int(git(m, "rev-list", "--count", "HEAD"))


def texts(result):
    return sorted(item["memory"] for item in result["results"])


def fact_file(m, memory_id):
    [path] = list((m.vault_path / "entries").rglob(f"*__{memory_id}.md"))
    return path


# -- add ---------------------------------------------------------------------------------------------

def test_add_single_fact_returns_mem0_events_and_writes_a_markdown_file_and_a_commit(make):
    llm = scripted({"I love pizza": ["The user likes pizza."]}, summary="The user likes pizza.")
    m = make(llm)
    before = commit_count(m)
    result = m.add("I love pizza", user_id="alice", metadata={"topic": "food"})
    [event] = result["results"]
    assert (event["event"], event["memory"]) == ("ADD", "The user likes pizza.")
    assert "notes" not in result
    path = fact_file(m, event["id"])
    assert path.relative_to(m.vault_path).parts[:3] == ("entries", "user-alice", "facts")
    entry = parse(path.read_text(), str(path))
    assert (entry.id, entry.text, entry.user_id, entry.metadata) == (
        event["id"], "The user likes pizza.", "alice", {"topic": "food"})
    assert commit_count(m) == before + 1
    assert f"Memvault-Event: ADD {event['id']}" in git(m, "log", "-1", "--format=%B")


def test_add_conversation_extracts_from_every_user_message_with_the_assistant_as_context(make):
    said = "The user's messages (extract from these only):\nI have a sister.\nYes, she is called Ana."
    llm = ScriptedLLM([(said, json.dumps(["The user's sister is called Ana."])), (SUMMARY, "A sister.")],
                      default="[]")  # mem0's semantics: the whole conversation given is mined
    m = make(llm)
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "I have a sister."},
        {"role": "assistant", "content": "What is her name?"},
        {"role": "user", "content": "Yes, she is called Ana."},
    ]
    result = m.add(messages, user_id="alice")
    assert [(e["event"], e["memory"]) for e in result["results"]] == [("ADD", "The user's sister is called Ana.")]
    extraction = llm.calls[0].prompt
    assert "assistant: What is her name?" in extraction.split("(context only):", 1)[1].split(said)[0]
    assert texts(m.get_all(user_id="alice")) == ["The user's sister is called Ana."]


def test_add_with_nothing_to_extract_stores_no_memory(make):
    m = make(scripted({"Hi there, how are you?": []}))
    assert m.add("Hi there, how are you?", user_id="alice") == {"results": []}
    assert m.get_all(user_id="alice") == {"results": []}
    assert m.search("how are you", user_id="alice") == {"results": []}  # the stored turn is not a memory


def test_infer_false_stores_each_message_verbatim_without_asking_the_llm(make):
    llm = scripted({"I love pizza": ["should not be extracted"]})
    m = make(llm)
    result = m.add([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "I love pizza"},
                    {"role": "assistant", "content": "Noted: pizza."}], user_id="alice", infer=False)
    assert llm.calls == []
    assert [e["memory"] for e in result["results"]] == ["I love pizza", "Noted: pizza."]
    stored = {item["memory"]: (item["role"], item["metadata"]) for item in m.get_all(user_id="alice")["results"]}
    assert stored == {"I love pizza": ("user", None), "Noted: pizza.": ("assistant", None)}  # mem0 2.x's shape


def test_llm_failure_degrades_to_storing_the_message_as_given(make):
    m = make(ScriptedLLM.failing())
    result = m.add("My sister is called Ana", user_id="alice")
    assert [(e["event"], e["memory"]) for e in result["results"]] == [("ADD", "My sister is called Ana")]
    assert result["notes"] and "LLM failed" in result["notes"][0]
    assert texts(m.get_all(user_id="alice")) == ["My sister is called Ana"]


def test_custom_extraction_prompt_reaches_the_llm(make):
    llm = scripted({"I run every morning": ["The user runs every morning."]})
    m = make(llm)
    m.add("I run every morning", user_id="alice", prompt="Extract only sports habits. Answer a JSON list.")
    assert llm.calls[0].messages[0] == {"role": "system", "content": "Extract only sports habits. Answer a JSON list."}
    configured = ScriptedLLM(default="[]")
    m2 = make(configured, config={"custom_fact_extraction_prompt": "Only hobbies, please: {message}"})
    m2.add("I paint on Sundays", user_id="alice")
    assert configured.calls[0].messages == [{"role": "user", "content": "Only hobbies, please: I paint on Sundays"}]


def test_without_an_llm_add_stores_the_text_and_says_so(make):
    m = make()
    result = m.add("Alice drinks green tea", user_id="alice")
    assert [e["memory"] for e in result["results"]] == ["Alice drinks green tea"]
    assert "no LLM configured" in result["notes"][0]


# -- reading -----------------------------------------------------------------------------------------

def test_search_by_meaning_with_a_limit(make):
    m = make()
    for text in ("The user is vegetarian and loves lentil curry.", "The user works as a nurse in Porto.",
                 "The user plays the violin.", "The user's car is a red Fiat.", "The user has two cats."):
        m.add(text, user_id="alice", infer=False)
    # threshold 0: every candidate may come back, so the limit is what cuts the list.
    result = m.search("What food should I cook for dinner?", user_id="alice", limit=2, threshold=0.0)
    assert len(result["results"]) == 2
    top = result["results"][0]
    assert top["memory"] == "The user is vegetarian and loves lentil curry."
    assert set(top) == {"id", "memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id", "role"}
    assert result["results"][0]["score"] >= result["results"][1]["score"]
    assert len(m.search("music instrument", user_id="alice", threshold=0.0)["results"]) == 5  # default top_k 20
    by_default = m.search("music instrument", user_id="alice")["results"]
    assert by_default[0]["memory"] == "The user plays the violin."
    assert "The user's car is a red Fiat." not in [i["memory"] for i in by_default]  # junk is cut


def test_get_returns_the_memory_item_and_none_when_absent(make):
    m = make(scripted({"I have a dog": ["The user has a dog."]}))
    [event] = m.add("I have a dog", user_id="alice", agent_id="coach", metadata={"kind": "pet"})["results"]
    item = m.get(event["id"])
    assert {k: item[k] for k in ("id", "memory", "metadata", "user_id", "agent_id")} == {
        "id": event["id"], "memory": "The user has a dog.", "metadata": {"kind": "pet"},
        "user_id": "alice", "agent_id": "coach"}
    assert "run_id" not in item and item["score"] is None  # mem0 2.x: get has score None, get_all none
    assert {**item, "score": None} == {**m.get_all(user_id="alice")["results"][0], "score": None}
    assert m.get(str(uuid.uuid4())) is None
    assert m.get("not-an-id/../x") is None
    [turn] = (m.vault_path / "entries" / "user-alice+agent-coach" / "turns" / "user").rglob("*.md")
    assert m.get(parse(turn.read_text()).id) is None  # a stored chat turn is not a memory
    m.delete(event["id"])
    assert m.get(event["id"]) is None


def test_get_all_lists_one_scope_newest_first_with_a_limit(make):
    m = make()
    for n in range(4):
        m.add(f"Alice fact number {n}", user_id="alice", infer=False)
    m.add("Bob fact", user_id="bob", infer=False)
    everything = m.get_all(user_id="alice")["results"]
    assert [i["memory"] for i in everything] == [f"Alice fact number {n}" for n in (3, 2, 1, 0)]
    assert [i["memory"] for i in m.get_all(user_id="alice", limit=2)["results"]] == [
        "Alice fact number 3", "Alice fact number 2"]
    assert texts(m.get_all(user_id="bob")) == ["Bob fact"]


# -- update, delete, reset ---------------------------------------------------------------------------

def test_update_rewrites_in_place_with_a_new_hash(make):
    m = make()
    [event] = m.add("The user lives in Paris.", user_id="alice", infer=False)["results"]
    before = m.get(event["id"])
    path = fact_file(m, event["id"])
    assert m.update(event["id"], "The user lives in Berlin.") == {"message": "Memory updated successfully!"}
    after = m.get(event["id"])
    assert after["memory"] == "The user lives in Berlin." and after["id"] == before["id"]
    assert after["hash"] != before["hash"] and after["created_at"] == before["created_at"]
    assert after["updated_at"] >= before["updated_at"]
    assert fact_file(m, event["id"]) == path and "Berlin" in path.read_text()
    assert [i["memory"] for i in m.search("Which city?", user_id="alice")["results"]] == ["The user lives in Berlin."]


def test_delete_is_soft_and_unknown_ids_raise_not_found(make):
    m = make()
    [keep] = m.add("The user likes jazz.", user_id="alice", infer=False)["results"]
    [gone] = m.add("The user likes opera.", user_id="alice", infer=False)["results"]
    assert m.delete(gone["id"]) == {"message": "Memory deleted successfully!"}
    assert texts(m.get_all(user_id="alice")) == ["The user likes jazz."]
    assert [i["id"] for i in m.search("opera music", user_id="alice")["results"]] == [keep["id"]]
    assert "deleted" in fact_file(m, gone["id"]).relative_to(m.vault_path).parts
    for call in (lambda: m.delete(gone["id"]), lambda: m.update(gone["id"], "x"),
                 lambda: m.update(str(uuid.uuid4()), "x")):
        with pytest.raises(memvault.NotFoundError) as caught:
            call()
        assert isinstance(caught.value, errors.NotFoundError) and isinstance(caught.value, memvault.MemoryError)


def test_delete_all_removes_one_scope_in_one_commit(make):
    m = make(scripted({"I like tea": ["The user likes tea."]}))
    m.add("I like tea", user_id="alice")  # curated: a turn, a fact and a summary
    m.add("Alice fact two", user_id="alice", agent_id="coach", infer=False)
    m.add("Bob fact", user_id="bob", infer=False)
    before = commit_count(m)
    assert m.delete_all(user_id="alice") == {"message": "Memories deleted successfully!"}
    assert commit_count(m) == before + 1
    assert m.get_all(user_id="alice") == {"results": []}
    assert texts(m.get_all(user_id="bob")) == ["Bob fact"]
    alice_live = [p for p in (m.vault_path / "entries").rglob("*.md")
                  if "deleted" not in p.parts and "alice" in p.relative_to(m.vault_path).parts[1]]
    assert alice_live == []  # the turn and the summary of alice's conversation went too


def test_reset_soft_deletes_everything_and_rebuilds_the_index(make):
    m = make()
    m.add("Alice fact", user_id="alice", infer=False)
    m.add("Bob fact", user_id="bob", infer=False)
    assert m.reset() is None
    assert m.get_all(user_id="alice") == m.get_all(user_id="bob") == {"results": []}
    assert m.search("fact", user_id="bob") == {"results": []}
    files = list((m.vault_path / "entries").rglob("*.md"))
    assert len(files) == 2 and all("deleted" in p.parts for p in files)
    assert git(m, "log", "-1", "--format=%s").strip() == "memvault reset: soft-deleted every entry"


# -- mem0's behavioural cases ------------------------------------------------------------------------

def test_dedup_same_fact_twice_is_none_without_asking_and_a_paraphrase_is_none_by_the_llm(make):
    llm = scripted({"I love pizza": ["The user likes pizza."], "Pizza is my favourite!": ["The user likes pizza."],
                    "I really enjoy pizza": ["The user enjoys pizza."]},
                   {"The user enjoys pizza.": [{"fact": 0, "event": "NONE", "id": "0"}]})
    m = make(llm)
    [first] = m.add("I love pizza", user_id="alice")["results"]
    none = ("NONE", first["id"], "The user likes pizza.")
    [dup] = m.add("Pizza is my favourite!", user_id="alice")["results"]
    assert (dup["event"], dup["id"], dup["memory"]) == none  # a duplicate is reported as a NONE event
    assert reconcile_calls(llm) == []  # same hash: settled without the LLM
    [same] = m.add("I really enjoy pizza", user_id="alice")["results"]
    assert (same["event"], same["id"]) == ("NONE", first["id"])
    assert len(reconcile_calls(llm)) == 1
    assert texts(m.get_all(user_id="alice")) == ["The user likes pizza."]


def test_update_on_contradiction(make):
    new = "The user no longer likes pizza and loves sushi."
    llm = scripted({"I love pizza": ["The user likes pizza."], "I no longer love pizza, I love sushi now": [new]},
                   {new: [{"fact": 0, "event": "UPDATE", "id": "0", "text": new}]})
    m = make(llm)
    [old] = m.add("I love pizza", user_id="alice")["results"]
    [event] = m.add("I no longer love pizza, I love sushi now", user_id="alice")["results"]
    assert (event["event"], event["memory"], event["previous_memory"], event["id"]) == (
        "UPDATE", new, "The user likes pizza.", old["id"])  # in place: the id is kept
    assert "The user likes pizza." in reconcile_calls(llm)[0].prompt
    assert texts(m.get_all(user_id="alice")) == [new]
    assert m.get(old["id"])["memory"] == new
    assert [(h["event"], h["new_memory"]) for h in m.history(old["id"])] == [
        ("ADD", "The user likes pizza."), ("UPDATE", new)]


def test_merge_on_refinement(make):
    merged = "The user loves playing cricket with friends on weekends."
    llm = scripted({"I like cricket": ["The user likes cricket."],
                    "I play cricket with friends every weekend": ["The user plays cricket with friends on weekends."]},
                   {"The user plays cricket with friends on weekends.": [
                       {"fact": 0, "event": "UPDATE", "id": "0", "text": merged}]})
    m = make(llm)
    m.add("I like cricket", user_id="alice")
    result = m.add("I play cricket with friends every weekend", user_id="alice")
    assert [(e["event"], e["memory"], e["previous_memory"]) for e in result["results"]] == [
        ("UPDATE", merged, "The user likes cricket.")]
    assert texts(m.get_all(user_id="alice")) == [merged]


def test_delete_on_negation(make):
    llm = scripted({"I have a cat called Tom": ["The user has a cat called Tom."],
                    "Tom ran away, no cat any more": ["The user no longer has a cat."]},
                   {"The user no longer has a cat.": [{"fact": 0, "event": "DELETE", "id": "0"}]})
    m = make(llm)
    [cat] = m.add("I have a cat called Tom", user_id="alice")["results"]
    result = m.add("Tom ran away, no cat any more", user_id="alice")
    assert [(e["event"], e["memory"]) for e in result["results"]] == [
        ("DELETE", "The user has a cat called Tom."), ("ADD", "The user no longer has a cat.")]
    assert result["results"][0]["id"] == cat["id"]
    assert texts(m.get_all(user_id="alice")) == ["The user no longer has a cat."]
    assert m.history(cat["id"])[-1]["event"] == "DELETE" and m.history(cat["id"])[-1]["is_deleted"]


def test_multiple_events_per_add(make):
    facts = ["The user's name is Alex.", "The user moved to Berlin.", "The user likes pizza."]
    llm = scripted({"I like pizza": ["The user likes pizza."], "I live in Paris": ["The user lives in Paris."],
                    "I'm Alex, I moved to Berlin, still love pizza": facts},
                   {"The user's name is Alex.": lambda prompt: json.dumps([
                       {"fact": 0, "event": "ADD", "text": facts[0]},
                       {"fact": 1, "event": "UPDATE", "id": short_id(prompt, "The user lives in Paris."),
                        "text": "The user lives in Berlin."}])})
    m = make(llm)
    m.add("I like pizza", user_id="alice")
    m.add("I live in Paris", user_id="alice")
    before = commit_count(m)
    result = m.add("I'm Alex, I moved to Berlin, still love pizza", user_id="alice")
    assert sorted((e["event"], e["memory"]) for e in result["results"]) == [
        ("ADD", "The user's name is Alex."), ("NONE", "The user likes pizza."), ("UPDATE", "The user lives in Berlin.")]
    assert commit_count(m) == before + 1
    asked = reconcile_calls(llm)[-1].prompt
    assert "fact 1: The user moved to Berlin." in asked and "fact 2" not in asked  # the exact duplicate is settled
    assert texts(m.get_all(user_id="alice")) == [
        "The user likes pizza.", "The user lives in Berlin.", "The user's name is Alex."]


# -- scopes ------------------------------------------------------------------------------------------

def test_scope_isolation_between_users(make):
    llm = scripted({"I love pizza": ["The user likes pizza."]})
    m = make(llm)
    [alice] = m.add("I love pizza", user_id="alice")["results"]
    # Bob's identical fact is not a duplicate of Alice's: reconciliation never sees other scopes.
    [bob] = m.add("I love pizza", user_id="bob")["results"]
    assert bob["event"] == "ADD" and bob["id"] != alice["id"] and reconcile_calls(llm) == []
    m.add("Alice's diary hides under the lighthouse", user_id="alice", infer=False)
    bob_search = m.search("diary hides lighthouse", user_id="bob", threshold=0.0)["results"]
    assert [i["id"] for i in bob_search] == [bob["id"]]
    assert {i["user_id"] for i in m.get_all(user_id="bob")["results"]} == {"bob"}
    assert len(m.get_all(user_id="alice")["results"]) == 2


def test_several_scopes_must_all_match(make):
    m = make()
    for text, scopes in (("Alice with the chef", {"user_id": "alice", "agent_id": "chef"}),
                         ("Alice with the coach", {"user_id": "alice", "agent_id": "coach"}),
                         ("Alice alone", {"user_id": "alice"}),
                         ("Bob with the chef", {"user_id": "bob", "agent_id": "chef"})):
        m.add(text, infer=False, **scopes)
    assert texts(m.search("who is with whom", user_id="alice", agent_id="chef")) == ["Alice with the chef"]
    assert texts(m.get_all(user_id="alice", agent_id="chef")) == ["Alice with the chef"]
    assert texts(m.get_all(user_id="alice")) == ["Alice alone", "Alice with the chef", "Alice with the coach"]
    assert texts(m.get_all(agent_id="chef")) == ["Alice with the chef", "Bob with the chef"]
    assert texts(m.search("who", filters={"user_id": "bob"})) == ["Bob with the chef"]  # scope given as a filter


def test_run_isolation(make):
    m = make()
    m.add("Booked a table for run one", user_id="alice", run_id="run-1", infer=False)
    m.add("Booked a flight for run two", user_id="alice", run_id="run-2", infer=False)
    assert texts(m.get_all(user_id="alice", run_id="run-1")) == ["Booked a table for run one"]
    assert texts(m.search("booking", run_id="run-2")) == ["Booked a flight for run two"]
    assert len(m.get_all(user_id="alice")["results"]) == 2
    m.delete_all(run_id="run-1")
    assert texts(m.get_all(user_id="alice")) == ["Booked a flight for run two"]


def test_a_scope_is_required(make):
    m = make()
    calls = ((lambda: m.add("text"), "At least one of 'user_id', 'agent_id', or 'run_id' must be provided"),
             (lambda: m.search("text"), "filters must contain at least one of: user_id, agent_id, run_id"),
             (lambda: m.get_all(), "filters must contain at least one of"),
             (lambda: m.delete_all(), "At least one filter is required to delete all memories"),
             (lambda: m.get_all(filters={"category": "x"}), "filters must contain at least one of"))
    for call, words in calls:
        with pytest.raises(memvault.ScopeError, match=re.escape(words)):
            call()
    with pytest.raises(errors.UsageError) as caught:
        m.search("text")
    assert caught.value.exit_code == 2 and isinstance(caught.value, memvault.MemoryError)
    assert list((m.vault_path / "entries").rglob("*.md")) == []


# -- history -----------------------------------------------------------------------------------------

def test_history_lists_add_update_delete_oldest_first(make):
    m = make()
    [event] = m.add("The user likes tea.", user_id="alice", infer=False)["results"]
    m.update(event["id"], "The user likes green tea.")
    m.delete(event["id"])
    history = m.history(event["id"])
    assert [(h["event"], h["old_memory"], h["new_memory"], h["is_deleted"]) for h in history] == [
        ("ADD", None, "The user likes tea.", False),
        ("UPDATE", "The user likes tea.", "The user likes green tea.", False),
        ("DELETE", "The user likes green tea.", None, True),
    ]
    assert all(h["memory_id"] == event["id"] for h in history)
    assert [h["timestamp"] for h in history] == sorted(h["timestamp"] for h in history)
    assert history[0]["updated_at"] == history[0]["created_at"]  # mem0: an ADD's updated_at is its created_at
    assert history[1]["created_at"] == history[0]["created_at"] < history[1]["updated_at"] == history[1]["timestamp"]
    assert len({h["id"] for h in history}) == 3
    assert m.history(str(uuid.uuid4())) == [] and m.history("nonsense") == []


# -- filters -----------------------------------------------------------------------------------------

FILTER_DATA = {
    "tea": ("The user likes green tea.", {"category": "drink", "priority": 1, "tags": ["morning"], "city": "Lisbon"}),
    "espresso": ("The user drinks espresso after lunch.", {"category": "drink", "priority": 3, "tags": ["work"]}),
    "pasta": ("The user cooks pasta on Sundays.",
              {"category": "food", "priority": 2, "tags": ["weekend", "family"], "city": "Porto"}),
    "peanuts": ("The user is allergic to peanuts.", {"category": "health", "priority": 5}),
}
FILTER_CASES = [
    ({"category": "food"}, {"pasta"}),
    ({"category": {"eq": "drink"}}, {"tea", "espresso"}),
    ({"category": {"ne": "drink"}}, {"pasta", "peanuts"}),
    ({"priority": {"gt": 2}}, {"espresso", "peanuts"}),
    ({"priority": {"gte": 2}}, {"espresso", "pasta", "peanuts"}),
    ({"priority": {"lt": 2}}, {"tea"}),
    ({"priority": {"lte": 2}}, {"tea", "pasta"}),
    ({"category": {"in": ["food", "health"]}}, {"pasta", "peanuts"}),
    ({"category": {"nin": ["food", "health"]}}, {"tea", "espresso"}),
    ({"tags": {"contains": "weekend"}}, {"pasta"}),
    ({"city": {"contains": "isb"}}, {"tea"}),
    ({"city": {"icontains": "PORTO"}}, {"pasta"}),
    ({"AND": [{"category": "drink"}, {"priority": {"gte": 2}}]}, {"espresso"}),
    ({"OR": [{"category": "health"}, {"priority": 1}]}, {"peanuts", "tea"}),
    ({"NOT": [{"category": "drink"}]}, {"pasta", "peanuts"}),
]


@pytest.fixture(scope="module")
def filtered(tmp_path_factory):
    """One vault for every filter case: Alice's four memories, and Bob's twin of one of them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        m = memvault.Memory(vault=tmp_path_factory.mktemp("filters") / "vault", settings=Settings())
        ids = {}
        for name, (text, metadata) in FILTER_DATA.items():
            ids[m.add(text, user_id="alice", metadata=metadata, infer=False)["results"][0]["id"]] = name
        m.add("The user likes green tea.", user_id="bob", metadata={"category": "drink", "priority": 1}, infer=False)
        yield m, ids
        m.close()


@pytest.mark.parametrize(("filters", "expected"), FILTER_CASES, ids=[json.dumps(f) for f, _ in FILTER_CASES])
def test_every_filter_operator_in_search_and_get_all(filtered, filters, expected):
    m, names = filtered
    found = m.search("what does the user like", user_id="alice", filters=filters)["results"]
    assert {names[i["id"]] for i in found} == expected
    listed = m.get_all(user_id="alice", filters=filters)["results"]
    assert {names[i["id"]] for i in listed} == expected


def test_a_bad_filter_is_a_validation_error(filtered):
    m, _ = filtered
    with pytest.raises(memvault.ValidationError, match="unknown filter operator"):
        m.get_all(user_id="alice", filters={"priority": {"between": [1, 2]}})
    with pytest.raises(memvault.ValidationError, match="Invalid top_k: -1"):
        m.search("tea", user_id="alice", limit=-1)


# -- storage and configuration -----------------------------------------------------------------------

def test_everything_stored_is_markdown_files_and_git_commits(make):
    llm = scripted({"I love pizza": ["The user likes pizza."]})
    m = make(llm)
    [fact] = m.add("I love pizza", user_id="alice")["results"]
    [other] = m.add("The user has a bike.", user_id="alice", agent_id="coach", infer=False)["results"]
    m.update(other["id"], "The user has a red bike.")
    m.delete(fact["id"])
    stored = [p.relative_to(m.vault_path) for p in m.vault_path.rglob("*")
              if p.is_file() and p.relative_to(m.vault_path).parts[0] not in (".git", ".memvault")]
    # .gitignore, .gitattributes (how sync merges), the turn, the summary, the deleted fact and the bike.
    assert len(stored) == 6 and all(p.suffix == ".md" or str(p) in (".gitignore", ".gitattributes") for p in stored)
    for rel in stored:
        if rel.suffix == ".md":
            parse((m.vault_path / rel).read_text(), str(rel))  # every file is a readable entry
    assert git(m, "status", "--porcelain") == ""  # all of it committed
    subjects = git(m, "log", "--format=%s").splitlines()
    assert len(subjects) == 5 and subjects[-1] == "memvault init"
    assert [s.split(":")[0] for s in subjects[:4]] == ["memvault rm", "memvault update", "memvault add", "memvault add"]


def test_a_file_edited_by_hand_is_what_a_new_memory_object_sees(make):
    m = make()
    [event] = m.add("The user likes tea.", user_id="alice", infer=False)["results"]
    m.close()
    path = fact_file(m, event["id"])
    path.write_text(path.read_text().replace("The user likes tea.", "The user likes mate."))
    fresh = make()
    assert texts(fresh.get_all(user_id="alice")) == ["The user likes mate."]
    assert texts(fresh.search("mate", user_id="alice")) == ["The user likes mate."]


def test_a_mem0_config_dict_maps_onto_settings(tmp_path):
    config = {
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "v")}},
        "llm": {"provider": "ollama", "config": {"model": "qwen3:4b", "ollama_base_url": "http://127.0.0.1:11434",
                                                 "temperature": 0.1, "max_tokens": 200}},
        "embedder": {"provider": "huggingface", "config": {"model": "multi-qa-MiniLM-L6-cos-v1"}},
        "retrieval": {"top_k": 7},
        "version": "v1.1",
        "custom_fact_extraction_prompt": "Only food.",
    }
    settings, prompt = build_settings(config, None, None)
    assert (settings.vault.path, settings.llm.model, settings.llm.api_base, settings.llm.temperature) == (
        str(tmp_path / "v"), "ollama/qwen3:4b", "http://127.0.0.1:11434", 0.1)
    assert (settings.embedder.model, settings.retrieval.top_k, prompt) == (
        "st:multi-qa-MiniLM-L6-cos-v1", 7, "Only food.")
    native, _ = build_settings({"llm": {"model": "openai/gpt-4o-mini"}}, tmp_path / "w", Settings())
    assert (native.llm.model, native.vault.path) == ("openai/gpt-4o-mini", str(tmp_path / "w"))
    for bad in ({"graph": {}}, {"llm": {"modle": "x"}}, {"retrieval": {"top_k": "many"}}):
        with pytest.raises(errors.ConfigError):
            build_settings(bad, tmp_path, None)
    with pytest.raises(memvault.ConfigurationError):
        memvault.Memory({"llm": {"modle": "x"}}, vault=tmp_path / "z")
