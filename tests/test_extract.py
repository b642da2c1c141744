"""Fact extraction and the lenient JSON reading it relies on, with a scripted LLM."""

import pytest

from memvault.curate import prompts
from memvault.curate.extract import MAX_CUSTOM_FACTS, extract_fact_records, load_prompt, parse_fact_records
from memvault.curate.jsonish import parse_json, strip_thinking
from memvault.errors import ConfigError, LLMError
from tests.support.scripted_llm import ScriptedLLM


def extract_facts(llm, messages, prompt=None):
    return [fact.text for fact in extract_fact_records(llm, messages, prompt)]


def parse_facts(answer):
    return [fact.text for fact in parse_fact_records(answer)]


ANA = "The user's sister is called Ana."
LISBON = "The user lives in Lisbon."


@pytest.mark.parametrize(
    "answer, expected",
    [
        (f'["{ANA}", "{LISBON}"]', [ANA, LISBON]),
        (f'{{"facts": ["{ANA}"]}}', [ANA]),
        (f'{{"Facts": ["{ANA}"], "note": "x"}}', [ANA]),
        (f'```json\n["{ANA}"]\n```', [ANA]),
        (f'```\n["{ANA}"]\n```', [ANA]),
        (f'Sure! Here are the facts:\n["{ANA}", "{LISBON}"]\nLet me know if you need more.', [ANA, LISBON]),
        (f'[{{"fact": "{ANA}"}}, {{"text": "{LISBON}"}}, {{"other": 1}}]', [ANA, LISBON]),
        (f'{{"fact": "{ANA}"}}', [ANA]),
        (f'"{ANA}"', [ANA]),
        (f'- {ANA}\n- {LISBON}\n', [ANA, LISBON]),
        (f'1. {ANA}\n2) {LISBON}', [ANA, LISBON]),
        ("['The user is vegetarian.', 'The user has a dog.',]", ["The user is vegetarian.", "The user has a dog."]),
        (f'["{ANA}", "{LISBON}",]', [ANA, LISBON]),
        (f'<think>The user mentions ["wrong"] ... </think>\n["{ANA}"]', [ANA]),
        (f'Reasoning goes here</think>["{ANA}"]', [ANA]),
        (f'["  {ANA}  ", "", "   ", "{ANA}", "{ANA.upper()}", 42, null]', [ANA]),
        ('[]', []),
        ('{"facts": []}', []),
        ('', []),
        (None, []),
        ('None', []),
        ('There is nothing worth remembering here.', []),
        ('- none', []),
        ('<think>still thinking when the answer was cut', []),
    ],
)
def test_parse_facts_reads_every_common_shape(answer, expected):
    assert parse_facts(answer) == expected


def test_parse_json_prefers_a_parseable_value_over_brackets_in_prose():
    text = 'As noted [see above], here it is: {"facts": ["a", "b"],} and more text [unbalanced'
    assert parse_json(text) == {"facts": ["a", "b"]}


def test_parse_json_keeps_apostrophes_inside_double_quoted_strings():
    expected = ["The user's dog is Rex", "It's brown"]
    assert parse_json('Answer: ["The user\'s dog is Rex", "It\'s brown"] done') == expected


def test_parse_json_reads_json_literals_in_single_quoted_python_style():
    expected = {"ok": True, "none": None, "text": "true story"}
    assert parse_json("{'ok': true, 'none': null, 'text': 'true story'}") == expected


def test_parse_json_gives_none_for_prose():
    assert parse_json("I could not find anything.") is None
    assert parse_json("```\nnot json\n```") is None


def test_strip_thinking_removes_blocks_case_insensitively():
    assert strip_thinking("<THINK>x</THINK> answer <think>y</think>") == "answer"


def chat(*turns):
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(turns)]


def test_extract_facts_asks_about_the_latest_user_message_with_earlier_turns_as_context():
    llm = ScriptedLLM(default=f'["{ANA}"]')
    messages = chat("I live in Lisbon.", "Nice city!", "My sister is called Ana.")
    assert extract_facts(llm, messages) == [ANA]
    [call] = llm.calls
    bound = prompts.MAX_DEFAULT_FACTS, prompts.MAX_FACT_CHARS  # a grammar-enforcing server stops there
    assert call.json_schema == prompts.bounded(prompts.EXTRACTION_SCHEMA, *bound)
    system, user = call.messages
    assert system["role"] == "system" and "latest user message" in system["content"]
    context, latest = user["content"].split("Latest user message")
    assert "user: I live in Lisbon." in context and "assistant: Nice city!" in context
    assert "My sister is called Ana." in latest and "Lisbon" not in latest


def test_extract_facts_reads_openai_content_parts_as_core_reads_them():
    """Curation reads the messages core normalised (memvault.core.messages, the one reader of parts)."""
    from memvault.core.messages import chat_of

    llm = ScriptedLLM([("I have a cat", '["The user has a cat."]')], default="[]")
    messages = [{"role": "user", "content": [{"type": "text", "text": "I have a cat"}, {"type": "image_url"}]}]
    assert extract_facts(llm, chat_of(messages)) == ["The user has a cat."]


def test_extract_facts_without_a_user_message_does_not_call_the_llm():
    llm = ScriptedLLM(default=f'["{ANA}"]')
    assert extract_facts(llm, [{"role": "assistant", "content": "Hello!"}]) == []
    assert extract_facts(llm, chat("   ")) == []
    assert llm.calls == []


def test_default_prompt_output_is_cut_at_three_facts():
    five = [f"The user has fact number {i}." for i in range(5)]
    llm = ScriptedLLM(default=str(five))
    assert extract_facts(llm, chat("lots of things")) == five[:3]


def test_custom_prompt_replaces_the_system_message_and_keeps_more_facts():
    many = [f"Fact {i}" for i in range(MAX_CUSTOM_FACTS + 5)]
    llm = ScriptedLLM(default=str(many))
    got = extract_facts(llm, chat("I like tea and coffee"), prompt="List every preference as JSON.")
    assert got == many[:MAX_CUSTOM_FACTS]
    system, user = llm.calls[0].messages
    assert system == {"role": "system", "content": "List every preference as JSON."}
    assert "I like tea and coffee" in user["content"]


def test_custom_prompt_with_placeholders_is_a_whole_template():
    llm = ScriptedLLM(default='{"facts": ["The user likes tea."]}')
    template = 'Context: {context}\nMessage: {message}\nAnswer as {"facts": [...]}'
    assert extract_facts(llm, chat("hi", "hello", "I like tea"), prompt=template) == ["The user likes tea."]
    [message] = llm.calls[0].messages
    assert message["role"] == "user"
    assert message["content"] == 'Context: user: hi\nassistant: hello\nMessage: I like tea\nAnswer as {"facts": [...]}'


def test_extract_facts_lets_llm_errors_reach_the_caller():
    with pytest.raises(LLMError):
        extract_facts(ScriptedLLM.failing(), chat("My sister is called Ana."))


def test_load_prompt_reads_the_configured_file(tmp_path):
    path = tmp_path / "prompt.txt"
    path.write_text("Extract facts about {message}", encoding="utf-8")
    assert load_prompt(str(path)) == "Extract facts about {message}"
    assert load_prompt("") is None
    with pytest.raises(ConfigError, match="cannot read"):
        load_prompt(str(tmp_path / "missing.txt"))
    path.write_text("  \n", encoding="utf-8")
    with pytest.raises(ConfigError, match="empty"):
        load_prompt(str(path))
