"""A turn in which the user speaks only of someone else or of the world grounds no act or state of the user's
(curate.self_talk). The cases are written for this test, none taken from LoCoMo or from a model's output;
the last test goes through the real add path with a scripted model that writes like a weak one."""

from __future__ import annotations

import json

import pytest

from memvault.curate.extract import grounding_source
from memvault.curate.grounding import fact_problem
from memvault.curate.self_talk import asks_the_user, speaks_of_self, subject_left_out
from tests.support.scripted_llm import ScriptedLLM
from tests.test_curated_add import EXTRACT, live_texts, memvault_at

SELFLESS = "the user said nothing of themselves"


@pytest.fixture(scope="module")
def embedder():
    from memvault.models.embedders import load_embedder

    return load_embedder("minilm")


def problem(said: str, fact: str, embedder, answered: str | None = None) -> str | None:
    chat = ([{"role": "assistant", "name": "Priya", "content": answered}] if answered else [])
    return fact_problem(fact, grounding_source(chat + [{"role": "user", "content": said}], embedder=embedder))


@pytest.mark.parametrize(("said", "fact"), [
    ("Wow Priya, restoring furniture must be so satisfying!", "The user restores old furniture."),
    ("That bakery of yours sounds lovely, the sourdough especially.", "The user bakes sourdough at their bakery."),
    ("Sounds like a great trip! Sailing must be such an adventure.", "The user loves sailing."),
    ("Those tomatoes look amazing, growing them must take real patience.", "The user grows tomatoes."),
    ("Running a food truck sounds exhausting but fun!", "The user runs a food truck."),
    ("Raising chickens sounds like so much work.", "The user raises chickens."),
    ("Wow, your band sounds great! Playing live must be such a rush.", "Playing live is a rush. The user plays gigs."),
])
def test_an_act_of_the_users_is_not_taken_from_words_about_someone_else(said, fact, embedder):
    reason = problem(said, fact, embedder)
    assert reason is not None and SELFLESS in reason, reason


@pytest.mark.parametrize(("said", "fact"), [
    ("Been rehearsing with the choir every Tuesday.", "The user rehearses with the choir every Tuesday."),
    ("Just got back from Lisbon, what a week!", "The user just got back from Lisbon."),
    ("Didn't catch the game, but watched the highlights with Tom.", "The user watched the game's highlights with Tom."),
    ("We adopted two cats last spring.", "The user adopted two cats last spring."),
    ("Nothing beats fresh bread in the morning.", "The user loves fresh bread in the morning."),  # a taste
    ("Restoring furniture must be so satisfying!", "The user thinks restoring furniture is satisfying."),  # a view
])
def test_words_in_which_the_user_speaks_of_themselves_or_their_taste_ground_it(said, fact, embedder):
    assert problem(said, fact, embedder) is None


def test_an_answer_to_a_question_speaks_of_the_user_without_saying_i(embedder):
    said, fact = "Twelve miles, and your hills were brutal.", "The user ran twelve miles."
    assert problem(said, fact, embedder, answered="How far did you run on Sunday?") is None
    assert SELFLESS in problem(said, fact, embedder, answered="I ran on Sunday, the hills were brutal.")


def test_the_sentence_a_fact_comes_from_must_speak_of_the_user_too(embedder):
    said = "Ha, I can't wait to see it! Must feel so freeing to sail alone."
    assert SELFLESS in problem(said, "The user sails alone, which is so freeing.", embedder)
    assert problem(said, "The user can't wait to see it.", embedder) is None


def test_a_rhetorical_question_asks_the_user_nothing(embedder):
    assert not asks_the_user("Hey Jo, guess what I did? Sailed to Skye on my own!")
    assert asks_the_user("What's the name of it?") and asks_the_user("How are you doing on your goals, Sam?")
    said, fact = "No way! Must feel so freeing to sail alone.", "The user sails alone, which is so freeing."
    assert SELFLESS in problem(said, fact, embedder, answered="Guess what I did? Sailed to Skye on my own!")


@pytest.mark.parametrize(("clause", "left_out"), [
    ("Researching adoption agencies", True),
    ("Trying to get a petition going", True),
    ("Didn't see any bands", True),
    ("Having pets must be a wonderful experience.", False),  # a gerund is the subject
    ("Combining your two interests into a store is super cool", False),
    ("Amazing work!", False),
    ("Got any plans for the weekend?", False),  # a question to the other
])
def test_a_clause_without_its_subject_is_told_from_a_gerund_or_an_exclamation(clause, left_out):
    assert subject_left_out(clause) == left_out


def test_let_us_is_the_user_and_a_plain_statement_keeps_its_speaker():
    assert speaks_of_self("Let's get your studio painted!")
    assert not speaks_of_self("Wow, what a studio! Painting it must have taken ages.")
    assert speaks_of_self("The trip to Crete was amazing.")  # no reaction to anyone: the user's trip
    assert speaks_of_self("The new bakery is great, don't you think?")  # a tag question reacts to no one


@pytest.fixture
def memvault(tmp_path):
    yield from memvault_at(tmp_path)


def test_a_weak_models_invention_from_a_compliment_is_dropped_with_its_reason(memvault):
    written = ["The user restores old furniture in their garage.", "The user thinks restoring furniture is satisfying."]
    said = "Wow Priya, restoring furniture must be so satisfying!"
    result = memvault.add(said, llm=ScriptedLLM([(EXTRACT, json.dumps(written))], default="[]"))
    assert live_texts(memvault) == ["The user thinks restoring furniture is satisfying."]
    drops = {e.new_memory: e.reason for e in result.events if e.event == "DROP"}
    assert SELFLESS in drops["The user restores old furniture in their garage."]
