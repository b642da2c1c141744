"""Reconciliation: the LLM's ADD / UPDATE / DELETE / NONE mapped back to memories, and every safeguard."""

import json

from memvault.curate import prompts
from memvault.curate.reconcile import Decision, reconcile
from memvault.vault.format.entry import text_hash
from tests.support.scripted_llm import ScriptedLLM

PIZZA = ("m-pizza", "The user likes pizza.")
PARIS = ("m-paris", "The user lives in Paris.")
CRICKET = ("m-cricket", "The user likes cricket.")


def hashes(*memories):
    return {text_hash(text) for _, text in memories}


def answer(*events):
    return json.dumps(list(events))


def run(reply, facts, neighbours, stored=None):
    """reconcile() with a scripted reply; returns (plan, llm)."""
    llm = reply if isinstance(reply, ScriptedLLM) else ScriptedLLM.always(reply)
    stored = stored if stored is not None else hashes(*[m for near in neighbours.values() for m in near])
    return reconcile(llm, facts, neighbours, stored), llm


def short_ids(call):
    """{stored text: short id} as the prompt showed them."""
    stored = call.messages[1]["content"].split("Stored memories:\n")[1].split("\n\nNew facts:")[0]
    return {line.split(": ", 1)[1]: line.split(": ", 1)[0] for line in stored.splitlines()}


def test_prompt_shows_candidates_once_with_short_ids_and_numbered_facts():
    facts = ["The user no longer likes pizza.", "The user moved to Berlin."]
    neighbours = {facts[0]: [PIZZA, PARIS], facts[1]: [PARIS, CRICKET]}
    plan, llm = run("[]", facts, neighbours)
    [call] = llm.calls
    assert call.json_schema == prompts.bounded(prompts.RECONCILIATION_SCHEMA, 4, prompts.MAX_FACT_CHARS)
    assert short_ids(call) == {PIZZA[1]: "0", PARIS[1]: "1", CRICKET[1]: "2"}
    assert "fact 0: The user no longer likes pizza.\nfact 1: The user moved to Berlin." in call.prompt
    assert "m-pizza" not in call.prompt  # real ids never reach the LLM


def test_add_update_delete_none_map_short_ids_back():
    facts = ["The user has a dog called Rex.", "The user moved to Berlin.", "The user hates cricket.", "Pizza fan."]
    neighbours = {facts[0]: [CRICKET], facts[1]: [PARIS], facts[2]: [CRICKET], facts[3]: [PIZZA]}
    reply = answer(
        {"fact": 0, "event": "ADD", "text": facts[0]},
        {"fact": 1, "event": "UPDATE", "id": "1", "text": "The user lives in Berlin."},
        {"fact": 2, "event": "DELETE", "id": "0"},
        {"fact": 2, "event": "ADD", "text": facts[2]},
        {"fact": 3, "event": "NONE", "id": "2"},
    )
    plan, _ = run(reply, facts, neighbours)
    assert plan.decisions == [
        Decision("ADD", None, None, facts[0]),
        Decision("UPDATE", "m-paris", PARIS[1], "The user lives in Berlin."),
        Decision("DELETE", "m-cricket", CRICKET[1], None),
        Decision("ADD", None, None, facts[2]),
        Decision("NONE", "m-pizza", PIZZA[1], facts[3]),
    ]
    assert plan.notes == []
    assert [d.event for d in plan.changes] == ["ADD", "UPDATE", "DELETE", "ADD"]


def test_ids_not_offered_are_ignored_and_the_fact_is_still_stored():
    fact = "The user lives in Rome."
    reply = answer(
        {"fact": 0, "event": "UPDATE", "id": "7", "text": fact},
        {"fact": 0, "event": "DELETE", "id": "m-paris"},  # a real id: never shown, never accepted
        {"fact": 0, "event": "DELETE"},
    )
    plan, _ = run(reply, [fact], {fact: [PARIS]})
    assert plan.decisions == [Decision("ADD", None, None, fact)]
    assert any("ignored 3" in note for note in plan.notes)
    assert any("did not account for 1 fact" in note for note in plan.notes)


def test_exact_duplicates_are_none_without_asking_the_llm():
    llm = ScriptedLLM.always(answer({"fact": 0, "event": "ADD", "text": "should not be asked"}))
    facts = [PIZZA[1], PARIS[1], PARIS[1]]
    plan = reconcile(llm, facts, {PIZZA[1]: [PIZZA], PARIS[1]: [CRICKET]}, hashes(PIZZA, PARIS))
    assert llm.calls == []
    assert plan.decisions == [
        Decision("NONE", "m-pizza", PIZZA[1], PIZZA[1]),
        Decision("NONE", None, None, PARIS[1]),  # stored, but not among its neighbours
        Decision("NONE", None, None, PARIS[1]),
    ]


