"""The curated add end to end in the library: real vault, git, index and MiniLM; a scripted LLM judges."""

import json
import subprocess

import pytest

from memvault import settings
from memvault.core import Memvault
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "Latest user message (extract from this only):"
RECONCILE = "Stored memories:"
SUMMARY = "Previous summary:"


@pytest.fixture
def memvault(tmp_path):
    yield from memvault_at(tmp_path)


def memvault_at(folder):
    """A real vault in `folder`, closed when the test ends (a fixture's body)."""
    m = Memvault.open(settings.load(None, {"vault.path": str(folder / "vault")}), create=True)
    yield m
    m.close()


def llm_for(facts, decisions=None, summary="Alice is a user of memvault."):
    """Extraction answers `facts`; reconciliation answers `decisions` (a callable of the prompt, or JSON)."""
    rules = [(EXTRACT, json.dumps(facts)), (SUMMARY, summary)]
    if decisions is not None:
        rules.insert(1, (RECONCILE, decisions if callable(decisions) else json.dumps(decisions)))
    return ScriptedLLM(rules, default="[]")


def commits(m):
    return m.log(50)


def live_texts(m):
    return sorted(e.text for _, e in m.list(role="memory").entries)


def test_first_add_stores_turn_facts_and_summary_in_one_commit(memvault):
    llm = llm_for(["Alice loves green tea", "Alice lives in Lisbon"], summary="Alice loves green tea, lives in Lisbon.")
    result = memvault.add("I'm Alice, I love green tea and I live in Lisbon", llm=llm)
    assert [(e.event, e.new_memory) for e in result.events] == [
        ("ADD", "Alice loves green tea"), ("ADD", "Alice lives in Lisbon")]
    assert live_texts(memvault) == ["Alice lives in Lisbon", "Alice loves green tea"]
    turns = memvault.list(role="user").entries
    assert [e.text for _, e in turns] == ["I'm Alice, I love green tea and I live in Lisbon"]
    facts = [e for _, e in memvault.list(role="memory").entries]
    assert all(f.source == turns[0][1].id for f in facts)
    assert memvault.vault.summary("default").text == "Alice loves green tea, lives in Lisbon."
    last = commits(memvault)[0]
    assert last.trailers["Operation"] == ["add"]
    events = last.trailers["Event"]
    assert sorted(e.split()[0] for e in events) == ["ADD", "ADD", "SUMMARY", "TURN"]
    assert not [c for c in llm.calls if RECONCILE in c.prompt]  # nothing stored yet: no reconciliation asked


def test_update_rewrites_the_memory_in_place_under_its_id(memvault):
    first = memvault.add("I'm Alice and I like pizza", llm=llm_for(["Alice likes pizza"])).events[0]
    llm = llm_for(["Alice no longer likes pizza and loves sushi"],
                  [{"fact": 0, "event": "UPDATE", "id": "0", "text": "Alice loves sushi, not pizza"}])
    result = memvault.add("Alice here: I no longer like pizza, I love sushi", llm=llm)
    update = [e for e in result.events if e.event == "UPDATE"][0]
    assert (update.id, update.old_memory, update.new_memory) == (
        first.id, "Alice likes pizza", "Alice loves sushi, not pizza")
    assert live_texts(memvault) == ["Alice loves sushi, not pizza"]
    assert not [e for _, e in memvault.list(role="memory", include_deleted=True).entries if e.deleted]
    history = memvault.history(first.id)
    assert [(h.event, h.old_memory, h.new_memory) for h in history] == [
        ("ADD", None, "Alice likes pizza"), ("UPDATE", "Alice likes pizza", "Alice loves sushi, not pizza")]
    # The index follows: the old text is no longer found, the new one is.
    hits = memvault.search("sushi", filters={"role": "memory"})
    assert [h.text for h in hits][:1] == ["Alice loves sushi, not pizza"]
    assert "Alice likes pizza" not in [h.text for h in memvault.search("pizza", filters={"role": "memory"})]


def test_delete_on_negation_is_soft_and_new_facts_still_land(memvault):
    memvault.add("I'm Alice and I have a cat called Tom", llm=llm_for(["Alice has a cat called Tom"]))
    llm = llm_for(["Alice no longer has a cat"], [{"fact": 0, "event": "DELETE", "id": "0"}])
    result = memvault.add("Alice again: Tom ran away, I no longer have a cat", llm=llm)
    assert [e.event for e in result.events] == ["DELETE", "ADD"]  # delete-only answer: the fact still lands
    assert live_texts(memvault) == ["Alice no longer has a cat"]
    assert any(e.deleted for _, e in memvault.list(include_deleted=True).entries)


def test_exact_duplicate_is_none_without_asking(memvault):
    memvault.add("I'm Alice and I like jazz", llm=llm_for(["Alice likes jazz"]))
    llm = llm_for(["Alice likes jazz"], [{"fact": 0, "event": "ADD", "text": "should not be asked"}])
    result = memvault.add("Alice here, as I said, I like jazz", llm=llm)
    assert [e.event for e in result.events] == ["NONE"]
    assert not [c for c in llm.calls if RECONCILE in c.prompt]
    assert live_texts(memvault) == ["Alice likes jazz"]


def test_llm_failure_keeps_what_the_user_said(memvault):
    result = memvault.add("My sister is called Ana", llm=ScriptedLLM.failing())
    assert [e.event for e in result.events] == ["ADD"] and result.notes
    assert live_texts(memvault) == ["My sister is called Ana"]


def test_garbage_from_the_reconciler_adds_the_new_facts(memvault):
    memvault.add("I'm Alice and I run", llm=llm_for(["Alice runs"]))
    llm = llm_for(["Alice runs marathons"], "I think you should <html> maybe")
    result = memvault.add("Alice: I run marathons", llm=llm)
    assert "Alice runs marathons" in live_texts(memvault) and result.notes


def test_ids_not_offered_are_ignored(memvault):
    memvault.add("I'm Alice and I run", llm=llm_for(["Alice runs"]))
    llm = llm_for(["Alice swims"], [{"fact": 0, "event": "DELETE", "id": "7"},
                                    {"fact": 0, "event": "UPDATE", "id": "99", "text": "hijack"}])
    memvault.add("Alice: I swim", llm=llm)
    assert live_texts(memvault) == ["Alice runs", "Alice swims"]


def test_a_target_deleted_meanwhile_turns_update_into_add(memvault):
    memvault.add("Alice: I like tea", llm=llm_for(["Alice likes tea"]))
    target = memvault.list(role="memory").entries[0][1]

    def decide(prompt):
        memvault.delete([target.id])  # another process deletes it while the LLM thinks
        return json.dumps([{"fact": 0, "event": "UPDATE", "id": "0", "text": "Alice likes black tea"}])

    memvault.add("Alice here: I like black tea in fact", llm=llm_for(["Alice likes black tea"], decide))
    assert live_texts(memvault) == ["Alice likes black tea"]


def test_without_an_llm_add_is_verbatim_and_says_so(memvault):
    result = memvault.add("Just store this")
    assert [e.event for e in result.events] == ["ADD"] and "no LLM configured" in result.notes[0]
    assert memvault.list(role="user").entries == []


def test_commit_message_is_readable(memvault, tmp_path):
    memvault.add("I'm Bob and I play chess", llm=llm_for(["Bob plays chess"]))
    subject = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=memvault.vault.root, capture_output=True,
                             text=True).stdout.strip()
    assert subject.startswith("memvault add: 1 change(s) from") and "chess" in subject
