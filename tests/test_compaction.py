"""Context compaction: over 20 messages or 48,000 characters, all but the last 8 become one system
message starting `[compacted]` (the LLM's summary at temperature 0 in at most 400 tokens, snippets when
it fails), in chat and through the proxy."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest

from memvault import settings as settings_module
from memvault.converse import MemoryChat
from memvault.converse.compaction import MARK, PROMPT, compact
from memvault.core import Memvault
from memvault.errors import ConfigError
from memvault.server.run import running
from memvault.settings import CompactionSettings
from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import instant_completion, serving

SUMMARY = "Alice planned a trip to Kyoto; she prefers trains."


def conversation(count: int) -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + ("about Kyoto" if i < 4
                                                                                            else "more")}
            for i in range(count)]


def test_thirty_messages_become_one_compacted_summary_and_the_last_eight():
    llm = ScriptedLLM(default=SUMMARY)
    messages = conversation(29) + [{"role": "user", "content": "message 29: so, which train?"}]
    result = compact(messages, CompactionSettings(), llm)
    assert result.folded == 22
    assert result.messages[0] == {"role": "system", "content": f"{MARK} {SUMMARY}"}
    assert result.messages[1:] == messages[-8:]
    (call,) = llm.calls
    assert call.messages[0]["content"] == PROMPT and "message 0: about Kyoto" in call.messages[1]["content"]
    assert "message 22" not in call.messages[1]["content"]  # the kept ones are not summarised


def test_when_the_llm_fails_snippets_take_its_place():
    result = compact(conversation(30), CompactionSettings(), ScriptedLLM.failing())
    assert result.folded == 22
    first = result.messages[0]["content"]
    assert first.startswith(f"{MARK} Earlier in this conversation (22 messages, shown as snippets):")
    assert "- user: message 0: about Kyoto" in first and "- assistant: message 21: more" in first
    assert compact(conversation(30), CompactionSettings(), None).messages[0]["content"] == first  # no LLM either


def test_short_lists_are_left_alone_and_long_text_compacts_too():
    assert compact(conversation(20), CompactionSettings(), ScriptedLLM.failing()).folded == 0
    long = [{"role": "user", "content": "x" * 3_000}, {"role": "assistant", "content": "y" * 3_000}] * 5
    result = compact(long, CompactionSettings(max_chars=20_000), None)  # 10 messages, 30,000 characters
    assert result.folded == 2 and len(result.messages) == 9


def test_system_prompt_stays_tool_results_keep_their_call_and_compaction_repeats():
    messages = [{"role": "system", "content": "You are terse."}, *conversation(16),
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                                     "function": {"name": "f", "arguments": "{}"}}]},
                *[{"role": "tool", "tool_call_id": "c1", "content": f"result {i}"} for i in range(8)],
                {"role": "assistant", "content": "done"}, {"role": "user", "content": "thanks"}]
    result = compact(messages, CompactionSettings(), ScriptedLLM(default=SUMMARY))
    assert result.messages[0] == {"role": "system", "content": "You are terse."}
    assert result.messages[1]["content"].startswith(MARK)
    assert result.messages[2].get("tool_calls")  # the last 8 start among tool results: their call stays
    assert result.messages[-1] == messages[-1]
    # A compacted history that grows long again folds the old summary in with the rest.
    again = compact([*result.messages, *conversation(20)], CompactionSettings(), ScriptedLLM(default="newer"))
    assert [m["content"] for m in again.messages[:2]] == ["You are terse.", f"{MARK} newer"]
    assert sum(1 for m in again.messages if m["content"].startswith(MARK)) == 1


def test_thresholds_have_floors(tmp_path):
    for key, value in (("compaction.max_messages", "7"), ("compaction.max_chars", "3999"), ("compaction.keep", "3")):
        with pytest.raises(ConfigError, match=f"{key} must be at least"):
            settings_module.load(None, {key: value})
    assert settings_module.load(None, {"compaction.keep": "4"}).compaction.keep == 4


def test_memory_chat_compacts_before_injecting(tmp_path):
    memvault = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    chat = MemoryChat(memvault, "default", llm=ScriptedLLM(default=SUMMARY))
    turn = chat.prepare(conversation(30))
    assert [m["role"] for m in turn.messages] == ["system"] + ["user", "assistant"] * 4
    assert turn.messages[0]["content"] == f"{MARK} {SUMMARY}"
    assert turn.messages[-2]["content"].endswith("Current message: message 28: more")  # the last user message
    assert turn.history[0] == turn.messages[0] and turn.history[-1] == conversation(30)[-1]  # chat keeps it
    memvault.close()


# -- through the proxy: the upstream receives the compacted list -----------------------------------
class Recorder:
    """An OpenAI-shaped upstream: answers "ok", or fails compaction requests when told to."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.fail_compaction = False
        self.lock = threading.Lock()

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def handle(request):
            body = json.loads(await request.body())
            with self.lock:
                self.requests.append(body)
            compaction = body["messages"][0]["content"] == PROMPT
            if compaction and self.fail_compaction:
                return JSONResponse({"error": {"message": "no", "type": "invalid_request_error"}}, status_code=400)
            reply = instant_completion()
            if compaction:
                reply["choices"][0]["message"]["content"] = SUMMARY
            return JSONResponse(reply)

        return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])

    def chats(self) -> list[dict]:
        """The requests that were not compaction's nor curation's (curation prompts ask for JSON)."""
        with self.lock:
            return [r for r in self.requests if r["messages"][0]["content"] != PROMPT and "response_format" not in r]


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    base = tmp_path_factory.mktemp("compaction-proxy")
    recorder = Recorder()
    with serving(recorder.app()) as root, isolated_env(base / "home"):
        settings = server_settings(base / "vault", root + "/v1", model="openai/fake", llm_key="k")
        with running(settings) as url:
            yield SimpleNamespace(url=url, recorder=recorder)


def send_thirty(proxy, first: str = "message 0: about Kyoto") -> list[dict]:
    import openai

    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
    messages = [{"role": "user", "content": first}, *conversation(30)[1:]]  # `first`: a span never summarised yet
    client.chat.completions.create(model="fake", messages=messages, extra_body={"memory_id": "trip"})
    return proxy.recorder.chats()[-1]["messages"]


def test_the_upstream_receives_one_compacted_message_and_the_last_eight(proxy):
    sent = send_thirty(proxy)
    assert [m["role"] for m in sent] == ["system"] + ["user", "assistant"] * 4  # 1 + the last 8
    assert sent[0] == {"role": "system", "content": f"{MARK} {SUMMARY}"}
    assert sent[1]["content"] == "message 22: more" and sent[-1]["content"] == "message 29: more"
    assert sent[-2]["content"].endswith("Current message: message 28: more")  # memory in the last user message
    summary_call = next(r for r in proxy.recorder.requests if r["messages"][0]["content"] == PROMPT)
    assert summary_call["temperature"] == 0 and summary_call["max_tokens"] == 400


def test_the_proxy_falls_back_to_snippets_when_the_llm_fails(proxy):
    proxy.recorder.fail_compaction = True
    try:
        sent = send_thirty(proxy, first="message 0: about Osaka instead")
    finally:
        proxy.recorder.fail_compaction = False
    assert len(sent) == 9
    assert sent[0]["content"].startswith(f"{MARK} Earlier in this conversation (22 messages, shown as snippets)")