def test_a_fact_repeated_within_the_batch_is_added_once():
    fact = "The user plays chess."
    plan, llm = run("unused", [fact, "  " + fact + " ", ""], {}, stored=set())
    assert llm.calls == []
    assert plan.decisions == [Decision("ADD", None, None, fact), Decision("NONE", None, None, fact)]


def test_facts_without_neighbours_are_added_without_asking():
    facts = ["The user plays chess.", "The user likes pizza a lot."]
    plan, llm = run(answer({"fact": 0, "event": "NONE", "id": "0"}), facts, {facts[1]: [PIZZA]})
    assert len(llm.calls) == 1
    assert "The user plays chess." not in llm.calls[0].prompt
    assert "fact 0: The user likes pizza a lot." in llm.calls[0].prompt
    assert plan.decisions == [
        Decision("ADD", None, None, facts[0]),
        Decision("NONE", "m-pizza", PIZZA[1], facts[1]),
    ]


def test_llm_failure_adds_every_new_fact_and_says_so():
    facts = ["The user likes pizza with pineapple.", "The user lives in Paris now.", PIZZA[1]]
    neighbours = {facts[0]: [PIZZA], facts[1]: [PARIS]}
    plan, llm = run(ScriptedLLM.failing("LLM x at y failed: boom"), facts, neighbours, stored=hashes(PIZZA, PARIS))
    assert len(llm.calls) == 1
    assert plan.decisions == [
        Decision("NONE", None, None, PIZZA[1]),
        Decision("ADD", None, None, facts[0]),
        Decision("ADD", None, None, facts[1]),
    ]
    assert plan.notes == ["LLM failed: LLM x at y failed: boom; stored 2 fact(s) as given"]


def test_no_llm_configured_adds_as_given():
    fact = "The user likes pizza with pineapple."
    plan = reconcile(None, [fact], {fact: [PIZZA]}, hashes(PIZZA))
    assert plan.decisions == [Decision("ADD", None, None, fact)]
    assert plan.notes == ["no LLM configured; stored 1 fact(s) as given"]


def test_garbage_answer_adds_every_new_fact():
    fact = "The user likes pizza with pineapple."
    for garbage in ("I think you should keep them all!", '{"event": "ADD"', "42", '"ADD"'):
        plan, _ = run(garbage, [fact], {fact: [PIZZA]})
        assert plan.decisions == [Decision("ADD", None, None, fact)], garbage
        assert plan.notes, garbage


def test_empty_answer_adds_every_new_fact():
    fact = "The user likes pizza with pineapple."
    for empty in ("[]", '{"memory": []}', ""):
        plan, _ = run(empty, [fact], {fact: [PIZZA]})
        assert plan.decisions == [Decision("ADD", None, None, fact)], empty
        assert plan.notes


def test_delete_only_answer_keeps_the_deletes_and_still_adds_the_facts():
    fact = "The user does not like pizza any more."
    plan, _ = run(answer({"fact": 0, "event": "DELETE", "id": "0"}), [fact], {fact: [PIZZA]})
    assert plan.decisions == [Decision("DELETE", "m-pizza", PIZZA[1], None), Decision("ADD", None, None, fact)]
    assert any("did not account for 1 fact" in note for note in plan.notes)


def test_a_fact_the_answer_forgets_is_added():
    facts = ["The user moved to Berlin.", "The user adopted a cat."]
    reply = answer({"fact": 0, "event": "UPDATE", "id": "0", "text": "The user lives in Berlin."})
    plan, _ = run(reply, facts, {facts[0]: [PARIS], facts[1]: [PARIS]})
    assert plan.decisions == [
        Decision("UPDATE", "m-paris", PARIS[1], "The user lives in Berlin."),
        Decision("ADD", None, None, facts[1]),
    ]


def test_the_first_update_or_delete_of_a_memory_wins():
    fact = "The user moved to Berlin."
    reply = answer(
        {"fact": 0, "event": "UPDATE", "id": "0", "text": "The user lives in Berlin."},
        {"fact": 0, "event": "UPDATE", "id": "0", "text": "The user lives in Munich."},
        {"fact": 0, "event": "DELETE", "id": "0"},
    )
    plan, _ = run(reply, [fact], {fact: [PARIS]})
    assert plan.decisions == [Decision("UPDATE", "m-paris", PARIS[1], "The user lives in Berlin.")]
    assert any("ignored 2" in note for note in plan.notes)


