"""Semantic facts as triples: the optional front matter fields, extraction that returns them, curated adds
that store them, bump / supersede / coexist in reconciliation, and the prompt line `[category] text`
(the fact's text is what the model reads; a triple that contradicts it never reaches the graph).
Real vault, git, index and MiniLM; a scripted LLM judges."""

from __future__ import annotations

import json
from types import SimpleNamespace

import httpx
import pytest

from memvault import settings
from memvault.converse.prompt import gather, memory_line, render
from memvault.core import Memvault
from memvault.curate.extract import parse_fact_records
from memvault.curate.reconcile import Decision, reconcile
from memvault.vault.format.entry import Entry, text_hash
from memvault.vault.format.markdown import parse
from memvault.vault.format.markdown import render as render_entry
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "Latest user message (extract from this only):"
RECONCILE = "Stored memories:"
SUMMARY = "Previous summary:"
ANA = {"text": "The user's sister is called Ana.", "category": "relationship", "subject": "user",
       "predicate": "HAS_SISTER", "object": "Ana", "evidence": "my sister Ana"}


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def llm_for(facts, decisions=None) -> ScriptedLLM:
    rules = [(EXTRACT, json.dumps(facts)), (SUMMARY, "The user has a sister.")]
    if decisions is not None:
        rules.insert(1, (RECONCILE, json.dumps(decisions)))
    return ScriptedLLM(rules, default="[]")


def test_triple_fields_round_trip_in_front_matter_and_stay_optional():
    entry = Entry(text=ANA["text"], **{k: v for k, v in ANA.items() if k != "text"})
    text = render_entry(entry)
    assert "subject: user\npredicate: HAS_SISTER\nobject: Ana\nevidence: my sister Ana\n" in text
    assert parse(text) == entry and parse(text).triple == {k: v for k, v in ANA.items() if k != "text"}
    plain = parse("---\nid: 11111111-1111-4111-8111-111111111111\nrole: memory\nconversation_id: default\n"
                  "created_at: 2026-11-01T10:00:00Z\n---\nAlice likes tea.\n")
    assert plain.triple is None and plain.subject is None
    partial = plain.replace(subject="Alice", category="preference")  # no predicate: kept, but not a triple
    assert parse(render_entry(partial)).subject == "Alice" and parse(render_entry(partial)).triple is None


def test_extraction_reads_triples_and_still_takes_plain_strings():
    answer = json.dumps([ANA, "The user lives in Lisbon.",
                         {"text": "The user likes jazz.", "subject": "user", "predicate": "LIKES"},  # no object
                         {"text": "The user works at Acme.", "subject": "user", "predicate": "WORKS_AT",
                          "object": "x" * 300}])  # not a name
    facts = parse_fact_records(answer)
    assert [fact.text for fact in facts] == [ANA["text"], "The user lives in Lisbon.", "The user likes jazz.",
                                             "The user works at Acme."]
    assert facts[0].triple == {k: v for k, v in ANA.items() if k != "text"}
    assert [fact.triple for fact in facts[1:]] == [{}, {}, {}]


def test_a_curated_add_stores_the_triple_and_the_prompt_shows_the_fact_line(memvault):
    result = memvault.add("My sister Ana is visiting next week", llm=llm_for([ANA]))
    [event] = result.events
    _, stored = memvault.get(event.id)
    assert (stored.category, stored.subject, stored.predicate, stored.object, stored.evidence) == (
        "relationship", "user", "HAS_SISTER", "Ana", "my sister Ana")
    context = gather(memvault, "who is Ana?", "default", {})
    assert [memory_line(hit) for hit in context.memories] == [
        f"[relationship] {ANA['text']}", "[user] My sister Ana is visiting next week"]
    assert f"[relationship] {ANA['text']}" in render(context, "who is Ana?")
    relations = memvault.relations("who is Ana?")  # the graph follows extracted triples too
    assert [(r.source, r.relationship, r.destination) for r in relations] == [("user", "has_sister", "ana")]


def test_a_fact_without_a_triple_reads_as_before():
    hit = SimpleNamespace(role="memory", text="Alice likes tea.", triple=None)
    assert memory_line(hit) == "[memory] Alice likes tea."
    bare = SimpleNamespace(role="memory", text="-", triple={"subject": "Alice", "predicate": "lives in",
                                                            "object": "Lisbon"})
    assert memory_line(bare) == "[memory] -"  # the text, whatever the triple says


FACTS = ["The user loves sushi.", "The user likes jazz.", "The user lives in Berlin."]
PIZZA = ("m-pizza", "The user likes pizza.")
JAZZ = ("m-jazz", "The user likes jazz music.")
PARIS = ("m-paris", "The user lives in Paris.")


