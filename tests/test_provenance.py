"""What wrote a fact: a curated add records the model (and, through the write policy, the session) in
the fact's front matter; the keys survive reading and writing the file, an edit, and a JSONL export
imported into another vault. Real vault, git and index; a scripted LLM judges and names its model."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.vault.format.markdown import parse, render
from tests.support.scripted_llm import ScriptedLLM
from tests.test_policy import policy_llm

EXTRACT = "Latest user message (extract from this only):"
MODEL = "openai/scripted-curator"


def open_vault(path) -> Memvault:
    return Memvault.open(settings.load(None, {"vault.path": str(path)}), create=True)


@pytest.fixture
def memvault(tmp_path):
    m = open_vault(tmp_path / "vault")
    yield m
    m.close()


def named(llm: ScriptedLLM, model) -> ScriptedLLM:
    """The LLM as the real client is: its settings name the model."""
    llm.settings = SimpleNamespace(model=model)
    return llm


def stored(memvault, memory_id: str):
    rel, entry = memvault.get(memory_id)
    return entry, (memvault.vault.root / rel).read_text()


def only_add(result) -> str:
    [event] = [e for e in result.events if e.event == "ADD"]
    return event.id


def test_a_curated_fact_records_its_model_and_source(memvault):
    llm = named(ScriptedLLM([(EXTRACT, json.dumps(["Alice likes green tea."]))], default="[]"), MODEL)
    result = memvault.add("Alice here: I like green tea", "kitchen", llm=llm)
    entry, text = stored(memvault, only_add(result))
    assert entry.extra == {"model": MODEL} and f"\nmodel: {MODEL}\n" in text
    assert entry.source == result.turn.id
    assert parse(render(entry)) == entry  # the key is kept by a read and a write of the file
    memvault.update(entry.id, text="Alice likes black tea.")  # a person's edit keeps what wrote it
    assert stored(memvault, entry.id)[0].extra == {"model": MODEL}


def test_the_configured_model_names_a_client_without_its_own(memvault):
    memvault.settings.llm.model = "ollama/configured"
    result = memvault.add("I like jazz", llm=ScriptedLLM([(EXTRACT, json.dumps(["The user likes jazz."]))],
                                                           default="[]"))
    assert stored(memvault, only_add(result))[0].extra == {"model": "ollama/configured"}


def test_a_fact_stored_as_given_records_no_model(memvault):
    [event] = memvault.add("Bob plays chess", infer=False).events
    assert stored(memvault, event.id)[0].extra == {}


@pytest.mark.parametrize(("model", "kept"), [("evil: [x] &a *a # ---", True), ("two\n---\nid: 0", False),
                                             ("x" * 5000, False), ("bad \ud800 half", False), (42, False)])
def test_a_strange_model_name_never_breaks_or_loses_the_fact(memvault, model, kept):
    llm = named(ScriptedLLM([(EXTRACT, json.dumps(["Alice likes green tea."]))], default="[]"), model)
    result = memvault.add("Alice here: I like green tea", llm=llm)
    entry, text = stored(memvault, only_add(result))
    assert entry.text == "Alice likes green tea." and text.count("\n---\n") == 1
    # kept as given when it is a name a file can hold (one printable line, not too long), else left out
    assert entry.extra == ({"model": model} if kept else {})


def test_the_write_policy_records_the_session(memvault):
    llm = named(policy_llm({"I'm vegetarian": ["The user is vegetarian."]}), MODEL)
    result = memvault.policy_add("I'm vegetarian", "default", llm=llm)
    entry, _ = stored(memvault, only_add(result))
    assert entry.extra["model"] == MODEL
    started = memvault.session_buffer.read("default").state["started_at"]
    assert entry.extra["session"] == datetime.fromtimestamp(started, UTC).isoformat(timespec="seconds")


def test_the_keys_travel_through_export_and_import(memvault, tmp_path):
    from memvault.transfer import export_jsonl, import_source

    llm = named(policy_llm({"I'm vegetarian": ["The user is vegetarian."]}), MODEL)
    fact = only_add(memvault.policy_add("I'm vegetarian", "default", llm=llm))
    before = stored(memvault, fact)
    out = io.StringIO()
    export_jsonl(memvault, out)
    exported = tmp_path / "out.jsonl"
    exported.write_text(out.getvalue())
    other = open_vault(tmp_path / "other")
    try:
        import_source(other, [str(exported)], "jsonl")
        after = stored(other, fact)
    finally:
        other.close()
    assert after[0].extra == before[0].extra and set(after[0].extra) == {"model", "session"}
    assert after[1] == before[1]  # the file, byte for byte
