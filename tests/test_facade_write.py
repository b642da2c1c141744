"""`Storage.write`, core's own (no door's: the facade has no `write`): the one way a change reaches the
vault. A transaction (one commit with the given subject and trailers, everything undone on an error),
then the index told what it touched. The storage service is built alone, with the search service
beside it to read the index back."""

from __future__ import annotations

import subprocess

import pytest

from memvault import settings
from memvault.core.base import Storage
from memvault.core.searching import Searching
from memvault.index import journal
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault


@pytest.fixture
def core(tmp_path):
    storage = Storage(settings.load(None, {"vault.path": str(tmp_path / "vault")}), Vault.init(tmp_path / "vault"))
    yield storage
    storage.close()


def git(core, *args: str) -> str:
    return subprocess.run(["git", "-C", str(core.root), *args], capture_output=True, text=True, check=True).stdout


def test_a_write_is_one_commit_and_the_open_index_follows_it_at_once(core):
    core.index()  # open: a write is embedded now, not left in the journal for the next search
    entry = Entry(text="The user keeps bees on the roof", conversation_id="garden")
    with core.write("add", "memvault add: bees", "garden") as tx:
        tx.write(entry, event="ADD")
    assert tx.commit_sha == git(core, "rev-parse", "HEAD").strip()
    message = git(core, "log", "-1", "--format=%B")
    assert message.startswith("memvault add: bees\n")
    assert "Memvault-Operation: add" in message and f"Memvault-Event: ADD {entry.id}" in message
    assert "Memvault-Conversation: garden" in message
    assert journal.peek(core.state_dir) == {}  # the index was told: nothing waits for a catch-up
    assert [row["id"] for row in Searching(core).select({}, role="memory")] == [entry.id]


def test_a_write_that_fails_leaves_no_commit_no_file_and_tells_the_index_nothing_new(core):
    head = git(core, "rev-parse", "HEAD").strip()
    entry = Entry(text="A fact that never lands", conversation_id="c")
    with pytest.raises(RuntimeError), core.write("add", "memvault add: never") as tx:
        rel = tx.write(entry, event="ADD")
        assert (core.root / rel).is_file()
        raise RuntimeError("the caller failed mid-way")
    assert git(core, "rev-parse", "HEAD").strip() == head
    assert not (core.root / rel).exists()
    assert tx.commit_sha is None
    assert Searching(core).select({}, role="memory") == []
