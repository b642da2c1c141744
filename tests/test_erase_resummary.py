"""An erase with an LLM configured (memvault/core/erased_summaries.py, memvault/curate/resummary.py):
the summaries that quoted the erased text are written again from what remains, never from the erased
text; an answer that quotes it again, or is garbage, is refused and the sentence-removed one stays."""

from __future__ import annotations

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.core.base import Storage
from memvault.curate.resummary import refusal
from memvault.errors import LLMError
from memvault.vault.forget.scrub import Scrubber
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM
from tests.test_erase import leftovers

pytestmark = pytest.mark.timeout(300)

SECRET = "Zanzibar-Quokka-7781"
SUMMARY_ASKED = "rolling summary"  # curate/prompts.SUMMARY
SESSION_ASKED = "Summarise this conversation session"  # curate/policy.SESSION_PROMPT
NEW_SUMMARY = "The user likes jasmine tea and cycles to work."
NEW_SESSION = "The user talked about jasmine tea and cycling to work."
SCRUBBED_SUMMARY = "The user talked about lockers. They also like jasmine tea."
SCRUBBED_SESSION = "They asked about jasmine tea."


def vault_with_quotes(tmp_path, monkeypatch, llm) -> tuple[Memvault, object]:
    root = tmp_path / "vault"
    m = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    for text in ("I like jasmine tea.", f"My locker code is {SECRET}.", "I cycle to work every day."):
        m.add_verbatim(text, conversation="chat", role="user")
    for text in ("The user likes jasmine tea.", f"The user's locker code is {SECRET}.", "The user cycles to work."):
        m.add_verbatim(text, conversation="chat")
    with m.vault.transaction("test", "summaries", "chat") as tx:
        tx.write(Entry(text=f"The user talked about lockers. Their code is {SECRET}. They also like jasmine tea.",
                       role="summary", conversation_id="chat"))
        tx.write(Entry(text=f"The user set a locker code ({SECRET}) today. They asked about jasmine tea.",
                       role="session", conversation_id="chat"))
    monkeypatch.setattr(Storage, "llm", lambda self: llm)
    return m, root


def summaries(m: Memvault) -> tuple[str, str]:
    found = {e.role: e.text for _, e in m.vault.iter_entries()
             if isinstance(e, Entry) and e.role in ("summary", "session")}
    return found["summary"].strip(), found["session"].strip()


def test_with_an_llm_the_quoting_summaries_are_written_again_from_what_remains(tmp_path, monkeypatch):
    llm = ScriptedLLM([(SUMMARY_ASKED, NEW_SUMMARY), (SESSION_ASKED, NEW_SESSION)])
    m, root = vault_with_quotes(tmp_path, monkeypatch, llm)
    try:
        result = m.erase(matching=SECRET)
        assert summaries(m) == (NEW_SUMMARY, NEW_SESSION)
        assert len(result.resummarised) == 2 and result.kept_scrubbed == []
        asked = [call.prompt for call in llm.calls]
        assert len(asked) == 2 and all(SECRET not in prompt for prompt in asked)  # never shown the erased text
        summary_prompt, session_prompt = (next(p for p in asked if marker in p) for marker in (SUMMARY_ASKED,
                                                                                              SESSION_ASKED))
        assert "The user cycles to work." in summary_prompt and "I cycle to work every day." in session_prompt
        assert leftovers(root, SECRET) == []
        assert m.vault.git.run("log", "-1", "--format=%B").count("Memvault-Operation: erase") == 1  # the record is last
    finally:
        m.close()


@pytest.mark.parametrize("answer, why", [
    # echoes it back; its other words are the input's (only the erased-text check refuses it)
    (f"The user likes jasmine tea and cycles to work ({SECRET}).", "quotes an erased text"),
    ("", "empty"),
    ("tea " * 40, "repeated"),  # a loop
    ("Conversation: chat\n\nPrevious summary:\n(none yet)\n\nNew facts:\n- The user likes <fact>", "placeholder"),
    ("Quantum lattice borscht ephemeral tangerine orchestras.", "not in what it summarises"),  # garbage
    (LLMError("LLM openai/scripted failed: boom"), "LLM failed"),
])
def test_a_bad_answer_is_refused_and_the_sentences_are_removed_instead(tmp_path, monkeypatch, answer, why):
    m, root = vault_with_quotes(tmp_path, monkeypatch, ScriptedLLM.always(answer))
    try:
        result = m.erase(matching=SECRET)
        assert summaries(m) == (SCRUBBED_SUMMARY, SCRUBBED_SESSION)
        assert result.resummarised == [] and len(result.kept_scrubbed) == 2
        assert all(why in line for line in result.kept_scrubbed), result.kept_scrubbed
        assert leftovers(root, SECRET) == []
    finally:
        m.close()


def test_the_guard_refuses_any_erased_text_not_only_the_matched_one():
    erased = Scrubber(["Alice grew up in Tromso near the fjords."], [r"hunter\d"])
    source = "Bob restores vintage motorbikes. Bob works night shifts."
    assert refusal("Bob restores vintage motorbikes and works night shifts.", source, erased) is None
    assert "erased" in refusal("Bob works night shifts; his password is hunter2.", source, erased)
    assert "erased" in refusal("Alice grew up in Tromso near the fjords. Bob works nights.", source, erased)


@pytest.mark.slow
def test_the_real_local_model_re_summarises_or_is_refused_never_leaking(tmp_path, local_llm):
    """SmolLM2-135M: whatever it answers, the erased text is nowhere and each summary is either its
    answer (the guard let it through) or the sentence-removed one."""
    root = tmp_path / "vault"
    settings = settings_module.load(None, {"vault.path": str(root), "llm.model": "openai/smollm2",
                                            "llm.api_base": local_llm, "llm.api_key": "none", "llm.max_tokens": 120})
    m = Memvault.open(settings, create=True)
    try:
        for text in ("The user likes jasmine tea.", f"The user's locker code is {SECRET}.", "The user cycles to work."):
            m.add_verbatim(text, conversation="chat")
        with m.vault.transaction("test", "summary", "chat") as tx:
            tx.write(Entry(text=f"The user talked about lockers. Their code is {SECRET}. They also like jasmine tea.",
                           role="summary", conversation_id="chat"))
        result = m.erase(matching=SECRET)
        assert len(result.resummarised) + len(result.kept_scrubbed) == 1
        summary = next(e.text for _, e in m.vault.iter_entries() if isinstance(e, Entry) and e.role == "summary")
        assert result.resummarised or summary.strip() == SCRUBBED_SUMMARY
        assert leftovers(root, SECRET) == []
    finally:
        m.close()


def test_the_cli_says_which_summaries_were_kept_scrubbed_and_why(tmp_path, monkeypatch):
    m, root = vault_with_quotes(tmp_path, monkeypatch, ScriptedLLM.always(f"The user's code is {SECRET}."))
    m.close()
    done = Cli(root).ok("erase", "--matching", SECRET, "-y")
    out = done.stdout + done.stderr  # the table on stdout, the lines for people on stderr
    assert "re-written by the LLM from what remains: 0; kept with the quoting sentences removed: 2" in out
    assert out.count("it quotes an erased text") == 2 and SECRET not in out
