"""The rolling summary: prompt, cleaning of the answer, and the nothing-lost fallback."""


from memvault.curate.summary import update_summary
from tests.support.scripted_llm import ScriptedLLM

PREVIOUS = "The user lives in Paris and likes pizza."
FACTS = ["The user moved to Berlin.", "The user has a dog called Rex."]
NEW = "The user lives in Berlin, likes pizza and has a dog called Rex."


def test_update_folds_new_facts_into_the_previous_summary():
    llm = ScriptedLLM([(lambda p: "Paris" in p and "Rex" in p, NEW)], default="wrong rule")
    assert update_summary(llm, PREVIOUS, FACTS, "work") == NEW
    [call] = llm.calls
    system, user = call.messages
    assert "200 words" in system["content"] and "third person" in system["content"]
    assert user["content"] == (
        f"Conversation: work\n\nPrevious summary:\n{PREVIOUS}\n\nNew facts:\n- {FACTS[0]}\n- {FACTS[1]}"
    )


def test_first_summary_has_no_previous():
    llm = ScriptedLLM.always("The user has a dog called Rex.")
    assert update_summary(llm, None, [FACTS[1]], "global") == "The user has a dog called Rex."
    assert "Previous summary:\n(none yet)" in llm.calls[0].prompt


def test_answer_is_cleaned_of_thinking_fences_and_labels():
    for answer in (f"<think>hmm</think>\n{NEW}", f"```\n{NEW}\n```", f"Summary: {NEW}", f"## Updated summary\n{NEW}\n"):
        assert update_summary(ScriptedLLM.always(answer), PREVIOUS, FACTS, "work") == NEW, answer


def test_without_new_facts_the_llm_is_not_asked():
    llm = ScriptedLLM.always(NEW)
    assert update_summary(llm, PREVIOUS, [], "work") == PREVIOUS
    assert update_summary(llm, None, ["  "], "work") == ""
    assert llm.calls == []


def test_llm_failure_keeps_the_previous_summary_and_appends_missing_facts():
    llm = ScriptedLLM.failing()
    got = update_summary(llm, PREVIOUS + "\n", FACTS + ["The user likes pizza."], "work")
    assert got == f"{PREVIOUS}\n- {FACTS[0]}\n- {FACTS[1]}\n- The user likes pizza."
    assert got.startswith(PREVIOUS)
    assert len(llm.calls) == 1


def test_fallback_skips_facts_already_in_the_summary():
    summary = f"{PREVIOUS}\n- {FACTS[0]}"
    assert update_summary(ScriptedLLM.failing(), summary, [FACTS[0]], "work") == summary


def test_empty_answer_without_previous_gives_the_facts_as_bullets():
    for empty in ("", "   ", "<think>no idea</think>"):
        got = update_summary(ScriptedLLM.always(empty), None, FACTS, "work")
        assert got == f"- {FACTS[0]}\n- {FACTS[1]}", empty


def test_no_llm_configured_uses_the_fallback():
    assert update_summary(None, PREVIOUS, FACTS[:1], "work") == f"{PREVIOUS}\n- {FACTS[0]}"
