"""A rolling summary the model wrecked is never committed (memvault.curate.summary.summary_problem): the
previous summary is kept and the new facts are added to it as lines, and the add says why."""

from __future__ import annotations

import json

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.curate.summary import summary_problem, update_summary
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "Latest user message (extract from this only):"
SUMMARY = "Previous summary:"
FACTS = ["The user lives in Galway.", "The user works as a pharmacist."]


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


@pytest.mark.parametrize("answer", [
    "The user's summary is incomplete.",  # the issue's, committed by SmolLM2
    "Summary: ",
    "<summary of the conversation>",
    "The user lives in Galway. The user lives in Galway. The user lives in Galway lives Galway lives Galway.",
    "What else does the user do?",
    "I am a helpful assistant. I am here to help you with anything you need today.",
])
def test_a_wrecked_summary_is_refused_and_the_facts_are_kept_as_lines(answer):
    notes: list[str] = []
    got = update_summary(ScriptedLLM.always(answer), "The user has a dog.", FACTS, "default", notes)
    assert got == "The user has a dog.\n- The user lives in Galway.\n- The user works as a pharmacist."
    assert notes and notes[0].startswith("the summary the LLM wrote was refused (")


@pytest.mark.parametrize("answer", [
    "The user has a dog, lives in Galway and works as a pharmacist.",
    "Has a dog; lives in Galway; pharmacist by trade.",
    "- dog owner\n- lives in Galway\n- works as a pharmacist",
])
def test_a_summary_of_what_was_said_is_kept(answer):
    notes: list[str] = []
    assert update_summary(ScriptedLLM.always(answer), "The user has a dog.", FACTS, "default", notes) == answer
    assert notes == []


def test_the_issue_summary_is_not_committed_by_an_add(memvault):
    llm = ScriptedLLM([(EXTRACT, json.dumps(["The user lives in Galway."])),
                       (SUMMARY, "The user's summary is incomplete.")], default="[]")
    result = memvault.add("I live in Galway.", llm=llm)
    assert [e.event for e in result.events] == ["ADD"]
    assert memvault.summary("default").text == "- The user lives in Galway."
    assert any("summary the LLM wrote was refused" in note for note in result.notes)


def test_the_check_names_what_is_wrong():
    assert summary_problem("The user's summary is incomplete.", "The user lives in Galway.") == \
        "it speaks of the summary, not of what the user said"
    assert summary_problem("The user keeps tigers in Paris.", "The user lives in Galway.") == \
        "changes a name, place or date: Paris is not in what the user said"
    assert summary_problem("The user keeps tigers at home.", "The user lives in Galway.") == \
        "its words are not in what it summarises"
    assert summary_problem("", "x") == "an empty answer"
    assert summary_problem("The user lives in Galway.", "The user lives in Galway.") is None


def test_a_wrecked_session_summary_is_replaced_by_the_turns_openings(memvault):
    from memvault.curate.policy import SESSION_PROMPT

    turns = ["I moved to Galway last spring.", "I work at the hospital as a pharmacist.", "My dog is called Biscuit."]
    for text in turns:
        memvault.policy_add(text, "chat", llm=ScriptedLLM(default="[]"))
    llm = ScriptedLLM([(SESSION_PROMPT[:40], "The user's summary is incomplete.")], default="[]")
    ended = memvault.end_session("chat", llm)
    assert ended.summary is not None and ended.summary.text.startswith("A session of 3 user turns: I moved to Galway")
    assert any("session summary the LLM wrote was refused" in note for note in ended.notes)


# -- judged by meaning (with the embedder): an abstractive summary is kept, a wrong one refused ----------
TRAVEL = ["The user flew to Tokyo in March.", "The user's sister Ana lives in Porto.",
          "The user went hiking in the Alps with their father."]


@pytest.fixture(scope="module")
def embedder():
    from memvault.models.embedders import load_embedder

    return load_embedder("minilm")


@pytest.mark.parametrize("answer", [
    "The user talks about travel and family.",
    "The user enjoys travelling and spending time with family.",
    "The user travels a lot: Tokyo in March, the Alps with their father; their sister Ana lives in Porto.",
])
def test_an_abstractive_summary_is_kept(answer, embedder):
    notes: list[str] = []
    assert update_summary(ScriptedLLM.always(answer), None, TRAVEL, "default", notes, embedder) == answer
    assert notes == []


@pytest.mark.parametrize(("answer", "why"), [
    ("The user likes cooking and gardening.", "not close in meaning"),
    ("I am a helpful assistant. I am here to help you with anything you need today.", "not close in meaning"),
    ("Answer in the third person, concisely, as plain prose or short bullet lines.", "the prompt's instructions"),
    ("The user's summary is incomplete.", "speaks of the summary"),
    ("The user lives in Porto and travels.", "another person's"),
    ("The user flew to Osaka in March.", "Osaka is not in what the user said"),
    ("The user flew to Tokyo in May.", "May is not in what the user said"),
    ("The user has never been to Tokyo.", "adds a negation"),
    ("The user went to Lima.", "Lima is not in what the user said"),
    ("The user travels. The user travels. The user travels.", "loop"),
])
def test_a_summary_that_says_what_its_input_does_not_is_refused(answer, why, embedder):
    problem = summary_problem(answer, "\n".join(TRAVEL), embedder)
    assert problem is not None and why in problem, problem


# A session summary SmolLM2 wrote began "In a moment of pure bliss, ...": a phrase of its own, set off by a
# comma, that the rest of the sentence (close to the turns) carried through.
HIKE = "I went hiking with my kids on Saturday.\nWe saw a waterfall and had a picnic."


@pytest.mark.parametrize("answer", [
    "In a moment of pure bliss, the user went hiking with their kids on Saturday and saw a waterfall.",
    "The user went hiking with their kids on Saturday, a day of pure joy and wonder.",
    "Feeling deeply grateful and at peace: the user hiked with the kids and had a picnic.",
])
def test_an_embellishment_set_off_in_a_sentence_is_refused(answer, embedder):
    assert (summary_problem(answer, HIKE, embedder) or "").startswith("adds what it does not summarise"), answer


@pytest.mark.parametrize("answer", [
    "The user spent Saturday outdoors with family, hiking and picnicking by a waterfall.",
    "Weekend outing: the user hiked with the kids, saw a waterfall, had a picnic.",
    "On Saturday, the user went hiking with the kids; they saw a waterfall.",
])
def test_phrases_that_say_what_was_said_in_other_words_are_kept(answer, embedder):
    assert summary_problem(answer, HIKE, embedder) is None


def test_a_failing_embedder_leaves_the_words_to_judge():
    class Broken:
        def embed(self, texts, kind="passage"):
            raise RuntimeError("model file gone")

    assert summary_problem("The user flew to Tokyo and hiked in the Alps.", "\n".join(TRAVEL), Broken()) is None
    assert summary_problem("The user talks about travel and family.", "\n".join(TRAVEL), Broken()) == \
        "its words are not in what it summarises"


def test_a_plan_may_be_named_but_not_said_to_have_happened(embedder):
    turns = "I'm planning a trip to Oslo\nI want to see the fjords"
    assert summary_problem("Oslo trip.", turns, embedder) is None
    assert summary_problem("The user plans a trip to Oslo to see the fjords.", turns, embedder) is None
    assert "plan stated as past" in summary_problem("The user went on a trip to Oslo.", turns, embedder)
