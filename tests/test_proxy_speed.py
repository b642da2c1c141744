"""What a proxy request costs, kept low without giving anything up: turns committed in paced group
commits (every turn committed, a kill -9 loses none), concurrent query embeddings in one model call
(the same vectors), and a watcher the server's own reads do not wake. Real files, git, model, HTTP."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from memvault.converse import ChatTurn, MemoryChat
from memvault.core import Memvault
from memvault.errors import EmbeddingError
from memvault.models.embedders import load_embedder
from memvault.models.query_batcher import QueryBatcher, batched
from memvault.server import turns as server_turns
from memvault.server.run import running
from memvault.server.turns import TurnCommitter
from tests.support.crash import kill_when_ready
from tests.support.server import server_settings
from tests.support.upstream import INSTANT_TEXT, Upstream, chat_concurrently, serving
from tests.test_server_turns import git, wait_until


def chat_subjects(vault: Path) -> list[str]:
    return [s for s in git(vault, "log", "--format=%s").splitlines() if s.startswith("memvault chat:")]


def committed_ids(vault: Path) -> set[str]:
    """Ids of every entry an ADD event of the log names."""
    return {line.split()[-1] for line in git(vault, "log", "--format=%B").splitlines()
            if line.startswith("Memvault-Event: ADD")}


def turn_entries(core: Memvault, conversation: str, said: str):
    return MemoryChat(core, conversation).turn_entries(ChatTurn(messages=[]), said, f"answer to {said}")


# -- group commit ---------------------------------------------------------------------------------------
def test_a_lone_turn_commits_at_once_and_turns_in_a_busy_spell_share_the_next_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(server_turns, "COMMIT_INTERVAL", 3.0)
    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    vault = core.vault.root
    committer = TurnCommitter(core)
    try:
        started = time.monotonic()
        committer.store("a", turn_entries(core, "a", "first"))
        assert wait_until(lambda: len(chat_subjects(vault)) == 1, 2.5)  # not held for the interval
        assert time.monotonic() - started < 2.5
        spell = []
        for n in range(3):  # arriving one by one, after the first commit: paced into one commit
            spell += turn_entries(core, "b", f"busy {n}")
            committer.store("b", spell[-2:])
            time.sleep(0.1)
        assert len(chat_subjects(vault)) == 1  # written (fsynced), not committed yet
        assert all((vault / core.vault.path_of(entry.id)).exists() for entry in spell)
    finally:
        committer.close()
    assert chat_subjects(vault) == ["memvault chat: 3 turns in b", "memvault chat: turn in a"]
    assert {entry.id for entry in spell} <= committed_ids(vault)
    assert not git(vault, "status", "--porcelain", "--untracked-files=all")
    core.close()


def test_four_concurrent_proxy_requests_are_all_stored_committed_and_indexed(tmp_path, monkeypatch):
    monkeypatch.setattr(server_turns, "COMMIT_INTERVAL", 5.0)  # whatever the machine's pace: one spell
    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(tmp_path / "vault", root + "/v1", llm_key="k")
        vault = Path(settings.vault.path)
        with running(settings) as url:
            replies = chat_concurrently(url, [(f"concurrent question {n}", f"conv{n}") for n in range(4)])
            assert replies == [INSTANT_TEXT] * 4
        # The server stopped: its last commit came first.
    assert not git(vault, "status", "--porcelain", "--untracked-files=all")
    core = Memvault.open(settings)
    user_turns = [entry for _, entry in core.list(role="user").entries]
    assert {entry.text for entry in user_turns} == {f"concurrent question {n}" for n in range(4)}
    assert {entry.id for entry in user_turns} <= committed_ids(vault)  # git log shows every turn
    assert len(committed_ids(vault)) >= 8  # and every answer
    assert 1 <= len(chat_subjects(vault)) <= 2  # the first commit, then one for the rest
    for n in range(4):
        assert f"concurrent question {n}" in {hit.text for hit in core.search(f"concurrent question {n}", f"conv{n}",
                                                                               score_threshold=0.0)}
    core.close()


CRASH_SCRIPT = """
import subprocess, sys, time
from memvault.converse import ChatTurn, MemoryChat
from memvault.core import Memvault
from memvault.server import turns
from tests.support.server import server_settings

turns.COMMIT_INTERVAL = 600.0  # the busy spell's commit never comes before the kill
core = Memvault.open(server_settings(sys.argv[1]), create=True)
committer = turns.TurnCommitter(core)
chat = MemoryChat(core, "crash")
committer.store("crash", chat.turn_entries(ChatTurn(messages=[]), "committed before", "yes"))
while "turn in crash" not in subprocess.run(["git", "-C", sys.argv[1], "log", "--format=%s"],
                                           capture_output=True, text=True).stdout:
    time.sleep(0.02)
for n in range(3):
    committer.store("crash", chat.turn_entries(ChatTurn(messages=[]), f"said before the crash {n}", "ok"))
