"""The whole stack as a user runs it: `memvault` processes -> litellm -> HTTP -> a real local model.

The model is tiny (SmolLM2-135M): these tests assert on the plumbing (valid events, files, commits,
persisted turns, a streamed answer), never on the model's judgement.
"""

import json
import subprocess

import pytest

from tests.support.cli import run_memvault

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
EVENTS = {"ADD", "UPDATE", "DELETE", "NONE"}


@pytest.fixture
def env(local_llm, tmp_path):
    vault = tmp_path / "vault"
    assert run_memvault("init", "--vault", str(vault)).returncode == 0
    return {"MEMVAULT_VAULT": str(vault), "MEMVAULT_LLM_MODEL": "openai/smollm2",
            "MEMVAULT_LLM_API_BASE": local_llm, "MEMVAULT_LLM_API_KEY": "none", "MEMVAULT_LLM_TIMEOUT": "120",
            # a tiny model can loop on a JSON answer: bounded, the plumbing is tested as well and sooner
            "MEMVAULT_LLM_MAX_TOKENS": "200"}


def git_log(vault, fmt="%s"):
    return subprocess.run(["git", "log", f"--format={fmt}"], cwd=vault, capture_output=True, text=True).stdout


def listing(env, *args):
    out = run_memvault("list", "--json", *args, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_add_extracts_and_reconciles_through_a_real_model_server(env):
    first = run_memvault("add", "My name is Dana and I love hiking in the Alps.", "--json", env=env, timeout=300)
    assert first.returncode == 0, first.stderr.decode()
    result = json.loads(first.stdout)
    assert result["curated"] is True
    assert result["results"], "an add always stores something: facts, or the text as given"
    for event in result["results"]:
        assert event["event"] in EVENTS and (event["memory"] or "").strip()
    turns = listing(env, "--role", "user")
    assert [t["text"] for t in turns] == ["My name is Dana and I love hiking in the Alps."]
    facts = listing(env, "--role", "memory")
    assert facts and all(f["source"] == turns[0]["id"] for f in facts)
    assert git_log(env["MEMVAULT_VAULT"]).splitlines()[0].startswith("memvault add:")

    second = run_memvault("add", "I also enjoy cooking Thai food.", "--json", env=env, timeout=300)
    assert second.returncode == 0, second.stderr.decode()
    for event in json.loads(second.stdout)["results"]:
        assert event["event"] in EVENTS
    assert len(listing(env, "--role", "user")) == 2


def test_chat_one_shot_streams_an_answer_and_persists_both_turns(env):
    assert run_memvault("add", "--no-llm", "Dana's favourite colour is teal.", env=env).returncode == 0
    out = run_memvault("chat", "-m", "What is my favourite colour?", env=env, timeout=300)
    assert out.returncode == 0, out.stderr.decode()
    answer = out.stdout.decode().strip()
    assert answer
    assert [t["text"] for t in listing(env, "--role", "user")] == ["What is my favourite colour?"]
    assistant = listing(env, "--role", "assistant")
    assert [t["text"] for t in assistant] == [answer]
    subjects = git_log(env["MEMVAULT_VAULT"]).splitlines()
    assert any(s.startswith("memvault chat: turn") for s in subjects)


def test_unreachable_model_is_one_clear_line(tmp_path):
    vault = tmp_path / "v"
    run_memvault("init", "--vault", str(vault))
    env = {"MEMVAULT_VAULT": str(vault), "MEMVAULT_LLM_MODEL": "openai/nothing",
           "MEMVAULT_LLM_API_BASE": "http://127.0.0.1:9/v1", "MEMVAULT_LLM_API_KEY": "none",
           "MEMVAULT_LLM_MAX_RETRIES": "0"}
    out = run_memvault("chat", "-m", "hello?", env=env, timeout=300)
    err = out.stderr.decode()
    assert out.returncode == 1 and "127.0.0.1:9" in err and len(err.strip().splitlines()) == 1, err
    # add degrades instead: what the user said is stored as given, and it says why.
    out = run_memvault("add", "Keep this even so", "--json", env=env, timeout=300)
    assert out.returncode == 0 and json.loads(out.stdout)["notes"]
