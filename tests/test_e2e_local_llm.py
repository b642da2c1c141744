"""The whole stack as a user runs it: `memvault` processes -> litellm -> HTTP -> a real local model.

The model is tiny (SmolLM2-135M): these tests assert on the plumbing (valid events, files, commits,
persisted turns, a streamed answer), never on the model's judgement.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import run_memvault
from tests.support.upstream import Upstream, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
# DROP: a fact the grounding guard refused (the 135M model often copies the prompt's placeholders).
EVENTS = {"ADD", "UPDATE", "DELETE", "NONE", "DROP"}


@pytest.fixture
def relay(local_llm):
    """A recording relay in front of the model server: shows what memvault asked for and got."""
    upstream = Upstream(forward_to=local_llm)
    with serving(upstream.app()) as root:
        upstream.root = root
        yield upstream


@pytest.fixture
def env(relay, tmp_path):
    vault = tmp_path / "vault"
    assert run_memvault("init", "--vault", str(vault)).returncode == 0
    return {"MEMVAULT_VAULT": str(vault), "MEMVAULT_LLM_MODEL": "openai/smollm2",
            "MEMVAULT_LLM_API_BASE": relay.root + "/v1", "MEMVAULT_LLM_API_KEY": "none",
            "MEMVAULT_LLM_TIMEOUT": "120",
            # a tiny model can loop on a JSON answer: bounded, the plumbing is tested as well and sooner
            "MEMVAULT_LLM_MAX_TOKENS": "200"}


def git_log(vault, fmt="%s"):
    return subprocess.run(["git", "log", f"--format={fmt}"], cwd=vault, capture_output=True, text=True).stdout


def listing(env, *args):
    out = run_memvault("list", "--json", *args, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_add_extracts_and_reconciles_through_a_real_model_server(env, relay):
    first = run_memvault("add", "My name is Dana and I love hiking in the Alps.", "--json", env=env, timeout=300)
    assert first.returncode == 0, first.stderr.decode()
    result = json.loads(first.stdout)
    assert result["curated"] is True
    # The model was asked and answered: a failed call would leave "LLM failed" in the notes, and the
    # fallback (the text stored as given) would satisfy everything below on its own.
    assert not [note for note in result.get("notes", []) if "LLM failed" in note], result["notes"]
    asked = relay.chat_requests()
    assert asked and all(request["model"] == "smollm2" for request in asked)
    assert "My name is Dana and I love hiking in the Alps." in json.dumps(asked[0]["messages"])
    assert asked[0].get("response_format"), "extraction asks for a JSON answer"
    assert result["results"], "an add always says what it did: facts stored, or why none was"
    for event in result["results"]:
        assert event["event"] in EVENTS and (event["memory"] or "").strip()
    turns = listing(env, "--role", "user")
    assert [t["text"] for t in turns] == ["My name is Dana and I love hiking in the Alps."]  # whatever the model says
    facts = listing(env, "--role", "memory")
    stored = {event["id"] for event in result["results"] if event["event"] in ("ADD", "UPDATE")}
    assert {f["id"] for f in facts} == stored and all(f["source"] == turns[0]["id"] for f in facts)
    assert git_log(env["MEMVAULT_VAULT"]).splitlines()[0].startswith("memvault add:")

    second = run_memvault("add", "I also enjoy cooking Thai food.", "--json", env=env, timeout=300)
    assert second.returncode == 0, second.stderr.decode()
    second_result = json.loads(second.stdout)
    assert not [note for note in second_result.get("notes", []) if "LLM failed" in note]
    for event in second_result["results"]:
        assert event["event"] in EVENTS
    assert len(relay.chat_requests()) > len(asked)
    assert len(listing(env, "--role", "user")) == 2


def read_as_it_comes(process: subprocess.Popen, timeout: float) -> list[tuple[float, bytes]]:
    """Every piece of the process's stdout with the time it arrived, until it closes."""
    pieces = []
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()
    while time.monotonic() < deadline:
        piece = os.read(fd, 65536)
        if not piece:
            break
        pieces.append((time.monotonic(), piece))
    return pieces


def test_chat_one_shot_streams_an_answer_and_persists_both_turns(env, relay):
    assert run_memvault("add", "--no-llm", "Dana's favourite colour is teal.", env=env).returncode == 0
    process = subprocess.Popen([sys.executable, "-m", "memvault", "chat", "-m", "What is my favourite colour?"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
    try:
        pieces = read_as_it_comes(process, timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait(60)
    assert code == 0, process.stderr.read().decode()
    answer = b"".join(piece for _, piece in pieces).decode().strip()
    assert answer
    # Streamed: the answer reached stdout in several pieces, over time, not as one block at the end.
    text_pieces = [(when, piece) for when, piece in pieces if piece.strip()]
    assert len(text_pieces) > 1, pieces
    assert text_pieces[-1][0] > text_pieces[0][0]
    assert relay.chat_requests()[0]["stream"] is True
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


def test_an_imported_conversation_reaches_a_later_chats_prompt_through_a_real_model(env, relay):
    """Memory follows its owner with the real model answering: the user's words from an imported ChatGPT
    history (plain turns, asked for with retrieval.follow_user_turns) reach a chat in another conversation."""
    export = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"
    assert run_memvault("import", str(export), env=env, timeout=300).returncode == 0
    follow = {**env, "MEMVAULT_RETRIEVAL_FOLLOW_USER_TURNS": "true"}
    asked = len(relay.chat_requests())
    done = run_memvault("chat", "-m", "Which dishes suit me, as a vegetarian?", "-c", "elsewhere", env=follow,
                        timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    [answer] = [r for r in relay.chat_requests()[asked:] if r.get("stream")]
    sent = answer["messages"][-1]["content"]
    assert "I'm vegetarian. Here is a photo of the hotel." in sent and "Current message:" in sent
    assert done.stdout.strip(), "the real model answered"
