"""Episodic sessions: a summary at session end (3+ user turns), the latest one always in the prompt,
old ones not retrieved; sessions ending on chat /exit, on idle and at shutdown in `serve`, and by
`memvault session end`, each in one commit. Real vault, git, index, model, HTTP; a scripted LLM (or
a fake upstream) for judgement, and the real local model server for the chat end to end."""

import json
import subprocess
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from memvault import settings
from memvault.converse.prompt import (
    CORE_HEADER,
    CURRENT_HEADER,
    MEMORY_HEADER,
    RULES_HEADER,
    SESSION_HEADER,
    SUMMARY_HEADER,
    gather,
)
from memvault.core import Memvault
from memvault.core.base import Storage
from memvault.server.run import running
from memvault.vault.format.entry import Entry
from tests.support.cli import run_memvault
from tests.support.server import server_settings
from tests.support.upstream import Upstream, served_upstream
from tests.test_policy import policy_llm

TURNS = ["I'm planning a trip to Oslo", "I want to see the fjords", "Which month is best?"]


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def subjects(vault: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def session_files(vault: Path, conversation: str = "default") -> list[Path]:
    folder = vault / "entries" / conversation / "sessions"
    return sorted(folder.rglob("*.md")) if folder.is_dir() else []


def talk(memvault, turns, llm, conversation="default"):
    for text in turns:
        turn = Entry(text, role="user", conversation_id=conversation)
        memvault.add_entries([turn], "turn", operation="chat")
        memvault.policy_add(text, conversation, llm=llm, turn=turn)


def test_a_session_of_three_turns_ends_with_one_summary_in_one_commit(memvault):
    llm = policy_llm({}, summary="The user planned a trip to Oslo to see the fjords.")
    talk(memvault, TURNS, llm)
    before = subjects(memvault.vault.root)
    ended = memvault.end_session("default", llm)
    after = subjects(memvault.vault.root)
    assert len(after) == len(before) + 1 and after[0].startswith("memvault session end: default")
    [path] = session_files(memvault.vault.root)
    entry = memvault.vault.read(path.relative_to(memvault.vault.root))
    assert entry.role == "session" and entry.text == "The user planned a trip to Oslo to see the fjords."
    assert ended.summary.id == entry.id and ended.user_turns == 3 and entry.metadata["user_turns"] == 3
    asked = next(call.prompt for call in llm.calls if "Summarise this conversation session" in call.prompt)
    assert all(text in asked for text in TURNS)  # the arc: every user turn of the session
    assert memvault.end_session("default", llm) is None  # ended once


def test_a_short_session_gets_no_summary_and_no_commit(memvault):
    llm = policy_llm({})
    talk(memvault, TURNS[:2], llm)
    before = subjects(memvault.vault.root)
    ended = memvault.end_session("default", llm)
    assert ended.summary is None and session_files(memvault.vault.root) == []
    assert subjects(memvault.vault.root) == before
    assert not (memvault.vault.state_dir / "session" / "default").exists()


def test_the_latest_session_is_always_in_the_prompt_and_old_ones_are_not_retrieved(memvault):
    old = Entry("The user asked about Oslo trains.", role="session", conversation_id="default",
                created_at=datetime.now(timezone.utc) - timedelta(days=40))
    recent = Entry("The user asked about Oslo museums.", role="session", conversation_id="default",
                   created_at=datetime.now(timezone.utc) - timedelta(days=5))
    latest = Entry("The user talked about cooking pasta.", role="session", conversation_id="default")
    memvault.add_entries([old, recent, latest], "sessions")
    context = gather(memvault, "Oslo", "default", {}, {"score_threshold": 0.0})
    assert context.latest_session == latest.text  # however unrelated to the query
    shown = [hit.id for hit in context.memories]
    assert recent.id in shown  # retrieved by the query, and recent
    assert old.id not in shown  # older than session.max_age_days
    assert latest.id not in shown  # already in its own section
    memvault.settings.session.max_age_days = 60
    assert old.id in [hit.id for hit in gather(memvault, "Oslo", "default", {}, {"score_threshold": 0.0}).memories]
    other_scope = gather(memvault, "Oslo", "default", {"user_id": "bob"}, {"score_threshold": 0.0})
    assert other_scope.latest_session is None  # another scope's session is never shown


def test_session_end_cli_with_idle_for_cron(memvault):
    talk(memvault, TURNS, policy_llm({}))
    env = {"MEMVAULT_VAULT": str(memvault.vault.root)}
    listed = run_memvault("session", "list", "--json", env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout)["results"][0]["user_turns"] == 3
    busy = run_memvault("session", "end", "--idle", "20m", "--json", env=env)
    assert busy.returncode == 0 and json.loads(busy.stdout) == {"results": []}  # active a moment ago
    bad = run_memvault("session", "end", "--idle", "soon", env=env)
    assert bad.returncode != 0 and b"invalid age" in bad.stderr and b"Traceback" not in bad.stderr
    escape = run_memvault("session", "end", "a\tb", env=env)
    assert escape.returncode != 0 and b"invalid conversation id" in escape.stderr
    assert b"Traceback" not in escape.stderr
    elsewhere = run_memvault("session", "end", "../x", env=env)  # any printable id: its folder is safe
    assert elsewhere.returncode == 0 and b"No open session in '../x'" in elsewhere.stderr
    done = run_memvault("session", "end", "default", "--json", env=env)  # no LLM: the turns' openings
    [result] = json.loads(done.stdout)["results"]
    assert result["conversation"] == "default" and result["summary"]["text"].startswith("A session of 3 user turns")
    assert len(session_files(memvault.vault.root)) == 1


def test_chat_cli_exit_ends_the_session(tmp_path, monkeypatch):
    """In-process CLI with a scripted LLM: /exit promotes the held fact and writes the summary, one commit."""
    from tests.support.cli import Cli

    fact = "The user is planning a trip to Oslo."
    llm = policy_llm({TURNS[0]: [fact]}, {fact: ("hold", "fact")}, promote={fact: True}, summary="Oslo trip.")
    llm.settings = type("settings", (), {"model": "scripted"})  # what the chat banner reads
    monkeypatch.setattr(Storage, "llm", lambda self: llm)
    vault = tmp_path / "vault"
    cli = Cli(vault)
    cli.ok("init")
    result = cli.ok("chat", input="\n".join(TURNS) + "\n/exit\n")
    assert "held: " + fact in result.stderr and "summary written" in result.stderr
    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}))
    try:
        assert [e.text for _, e in core.list(role="memory").entries] == [fact]
        assert [e.text for _, e in core.list(role="session").entries] == ["Oslo trip."]
    finally:
        core.close()
    assert subjects(vault)[0].startswith("memvault session end: default")


