"""The token budget of injected memory (memvault.converse.budget): the issue's vault, where one stored
answer repeats a line 686 times, and "What is my sister called?" must still fit an 8,192-token model
with room for its answer; what the user said comes before what a model answered."""

from __future__ import annotations

import dataclasses

import pytest

from memvault import settings as settings_module
from memvault.converse import ChatTurn, MemoryChat
from memvault.converse.budget import (
    DEFAULT_CONTEXT,
    clip,
    context_tokens,
    estimate_tokens,
    fit,
    memory_budget,
    messages_tokens,
)
from memvault.converse.prompt import MemoryContext
from memvault.core import Memvault
from memvault.vault.format.entry import Entry

SAID = "My sister is called Ana and she lives in Porto."
LOOPING = "Your sister is called Ana.\n" + "I am a helpful assistant and I am here to help.\n" * 686
QUESTION = [{"role": "user", "content": "What is my sister called?"}]


@pytest.fixture
def vault(tmp_path):
    core = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    MemoryChat(core, "default").persist(ChatTurn(messages=[]), SAID, LOOPING)
    core.add_entries([Entry(f"The user's note number {n}: bring the blue umbrella to work on rainy days " * 3)
                      for n in range(30)], "seed notes")
    core.settings.retrieval.score_threshold = 0.0
    core.settings.retrieval.top_k = 20
    yield core
    core.close()


def test_the_issue_prompt_fits_the_context_with_room_for_the_answer(vault):
    turn = MemoryChat(vault, "default").prepare(QUESTION)
    sent = turn.messages[-1]["content"]
    budget = memory_budget(vault.settings, QUESTION)
    assert messages_tokens(turn.messages) - messages_tokens(QUESTION) <= budget + 100  # headers and system prompt
    assert messages_tokens(turn.messages) + vault.settings.llm.max_tokens <= DEFAULT_CONTEXT
    assert sent.count("I am a helpful assistant") == 0  # the stored loop is cut where it began
    assert "[assistant] Your sister is called Ana." in sent and SAID in sent


def test_a_small_context_leaves_the_least_trusted_memories_out(vault):
    vault.settings.prompt.context_tokens = 2_048
    vault.settings.llm.max_tokens = 512
    turn = MemoryChat(vault, "default").prepare(QUESTION)
    assert messages_tokens(turn.messages) + 512 <= 2_048
    assert 0 < len(turn.hits) < 20 and SAID in turn.messages[-1]["content"]


def test_what_the_user_said_comes_before_what_a_model_answered(vault):
    roles = [hit.role for hit in MemoryChat(vault, "default").prepare(QUESTION).hits]
    assert "assistant" in roles and roles.index("user") < roles.index("assistant")
    assert roles[roles.index("assistant"):] == ["assistant"] * roles.count("assistant")


def test_a_long_memory_is_clipped_at_a_word_and_marked():
    text = " ".join(f"word{n}" for n in range(1_000))
    clipped = clip(text, 50)
    assert clipped.endswith(" …") and estimate_tokens(clipped) <= 50 and text.startswith(clipped[:-2])


@dataclasses.dataclass
class Hit:
    role: str
    text: str


def test_the_budget_is_spent_in_order_of_trust():
    context = MemoryContext(core=[("USER.md", "u" * 300)], rules=["Answer in English."],
                            latest_session="s" * 300, summary="m" * 300,
                            memories=[Hit("user", "a" * 300), Hit("memory", "b" * 300)])
    fitted = fit(context, budget=estimate_tokens("u" * 300) + 150, item_tokens=300)
    assert fitted.rules == ["Answer in English."] and fitted.core == context.core
    assert [h.text for h in fitted.memories] == ["a" * 300]
    assert fitted.summary is None and fitted.latest_session is None


def test_the_context_size_comes_from_the_setting_then_litellm_then_the_default():
    settings = settings_module.Settings()
    assert context_tokens(settings, "openai/smollm2-135m-local") == DEFAULT_CONTEXT
    assert context_tokens(settings, "gpt-4o-mini") == 128_000
    settings.prompt.context_tokens = 4_096
    assert context_tokens(settings, "gpt-4o-mini") == 4_096


def test_a_request_that_fills_the_context_gets_no_memory():
    settings = settings_module.Settings()
    huge = [{"role": "user", "content": "x" * 30_000}]
    assert memory_budget(settings, huge) == 0


def test_a_long_history_is_compacted_before_it_overflows_the_model(vault):
    # Open WebUI resent 29.5k characters of history to an 8,192-token model: compacted now, not sent whole
    history = [{"role": role, "content": f"{role} message {n}: " + "about bees and hives " * 60}
               for n in range(12) for role in ("user", "assistant")] + QUESTION
    assert 29_000 < sum(len(m["content"]) for m in history) < vault.settings.compaction.max_chars
    vault.settings.compaction.max_messages = 100  # the message count alone would not compact it
    turn = MemoryChat(vault, "default").prepare(history)
    assert turn.history is not None and messages_tokens(turn.messages) + 1024 <= DEFAULT_CONTEXT