def test_bump_supersede_coexist_map_onto_none_update_add():
    neighbours = {FACTS[0]: [PIZZA], FACTS[1]: [JAZZ], FACTS[2]: [PARIS]}
    stored = {text_hash(text) for _, text in (PIZZA, JAZZ, PARIS)}
    answer = json.dumps([{"fact": 0, "event": "COEXIST", "text": FACTS[0]},
                         {"fact": 1, "event": "BUMP", "id": "1"},
                         {"fact": 2, "event": "SUPERSEDE", "id": "2"}])  # no text: the new fact replaces it
    plan = reconcile(ScriptedLLM.always(answer), FACTS, neighbours, stored)
    assert plan.decisions == [
        Decision("ADD", None, None, FACTS[0]),
        Decision("UPDATE", "m-paris", PARIS[1], FACTS[2]),
        Decision("NONE", "m-jazz", JAZZ[1], FACTS[1]),
    ]
    assert plan.notes == []


def test_a_superseding_fact_carries_its_own_triple(memvault):
    old = {"text": "The user lives in Paris.", "category": "location", "subject": "user", "predicate": "LIVES_IN",
           "object": "Paris", "evidence": "I live in Paris"}
    memvault.add("I live in Paris", llm=llm_for([old]))
    new = {**old, "text": "The user lives in Berlin.", "object": "Berlin", "evidence": "I moved to Berlin"}
    result = memvault.add("I moved to Berlin, I live there now", llm=llm_for(
        [new], [{"fact": 0, "event": "SUPERSEDE", "id": "0", "text": "The user lives in Berlin, not Paris."}]))
    [update] = [e for e in result.events if e.event == "UPDATE"]
    _, entry = memvault.get(update.id)
    assert entry.text == "The user lives in Berlin, not Paris."
    assert (entry.object, entry.evidence) == ("Berlin", "I moved to Berlin")
    assert [r.destination for r in memvault.relations("where does the user live")] == ["berlin"]


def test_the_proxy_sends_rules_and_fact_lines_upstream(tmp_path):
    """Through the real proxy: a recording upstream shows the rules section, then the fact as its line."""
    from memvault.converse.prompt import RULES_HEADER
    from memvault.server.run import running
    from tests.support.server import isolated_env, server_settings
    from tests.support.upstream import Upstream, serving

    upstream = Upstream()
    with serving(upstream.app()) as root, isolated_env(tmp_path / "home"):
        settings = server_settings(tmp_path / "vault", root + "/v1", "openai/fake", llm_key="upstream-key")
        core = Memvault.open(settings, create=True)
        core.add_rule("Answer in British English.", conversation="family")
        fact = Entry(text=ANA["text"], conversation_id="family", **{k: v for k, v in ANA.items() if k != "text"})
        core.add_entries([fact], "a fact with its triple")
        core.close()
        with running(settings) as url:
            reply = httpx.post(url + "/v1/chat/completions", timeout=120, json={
                "model": "openai/fake", "messages": [{"role": "user", "content": "Who is my sister?"}],
                "memory_id": "family", "memory_score_threshold": 0.0})
            assert reply.status_code == 200, reply.text
    sent = upstream.chat_requests()[0]["messages"][-1]["content"]
    assert f"{RULES_HEADER}\n- Answer in British English." in sent
    assert f"[relationship] {ANA['text']}" in sent and "HAS_SISTER" not in sent
    assert sent.index(RULES_HEADER) < sent.index(ANA["text"]) < sent.index("Current message: Who is my sister?")


def test_a_new_text_drops_the_old_triple_and_its_relation(memvault):
    fact = Entry(text=ANA["text"], **{k: v for k, v in ANA.items() if k != "text"})
    memvault.add_entries([fact], "a fact with its triple")
    assert [r.destination for r in memvault.relations("my sister")] == ["ana"]
    memvault.update(fact.id, metadata={"topic": "family"})  # same text: the triple still describes it
    assert memvault.get(fact.id)[1].triple is not None
    updated = memvault.update(fact.id, text="The user has no sister.")
    assert updated.triple is None and memvault.get(fact.id)[1].subject is None
    assert memvault.relations("my sister") == []


def test_a_triple_that_copies_placeholders_is_not_stored_but_its_fact_is(memvault):
    """SmolLM2 through the proxy (a newcomer's trial) wrote `predicate: <relocated_to>`, `object: <user>`
    for "The user relocated to Denver.": the user twice, and the prompt's `<placeholders>`."""
    copied = {"text": "The user relocated to Denver.", "subject": "the user", "predicate": "<relocated_to>",
              "object": "<user>"}
    result = memvault.add("I relocated to Denver over the summer", llm=llm_for([copied]))
    [event] = result.events
    _, stored = memvault.get(event.id)
    assert stored.text == "The user relocated to Denver."
    assert (stored.subject, stored.predicate, stored.object) == (None, None, None)
    assert memvault.relations("Denver") == []


def test_a_triple_naming_the_user_twice_is_not_a_relation():
    from memvault.text.wording import triple_problem

    assert triple_problem("The user relocated to Denver.", {"subject": "the user", "predicate": "RELOCATED_TO",
                                                          "object": "user"}) is not None
    assert triple_problem("The user relocated to Denver.", {"subject": "the user", "predicate": "RELOCATED_TO",
                                                          "object": "Denver"}) is None
