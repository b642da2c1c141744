"""Chat with memory: injection order, turns persisted, curation after the reply."""

import json

import pytest

from memvault import settings
from memvault.converse import MemoryChat, MemoryContext, inject
from memvault.converse.prompt import CURRENT_HEADER, MEMORY_HEADER, SUMMARY_HEADER
from memvault.core import Memvault
from memvault.vault.format.entry import Entry
from tests.support.scripted_llm import ScriptedLLM


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


class FakeHit:
    def __init__(self, role, text):
        self.role, self.text = role, text


def test_injection_order_summary_then_memories_then_current_message():
    messages = [{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "reply"},
                {"role": "user", "content": "What tea do I like?"}]
    out = inject(messages, MemoryContext(summary="Alice talks about tea.",
                                         memories=[FakeHit("memory", "Alice likes green tea"),
                                                   FakeHit("user", "I drink it daily")]))
    assert out[0]["role"] == "system" and out[1:3] == messages[:2]
    text = out[-1]["content"]
    assert text.index(SUMMARY_HEADER) < text.index(MEMORY_HEADER) < text.index(CURRENT_HEADER)
    assert "[memory] Alice likes green tea\n[user] I drink it daily" in text
    assert text.endswith("Current message: What tea do I like?")
    assert messages[-1]["content"] == "What tea do I like?"  # the caller's list is not changed


def test_a_chat_turn_retrieves_injects_persists_and_curates(memvault):
    memvault.add_entries([Entry("Alice likes green tea")], "seed")
    llm = ScriptedLLM([("Latest user message", json.dumps(["The user is visiting Kyoto in May"])),
                       ("Previous summary:", "The user travels to Kyoto in May.")],
                      default="You could try a tea house in Kyoto.")
    chat = MemoryChat(memvault, "default")
    history = [{"role": "user", "content": "I'm visiting Kyoto in May, what should I drink?"}]
    turn = chat.prepare(history)
    sent = turn.messages[-1]["content"]
    assert "[memory] Alice likes green tea" in sent and sent.endswith(history[0]["content"])
    answer = "".join(llm.stream(turn.messages))
    chat.persist(turn, history[0]["content"], answer)
    assert [e.text for _, e in memvault.list(role="user").entries] == [history[0]["content"]]
    assert [e.text for _, e in memvault.list(role="assistant").entries] == [answer]
    assert memvault.log(1)[0].trailers["Operation"] == ["chat"]
    chat.curate(turn, history, llm)
    chat.wait(60)
    assert not chat.errors
    assert "The user is visiting Kyoto in May" in [e.text for _, e in memvault.list(role="memory").entries]
    assert memvault.vault.summary("default").text == "The user travels to Kyoto in May."
    # The user turn was stored once, by persist, not again by curation.
    assert len(memvault.list(role="user").entries) == 1
    # The next turn finds what the last one learned.
    assert any("Kyoto" in h.text for h in chat.prepare([{"role": "user", "content": "Kyoto trip?"}]).hits)


def test_no_memory_neither_retrieves_nor_stores(memvault):
    memvault.add_entries([Entry("secret fact")], "seed")
    chat = MemoryChat(memvault, use_memory=False)
    turn = chat.prepare([{"role": "user", "content": "secret?"}])
    assert turn.hits == [] and "Long-term memory" not in json.dumps(turn.messages)
    chat.persist(turn, "secret?", "no idea")
    assert memvault.list(role="user").entries == []