# -- the proxy -------------------------------------------------------------------------------------
def post(base: str, body: dict) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", json={"model": "fake", **body}, timeout=120)


def wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def upstream():
    with served_upstream() as fake:  # answers "ok" at once and records every request
        yield fake


def test_proxy_prompt_order_and_the_default_owner(tmp_path, upstream):
    vault = tmp_path / "vault"
    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}), create=True)
    core.add_entries([Entry("The user talked about cooking pasta.", role="session", conversation_id="default"),
                      Entry("The user cooks Italian food.", role="summary", conversation_id="default"),
                      Entry("The user's favourite pasta is carbonara.", conversation_id="default")], "seed")
    core.update_core("USER", "The user is Sam, a home cook.")
    core.add_rule("Answer in British English.", conversation="default")
    core.close()
    with running(server_settings(vault, upstream.root + "/v1")) as base:
        reply = post(base, {"messages": [{"role": "user", "content": "Which pasta should I make tonight?"}]})
        assert reply.status_code == 200, reply.text
    sent = next(m["content"] for m in reversed(upstream.chat_requests()[-1]["messages"]) if m["role"] == "user")
    # The documented order (docs/architecture.md, Retrieval).
    order = [CORE_HEADER, RULES_HEADER, SESSION_HEADER, SUMMARY_HEADER, MEMORY_HEADER, CURRENT_HEADER]
    positions = [sent.index(header) for header in order]
    assert positions == sorted(positions), sent
    assert sent.startswith(f"{CORE_HEADER}\n## USER.md\nThe user is Sam, a home cook.")
    assert f"{RULES_HEADER}\n- Answer in British English." in sent
    assert "The user talked about cooking pasta." in sent.split(SUMMARY_HEADER)[0].split(SESSION_HEADER)[1]
    assert "The user cooks Italian food." in sent.split(MEMORY_HEADER)[0].split(SUMMARY_HEADER)[1]
    assert "[memory] The user's favourite pasta is carbonara." in sent.split(CURRENT_HEADER)[0].split(MEMORY_HEADER)[1]
    # No memory_id: the owner is `default`, as agent-cli's is; the turn is stored there.
    assert wait_for(lambda: list((vault / "entries" / "default" / "turns" / "user").rglob("*.md")))


