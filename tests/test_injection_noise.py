"""What a prompt injects is the user's knowledge, not noise (memvault.converse.knowledge, converse.prompt.gather):
a real vault (files, git, index, MiniLM) that holds the user's facts, their own earlier questions, the
model's refused, empty and looping answers, and requests; the injected block holds the facts."""

from __future__ import annotations

import pytest

from memvault import settings as settings_module
from memvault.converse import ChatTurn, MemoryChat
from memvault.converse.knowledge import noise
from memvault.converse.prompt import MEMORY_HEADER, gather
from memvault.core import Memvault
from memvault.vault.format.entry import Entry

FACTS = ["The user's dog is called Biscuit.", "The user's sister Ana lives in Porto.",
         "The user plays the cello on Thursdays."]
STATED = "I drive a green Renault Clio, it's old but reliable."
# What a new user and SmolLM2 left in the vault: the user's questions and requests, the model's non-answers.
NOISE = [
    ("user", "What is my dog called?"),
    ("assistant", "I'm sorry, but I don't have any information about your dog's name."),
    ("user", "what is my dog called"),
    ("assistant", "The name of your dog is not mentioned in the text."),
    ("user", "Write me a short poem about my dog."),
    ("assistant", "Dog dog dog. " * 60),
    ("user", "Can you tell me where my sister lives?"),
    ("assistant", "What would you like to know about your sister?"),
    ("user", "Thanks, that was helpful!"),
]


@pytest.fixture
def vault(tmp_path):
    core = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    core.add_entries([Entry(text=text) for text in FACTS], "facts")
    for role, text in NOISE:
        core.add_entries([Entry(text=text, role=role)], f"a {role} turn")
    MemoryChat(core, "default").persist(ChatTurn(messages=[]), STATED, "Nice, a Clio is a good car.")
    yield core
    core.close()


def injected(core, question: str, top_k: int = 5) -> list[tuple[str, str]]:
    return [(hit.role, hit.text) for hit in gather(core, question, "default", {}, {"top_k": top_k}).memories]


def test_the_injected_block_holds_the_facts_not_the_questions_and_junk_answers(vault):
    shown = injected(vault, "What is my dog called?")
    assert ("memory", "The user's dog is called Biscuit.") in shown
    assert not [item for item in shown if item in NOISE], shown
    assert all(noise(role, text) is None for role, text in shown)
    # the same through the chat's and the proxy's one prompt assembly
    sent = MemoryChat(vault, "default").prepare([{"role": "user", "content": "What is my dog called?"}])
    block = sent.messages[-1]["content"].split(MEMORY_HEADER)[1]
    assert "[memory] The user's dog is called Biscuit." in block
    assert "I'm sorry" not in block and "not mentioned" not in block and "[user] What is my dog called?" not in block


def test_the_noise_left_out_does_not_leave_the_prompt_short(vault):
    """With room for two, the two facts closest to the question are shown, although the questions and
    non-answers that resemble it more were found first."""
    shown = injected(vault, "Where does my sister live and what is my dog called?", top_k=2)
    assert sorted(text for _, text in shown) == ["The user's dog is called Biscuit.",
                                                 "The user's sister Ana lives in Porto."]


def test_what_the_user_stated_in_a_turn_is_still_injected(vault):
    shown = injected(vault, "What car do I drive?")
    assert ("user", STATED) in shown
    assert ("assistant", "Nice, a Clio is a good car.") in shown
    assert shown.index(("user", STATED)) < shown.index(("assistant", "Nice, a Clio is a good car."))


@pytest.mark.parametrize("role,text", [
    ("user", "What's the weather like in Galway?"),
    ("user", "how do I cook rice"),
    ("user", "Summarise the text above."),
    ("user", "Please write a cover letter for me."),
    ("user", "Hello! Good morning."),
    ("user", "/forget 1f2e"),
    ("assistant", "I cannot know that, as an AI language model."),
    ("assistant", "Sorry, I don't know your name."),
    ("assistant", "Your sister's name is not provided in the conversation."),
    ("assistant", "The answer is " + "the answer is " * 80),
    ("assistant", "Is there anything else I can help you with?"),
])
def test_questions_requests_small_talk_and_non_answers_are_noise(role, text):
    assert noise(role, text) is not None


@pytest.mark.parametrize("role,text", [
    ("user", "I moved to Denver last summer. Any tips for the winter?"),
    ("user", "Please remember that I'm vegetarian."),
    ("user", "My dad's birthday is the 3rd of August."),
    ("user", "Ich wohne in Berlin."),
    ("user", "我住在北京。"),
    ("assistant", "Your sister Ana lives in Porto."),
    ("memory", "What the user asked about?"),  # facts are the curator's to judge, never dropped here
    ("summary", "Sorry is the user's cat."),
])
def test_statements_facts_and_summaries_are_knowledge(role, text):
    assert noise(role, text) is None