def test_update_with_empty_text_is_none_and_the_fact_is_kept():
    fact = "The user moved to Berlin."
    plan, _ = run(answer({"fact": 0, "event": "UPDATE", "id": "0", "text": "  "}), [fact], {fact: [PARIS]})
    assert plan.decisions == [Decision("ADD", None, None, fact)]
    assert not [d for d in plan.decisions if d.memory_id == "m-paris"]


def test_events_without_fact_numbers_are_tied_to_facts_by_neighbours_and_words():
    facts = ["The user moved to Berlin.", "The user adopted a cat named Tom."]
    reply = answer(
        {"event": "UPDATE", "id": "0", "text": "The user lives in Berlin."},
        {"event": "ADD", "text": "The user has a cat named Tom."},
    )
    plan, _ = run(reply, facts, {facts[0]: [PARIS], facts[1]: [CRICKET]})
    assert plan.decisions == [
        Decision("UPDATE", "m-paris", PARIS[1], "The user lives in Berlin."),
        Decision("ADD", None, None, "The user has a cat named Tom."),
    ]
    assert plan.notes == []


def test_mem0_style_answer_wrapped_in_a_memory_key_and_fenced():
    fact = "The user loves pizza."
    reply = '```json\n{"memory": [{"id": "0", "text": "The user likes pizza.", "event": "NONE"}]}\n```'
    plan, _ = run(reply, [fact], {fact: [PIZZA]})
    assert plan.decisions == [Decision("NONE", "m-pizza", PIZZA[1], fact)]


# mem0's behavioural cases, at the level of planned events.

def test_mem0_deduplication():
    # Same words: settled by hash. Same meaning in other words: the LLM says NONE.
    plan, llm = run("unused", [PIZZA[1]], {PIZZA[1]: [PIZZA]})
    assert llm.calls == [] and plan.changes == []
    other = "The user enjoys pizza."
    plan, llm = run(answer({"fact": 0, "event": "NONE", "id": "0"}), [other], {other: [PIZZA]})
    assert len(llm.calls) == 1 and plan.changes == []
    assert plan.decisions == [Decision("NONE", "m-pizza", PIZZA[1], other)]


def test_mem0_update_on_contradiction():
    fact = "The user no longer likes pizza and loves sushi."
    reply = answer({"fact": 0, "event": "UPDATE", "id": "0", "text": fact})
    plan, _ = run(reply, [fact], {fact: [PIZZA]})
    assert plan.decisions == [Decision("UPDATE", "m-pizza", PIZZA[1], fact)]


def test_mem0_merge_on_refinement():
    fact = "The user loves playing cricket with friends on weekends."
    reply = answer({"fact": 0, "event": "UPDATE", "id": "0", "text": fact})
    plan, _ = run(reply, [fact], {fact: [CRICKET, PIZZA]})
    assert plan.decisions == [Decision("UPDATE", "m-cricket", CRICKET[1], fact)]
    assert plan.notes == []


def test_mem0_delete_on_negation():
    fact = "The user does not like cricket."
    reply = answer({"fact": 0, "event": "DELETE", "id": "0"}, {"fact": 0, "event": "ADD", "text": fact})
    plan, _ = run(reply, [fact], {fact: [CRICKET]})
    assert plan.decisions == [Decision("DELETE", "m-cricket", CRICKET[1], None), Decision("ADD", None, None, fact)]
    assert plan.notes == []


def test_mem0_multiple_events_per_add():
    facts = ["The user's name is Alex.", "The user moved to Berlin.", "The user likes pizza."]
    neighbours = {facts[0]: [CRICKET], facts[1]: [PARIS, CRICKET], facts[2]: [PIZZA]}
    reply = answer(
        {"fact": 0, "event": "ADD", "text": facts[0]},
        {"fact": 1, "event": "UPDATE", "id": "1", "text": "The user lives in Berlin."},
        {"fact": 1, "event": "NONE", "id": "0"},
    )
    plan, llm = run(reply, facts, neighbours)
    assert len(llm.calls) == 1  # one prompt for all facts; the exact duplicate never reaches it
    assert PIZZA[1] not in llm.calls[0].prompt
    assert plan.decisions == [
        Decision("NONE", "m-pizza", PIZZA[1], PIZZA[1]),
        Decision("ADD", None, None, facts[0]),
        Decision("UPDATE", "m-paris", PARIS[1], "The user lives in Berlin."),
    ]
