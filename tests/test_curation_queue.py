"""A curation that fails stays queued: tried again after a back-off, set aside as poison after
MAX_FAILURES tries and shown by doctor, never struck off unseen (issue 23, item 1)."""

from __future__ import annotations

import time

import httpx

from memvault.core import Memvault
from memvault.curate import queue as queue_module
from memvault.curate.queue import MAX_FAILURES, CurationQueue, retry_delay
from memvault.server.run import running
from tests.support.cli import Cli
from tests.support.crash import FactUpstream
from tests.support.server import server_settings
from tests.support.upstream import serving

MESSAGES = [{"role": "user", "content": "hi"}]


def test_a_failed_curation_stays_queued_and_poison_is_set_aside_not_dropped(tmp_path):
    queue = CurationQueue(tmp_path)
    queue.add("t1", "chat", {}, MESSAGES)
    queue.add("t2", "chat", {}, MESSAGES)
    assert queue.failed("t1", "git cat-file died") == 1
    assert [r["turn"] for r in queue.pending()] == ["t1", "t2"]  # one failure: still to curate
    for _ in range(MAX_FAILURES - 1):
        queue.failed("t1", "the LLM is down")
    assert [r["turn"] for r in queue.pending()] == ["t2"]
    [poison] = queue.poisoned()
    assert (poison["turn"], poison["failures"], poison["error"]) == ("t1", MAX_FAILURES, "the LLM is down")
    assert [r["turn"] for r in queue.compact()] == ["t2"]  # compacting keeps the poison and its count
    assert [r["turn"] for r in queue.poisoned()] == ["t1"]
    queue.retry(["t1"])
    assert [r["turn"] for r in queue.pending()] == ["t1", "t2"]
    assert retry_delay(1) < retry_delay(2) < retry_delay(3) <= queue_module.LONGEST_DELAY


def test_doctor_shows_poison_and_fix_queues_it_again(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    queue = CurationQueue(cli.vault / ".memvault")
    queue.add("t1", "chat", {}, MESSAGES)
    for _ in range(MAX_FAILURES):
        queue.failed("t1", "index locked")
    checks = {c["name"]: c for c in cli("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert checks["curation queue"]["status"] == "warn"
    assert "index locked" in checks["curation queue"]["detail"]
    cli("doctor", "--fix", "--no-llm-check")
    assert [r["turn"] for r in queue.pending()] == ["t1"]


def test_the_proxy_retries_a_failed_curation_and_strikes_it_off_only_once_done(tmp_path, monkeypatch):
    """The first two curations of the turn fail (as when a stop killed git's helpers): the turn stays
    queued, is tried again after the back-off, and its fact is stored on the third try."""
    monkeypatch.setattr(queue_module, "FIRST_DELAY", 0.2)
    real = Memvault.policy_add
    calls: list[int] = []

    def flaky(self, *args, **kwargs):
        calls.append(1)
        if len(calls) <= 2:
            raise BrokenPipeError(32, "Broken pipe")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Memvault, "policy_add", flaky)
    vault = tmp_path / "vault"
    with serving(FactUpstream().app()) as upstream:
        settings = server_settings(vault, api_base=upstream + "/v1", model="openai/fake", llm_key="k")
        with running(settings) as url:
            answer = httpx.post(url + "/v1/chat/completions", timeout=60, json={
                "model": "fake", "messages": [{"role": "user", "content": "Ada keeps bees"}], "memory_id": "bees"})
            assert answer.status_code == 200
            deadline = time.monotonic() + 60
            while not facts(vault) and time.monotonic() < deadline:
                time.sleep(0.1)
    assert len(calls) == 3
    assert facts(vault) == {"The user said: Ada keeps bees."}
    queue = CurationQueue(vault / ".memvault")
    assert queue.pending() == [] and queue.poisoned() == []


def facts(vault) -> set[str]:
    found = Cli(vault)("list", "--json", "--role", "memory")
    return {m["text"] for m in found.json()} if found.exit_code == 0 else set()


def test_a_start_that_cannot_undo_a_cut_write_leaves_the_queued_turns_queued(tmp_path, monkeypatch):
    """Were the half-written files of a cut curation still there, the index would read them and the
    turn would be struck off as curated: the curation waits for a start that can undo them."""
    from memvault.errors import VaultError

    def stuck(self):
        raise VaultError("git process 4242 is still working in the vault's repository")

    vault = tmp_path / "vault"
    Cli(vault).ok("init")
    CurationQueue(vault / ".memvault").add("t1", "chat", {}, MESSAGES)
    monkeypatch.setattr(Memvault, "finish_interrupted_write", stuck)
    with serving(FactUpstream().app()) as upstream:
        settings = server_settings(vault, api_base=upstream + "/v1", model="openai/fake", llm_key="k")
        with running(settings):
            time.sleep(1.0)  # what a resumed curation would have had time to do
    assert [record["turn"] for record in CurationQueue(vault / ".memvault").pending()] == ["t1"]