print("ready", flush=True)  # answered: fsynced, not committed
time.sleep(600)
"""


def test_a_kill_9_between_answer_and_commit_loses_no_turn(tmp_path):
    vault = tmp_path / "vault"
    kill_when_ready(CRASH_SCRIPT, str(vault), ready="ready")
    left = [line for line in git(vault, "status", "--porcelain", "--untracked-files=all").splitlines()
            if "/turns/" in line]
    assert len(left) == 6  # three turns of two files each: on disk, uncommitted

    with running(server_settings(vault)):  # the next start commits what the crash left
        pass
    assert not git(vault, "status", "--porcelain", "--untracked-files=all")
    core = Memvault.open(server_settings(vault))
    said = {hit.text for hit in core.search("said before the crash", "crash", score_threshold=0.0, top_k=10)}
    assert {f"said before the crash {n}" for n in range(3)} <= said
    core.close()
    assert len(committed_ids(vault)) == 8


# -- concurrent query embeddings ------------------------------------------------------------------------
class SlowCountingModel:
    """The real model, counted, each call held a moment so that asks made meanwhile pile up."""

    def __init__(self, model, fail: bool = False) -> None:
        self.model = model
        self.calls: list[int] = []
        self.fail = fail

    def __getattr__(self, name):
        return getattr(self.model, name)

    def embed(self, texts, kind="passage"):
        self.calls.append(len(texts))
        time.sleep(0.2)
        if self.fail:
            raise EmbeddingError("the model failed")
        return self.model.embed(texts, kind)


def ask_concurrently(embedder, texts: list[str]) -> dict[int, np.ndarray | BaseException]:
    results: dict[int, np.ndarray | BaseException] = {}

    def ask(n: int) -> None:
        try:
            results[n] = embedder.embed([texts[n]], kind="query")
        except BaseException as exc:  # noqa: BLE001 - compared below
            results[n] = exc

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
        time.sleep(0.01)
    for thread in threads:
        thread.join(60)
    return results


def test_concurrent_query_embeddings_share_model_calls_and_give_the_vectors_of_one_at_a_time():
    model = load_embedder("minilm")
    texts = [f"what does Alice think of Lisbon, take {n}?" for n in range(7)] + ["the same words"] * 3
    alone = {text: model.embed([text], kind="query") for text in set(texts)}
    counted = SlowCountingModel(model)
    results = ask_concurrently(QueryBatcher(counted), texts)

    assert sorted(results) == list(range(len(texts)))
    for n, text in enumerate(texts):
        assert results[n].shape == (1, model.dims)
        np.testing.assert_allclose(results[n], alone[text], atol=1e-6)
    assert len(counted.calls) < len(texts) / 2  # asks made while the model ran went in together
    assert sum(counted.calls) <= len(set(texts)) + 1  # a text asked twice at once is embedded once
    assert counted.calls[0] == 1  # the first asker did not wait for company


def test_a_failing_model_fails_every_asker_of_its_batch_and_the_next_asks_still_work():
    model = load_embedder("minilm")
    counted = SlowCountingModel(model, fail=True)
    embedder = QueryBatcher(counted)
    results = ask_concurrently(embedder, [f"question {n}" for n in range(4)])
    assert all(isinstance(result, EmbeddingError) for result in results.values())
    counted.fail = False
    np.testing.assert_allclose(embedder.embed(["question 0"], kind="query"),
                               model.embed(["question 0"], kind="query"), atol=1e-6)
    np.testing.assert_allclose(embedder.embed(["a passage", "another"]), model.embed(["a passage", "another"]),
                               atol=1e-6)  # passages and batches go straight to the model


def test_every_search_of_a_process_shares_one_batcher_of_the_model(tmp_path):
    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    embedder = core.embedder()
    assert isinstance(embedder, QueryBatcher) and core.embedder() is embedder and batched(embedder) is embedder
    assert embedder.identity == load_embedder("minilm").identity  # the model's own identity: no re-embedding
    core.close()


# -- the watcher and the server's own reads ------------------------------------------------------------
def test_reading_watched_files_wakes_no_watcher_event(tmp_path, monkeypatch):
    from memvault.index import watch

    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    folder = core.vault.root / "entries" / "notes"
    folder.mkdir(parents=True)
    files = [folder / f"n{n}.md" for n in range(10)]
    for path in files:
        path.write_text("a note\n")
    seen: list[str] = []
    dispatch = watch._Collector.dispatch

    def counting(self, event) -> None:
        seen.append(event.event_type)
        dispatch(self, event)

    monkeypatch.setattr(watch._Collector, "dispatch", counting)
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=watch.watch, args=(core.vault, lambda paths: None),
                              kwargs={"stop_event": stop, "ready": ready}, daemon=True)
    thread.start()
    try:
        assert ready.wait(10)
        for _ in range(5):
            for path in files:
                path.read_bytes()
        time.sleep(0.5)
        assert seen == []  # forty reads, no event to parse and drop
        files[0].write_text("an edit\n")
        assert wait_until(lambda: "modified" in seen, 10)  # changes are still seen
    finally:
        stop.set()
        thread.join(10)
    core.close()
