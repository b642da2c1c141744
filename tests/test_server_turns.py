"""Proxy turns: on disk before the answer, committed just after it, many turns to a commit, and
committed at the next start if the server stopped in between. Real files, real git, a real server."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from memvault.converse import ChatTurn, MemoryChat
from memvault.core import Memvault
from memvault.server.run import running
from memvault.server.turns import TurnCommitter
from tests.support.server import server_settings
from tests.support.upstream import INSTANT_TEXT, Upstream, chat_concurrently, serving


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


def wait_until(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def turn_entries(core: Memvault, conversation: str, said: str):
    return MemoryChat(core, conversation).turn_entries(ChatTurn(messages=[]), said, f"answer to {said}")


def test_turns_written_meanwhile_share_one_commit_and_curation_follows_it(tmp_path):
    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    committer = TurnCommitter(core)
    first_committed, release = threading.Event(), threading.Event()
    followed: list[str] = []

    def hold() -> None:  # runs after the first commit: the next turns pile up meanwhile
        first_committed.set()
        release.wait(30)

    committer.store("a", turn_entries(core, "a", "one"), then=hold)
    assert first_committed.wait(60)
    for n, conversation in enumerate(["a", "b", "a"]):
        entries = turn_entries(core, conversation, f"more {n}")
        committer.store(conversation, entries, then=lambda n=n: followed.append(f"more {n}"))
        assert all((core.vault.root / core.vault.path_of(e.id)).exists() for e in entries)  # on disk at once
    assert "more" not in git(core.vault.root, "log", "-1", "--format=%s")
    release.set()
    committer.close()

    subjects = git(core.vault.root, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["memvault chat: 3 turns in a, b", "memvault chat: turn in a"]
    assert len(git(core.vault.root, "show", "--name-only", "--format=", "HEAD").split()) == 6  # 3 user + 3 assistant
    assert git(core.vault.root, "log", "-1", "--format=%B").count("Memvault-Event: ADD") == 6
    assert followed == ["more 0", "more 1", "more 2"]  # each turn handed on, after its commit
    assert not git(core.vault.root, "status", "--porcelain")
    assert {hit.text for hit in core.search("more 1", "b", score_threshold=0.0)} >= {"more 1"}  # indexed
    core.close()


def test_a_turn_removed_before_its_commit_is_skipped_not_an_error(tmp_path):
    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    entries = turn_entries(core, "a", "gone soon")
    changes = core.vault.write_new(entries)
    (core.vault.root / changes[1].rel).unlink()  # a person deleted the assistant's turn
    committed = core.vault.commit_written(changes, "memvault chat: turn in a", "chat", "a")
    assert [c.rel for c in committed] == [changes[0].rel]
    assert git(core.vault.root, "show", "--name-only", "--format=", "HEAD").split() == [str(changes[0].rel)]
    core.close()


def test_turns_left_uncommitted_by_a_hard_stop_are_committed_at_the_next_start(tmp_path):
    settings = server_settings(tmp_path / "vault")
    core = Memvault.open(settings, create=True)
    written = core.vault.write_new(turn_entries(core, "crash", "said before the crash"))
    (core.vault.root / "entries" / "notes.txt").write_text("a person's own untracked file")
    core.close()
    assert len(git(tmp_path / "vault", "status", "--porcelain", "--untracked-files=all").splitlines()) == 3

    with running(settings):
        pass
    assert git(tmp_path / "vault", "log", "-1", "--format=%s").startswith("memvault serve: 2 turn file(s)")
    # Only the turn files: what a person left untracked is theirs to commit.
    assert git(tmp_path / "vault", "status", "--porcelain", "--untracked-files=all").split() == ["??",
                                                                                               "entries/notes.txt"]
    tracked = git(tmp_path / "vault", "ls-files").split()
    assert all(str(change.rel) in tracked for change in written)


def test_the_answer_does_not_wait_for_the_commit_but_the_commit_comes(tmp_path, monkeypatch):
    # The committer is held until the answers are in: an answer that waited for its commit never comes.
    holding, release = threading.Event(), threading.Event()
    commit = TurnCommitter._commit

    def held_commit(self, turns):
        holding.set()
        release.wait(120)
        commit(self, turns)

    monkeypatch.setattr(TurnCommitter, "_commit", held_commit)
    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(tmp_path / "vault", root + "/v1", llm_key="k")
        vault = Path(settings.vault.path)
        with running(settings) as url:
            try:
                replies = chat_concurrently(url, [(f"question {n}", f"c{n % 2}") for n in range(6)], timeout=30)
                assert replies == [INSTANT_TEXT] * 6
                assert holding.is_set()  # answered while the commit was held
                untracked = git(vault, "status", "--porcelain", "--untracked-files=all").splitlines()
                assert sum("/turns/user/" in line for line in untracked) == 6  # on disk, not committed
            finally:
                release.set()
            committed = wait_until(lambda: not git(vault, "status", "--porcelain", "--untracked-files=all"))
            assert committed, "the turns were never committed"
    user_turns = [p for p in git(vault, "ls-files").split() if "/turns/user/" in p]
    assert len(user_turns) == 6
    chat_commits = [s for s in git(vault, "log", "--format=%s").splitlines() if s.startswith("memvault chat:")]
    assert 1 <= len(chat_commits) <= 2  # the first batch, then all written while it was held


def test_the_watcher_leaves_turns_in_flight_to_the_committer(tmp_path):
    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    core.index()  # built before the turns exist, as in a running server
    changes = core.vault.write_new(turn_entries(core, "a", "watch me"))
    paths = frozenset(change.rel for change in changes)
    core.resync_paths(paths, skip={str(p) for p in paths})
    assert all(core.index().by_id(c.entry.id) is None for c in changes)  # not embedded a second time
    core.resync_paths(paths)
    assert all(core.index().by_id(c.entry.id) is not None for c in changes)
    core.close()


def test_a_commit_that_fails_once_is_tried_again(tmp_path, monkeypatch):
    """A passing failure (a person's git holding a lock a moment too long) must not leave the turns
    uncommitted until the next restart."""
    from memvault.errors import VaultError

    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    commit, failures = core.commit_turns, []

    def fails_once(*args, **kwargs):
        if not failures:
            failures.append("lock")
            raise VaultError("git add failed: index.lock is held by git process 4242")
        return commit(*args, **kwargs)

    monkeypatch.setattr(core, "commit_turns", fails_once)
    committer = TurnCommitter(core)
    committer.store("retry", turn_entries(core, "retry", "kept"))
    committer.close()
    core.close()
    assert failures == ["lock"]
    assert not git(tmp_path / "vault", "status", "--porcelain", "--untracked-files=all")
    assert any(s.startswith("memvault chat:") for s in git(tmp_path / "vault", "log", "--format=%s").splitlines())
