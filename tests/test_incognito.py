"""Incognito: chat --incognito (alias --memory-mode guest), the proxy's memory_mode "incognito" and
Memory(mode="incognito") write nothing (no file, commit, index row, session state) and read no stored
memory; what the session learns lives in the process only."""

import hashlib
import json
import subprocess
from pathlib import Path

import httpx
import pytest

from memvault import Memory, settings
from memvault.converse.prompt import MEMORY_HEADER, SESSION_HEADER, SUMMARY_HEADER
from memvault.core import Memvault
from memvault.server.run import running
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli, run_memvault
from tests.support.server import server_settings
from tests.support.upstream import Upstream, serving
from tests.test_policy import policy_llm


def snapshot(vault: Path) -> dict[str, str]:
    """Every file under the vault (the .git folder and .memvault/ included) -> its bytes' hash."""
    return {str(path.relative_to(vault)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(vault.rglob("*")) if path.is_file()}


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def seeded(tmp_path) -> Path:
    """A vault with a fact, a summary and a session, its index built: everything incognito must not read."""
    vault = tmp_path / "vault"
    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}), create=True)
    core.add_entries([Entry("The user's cat is called Biscuit."),
                      Entry("The user talks about cats.", role="summary"),
                      Entry("The user asked about cat food.", role="session")], "seed")
    core.reindex()
    core.close()
    return vault


def test_proxy_incognito_reads_nothing_and_writes_nothing(seeded):
    upstream = Upstream()
    with serving(upstream.app()) as root:
        configured = server_settings(seeded, root + "/v1", model="openai/fake", llm_key="k")
        with running(configured) as base:
            before, head = snapshot(seeded), git(seeded, "rev-parse", "HEAD")
            question = "What is my cat called?"
            for mode in ("incognito", "guest"):
                reply = httpx.post(base + "/v1/chat/completions", timeout=60, json={
                    "model": "fake", "memory_mode": mode, "messages": [{"role": "user", "content": question}]})
                assert reply.status_code == 200, reply.text
                assert reply.json()["memory_hits"] == []
            bad = httpx.post(base + "/v1/chat/completions", timeout=60, json={
                "model": "fake", "memory_mode": "ghost", "messages": [{"role": "user", "content": "hi"}]})
            assert bad.status_code == 400 and "memory_mode" in bad.json()["error"]["message"]
            sent = upstream.chat_requests()[0]["messages"]
            assert sent[-1]["content"] == question  # no memory, summary or session injected
            assert not any(h in json.dumps(sent) for h in (MEMORY_HEADER, SUMMARY_HEADER, SESSION_HEADER))
            assert len(upstream.chat_requests()) == 2  # no curation call either
            assert snapshot(seeded) == before and git(seeded, "rev-parse", "HEAD") == head
            assert git(seeded, "status", "--porcelain") == ""


def test_memory_incognito_keeps_everything_in_the_process(seeded):
    vault_memory = Memory({"vault": {"path": str(seeded)}})
    vault_memory.add("Alice's cat is called Biscuit.", user_id="alice", infer=False)
    assert vault_memory.search("cat Biscuit", user_id="alice")["results"]  # what incognito must not find
    vault_memory.close()
    before = snapshot(seeded)
    m = Memory({"vault": {"path": str(seeded)}}, mode="incognito")
    added = m.add("I drink oolong tea every morning", user_id="alice", infer=False)
    assert [r["event"] for r in added["results"]] == ["ADD"]
    found = m.search("oolong tea", user_id="alice")["results"]
    assert [r["memory"] for r in found] == ["I drink oolong tea every morning"]
    assert m.search("cat Biscuit", user_id="alice")["results"] == []  # the vault's memories are not read
    assert m.search("oolong", user_id="bob")["results"] == []  # scopes still separate
    redacted = m.add("my password is hunter22", user_id="alice", infer=False)["results"]
    assert [(r["event"], r["memory"]) for r in redacted] == [("ADD", "my password is [redacted: password]")]
    assert "hunter22" not in str(m.get_all(user_id="alice"))
    m.close()
    assert snapshot(seeded) == before
    fresh = Path(seeded).parent / "never"
    Memory({"vault": {"path": str(fresh)}}, mode="guest").add("hello", user_id="a", infer=False)
    assert not fresh.exists()  # no vault is even created


def test_memory_policy_true_routes_through_the_write_policy(tmp_path):
    fact = "The user is thinking about a new bike."
    m = Memory({"vault": {"path": str(tmp_path / "v")}},
               llm=policy_llm({"Maybe I am thinking about a new bike": [fact]}, {fact: ("hold", "fact")}))
    held = m.add("Maybe I am thinking about a new bike", user_id="alice", policy=True)["results"]
    assert [(r["event"], r["memory"]) for r in held] == [("HOLD", fact)] and held[0]["reason"]
    assert m.get_all(user_id="alice")["results"] == []
    again = m.add("Maybe I am thinking about a new bike", user_id="alice")["results"]
    assert [r["event"] for r in again] == ["ADD"]  # default: no policy
    m.close()


def test_chat_incognito_rejects_an_unknown_mode(tmp_path):
    result = Cli(tmp_path / "vault")("chat", "--memory-mode", "ghost", "-m", "hi")
    assert result.exit_code != 0 and "unknown memory mode" in result.stderr


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("flag", [["--incognito"], ["--memory-mode", "guest"]])
def test_incognito_chat_through_a_real_model_leaves_the_vault_byte_for_byte(local_llm, seeded, flag):
    env = {"MEMVAULT_VAULT": str(seeded), "MEMVAULT_LLM_MODEL": "openai/smollm2", "MEMVAULT_LLM_API_BASE": local_llm,
           "MEMVAULT_LLM_API_KEY": "none", "MEMVAULT_LLM_TIMEOUT": "120", "MEMVAULT_LLM_MAX_TOKENS": "40"}
    # git's own stat cache first: memvault's commits leave index entries without stat data (vault.git.
    # fastcommit), and the `git status` below would otherwise rewrite .git/index itself.
    git(seeded, "status", "--porcelain")
    before, head = snapshot(seeded), git(seeded, "rev-parse", "HEAD")
    state_before = sorted(p.name for p in (seeded / ".memvault").rglob("*"))
    lines = "My name is Dana.\nI live in Oslo.\nI love hiking.\n/exit\n"
    result = run_memvault("chat", *flag, input=lines.encode(), env=env, timeout=800)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert result.stdout.count(b"you>") >= 3  # the model answered each turn
    assert git(seeded, "status", "--porcelain") == "" and git(seeded, "rev-parse", "HEAD") == head
    assert sorted(p.name for p in (seeded / ".memvault").rglob("*")) == state_before  # no new state file
    assert snapshot(seeded) == before  # byte for byte