def curating_settings(vault: Path, upstream: Upstream, idle_minutes: float):
    configured = server_settings(vault, upstream.root + "/v1", model="openai/fake", llm_key="k")
    configured.session.idle_minutes = idle_minutes
    return configured


def test_proxy_ends_an_idle_session_with_one_commit(tmp_path, upstream):
    vault = tmp_path / "vault"
    with running(curating_settings(vault, upstream, idle_minutes=0.02)) as base:  # 1.2 s
        for text in TURNS:
            assert post(base, {"messages": [{"role": "user", "content": text}], "memory_id": "trip"}).status_code == 200
        def ends() -> list[str]:
            return [s for s in subjects(vault) if s.startswith("memvault session end: trip")]

        # The commit, then the buffer's removal, follow the summary file: wait for what is asserted.
        buffer = vault / ".memvault" / "session" / "trip"
        assert wait_for(lambda: ends() and not buffer.exists(), 120), subjects(vault)
        assert len(ends()) == 1 and len(session_files(vault, "trip")) == 1


def test_proxy_shutdown_ends_the_open_sessions(tmp_path, upstream):
    vault = tmp_path / "vault"
    with running(curating_settings(vault, upstream, idle_minutes=600)) as base:
        for text in TURNS:
            assert post(base, {"messages": [{"role": "user", "content": text}]}).status_code == 200
        assert wait_for(lambda: (vault / ".memvault" / "session" / "default" / "state.json").exists())
        assert session_files(vault) == []  # not idle yet
    assert len(session_files(vault)) == 1
    assert [s for s in subjects(vault) if s.startswith("memvault session end: default")]


# -- the real local model, end to end ---------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_chat_of_three_turns_ended_by_exit_through_a_real_model(local_llm, tmp_path):
    vault = tmp_path / "vault"
    assert run_memvault("init", "--vault", str(vault)).returncode == 0
    env = {"MEMVAULT_VAULT": str(vault), "MEMVAULT_LLM_MODEL": "openai/smollm2", "MEMVAULT_LLM_API_BASE": local_llm,
           "MEMVAULT_LLM_API_KEY": "none", "MEMVAULT_LLM_TIMEOUT": "120", "MEMVAULT_LLM_MAX_TOKENS": "120"}
    lines = "\n".join(["My name is Dana.", "I live in Oslo.", "I love hiking."]) + "\n/exit\n"
    result = run_memvault("chat", input=lines.encode(), env=env, timeout=800)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    with_summary = [line for line in subprocess.run(
        ["git", "-C", str(vault), "log", "--format=%H", "--", "entries/default/sessions"],
        capture_output=True, text=True, check=True).stdout.splitlines() if line]
    assert len(with_summary) == 1  # exactly one commit holds the session summary
    [path] = session_files(vault)
    assert "role: session" in path.read_text() and subjects(vault)[0].startswith("memvault session end: default")
    # The model's summary when it says what the user said; SmolLM2's ("Dana, a wonderful person with a
    # passion for hiking.") is refused by curate.summary.summary_problem and the turns' openings are kept.
    from memvault.curate.summary import summary_problem
    from memvault.vault.format.markdown import parse

    text = parse(path.read_text()).text
    assert text.startswith("A session of 3 user turns: My name is Dana.") or summary_problem(
        text, "My name is Dana.\nI live in Oslo.\nI love hiking.") is None, text
    assert not (vault / ".memvault" / "session" / "default").exists()
