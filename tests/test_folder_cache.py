"""A sync lists a folder again only when its stamp moved (FolderCache): nothing a person does in a
folder (add, remove, rename, link a file) is missed, and an unchanged vault is not listed at all."""

from __future__ import annotations

import time

import pytest

from memvault.index import catchup
from memvault.index.catchup import FOLDER_CACHE, sync
from memvault.index.store import IndexStore
from memvault.vault.format import layout, listing
from memvault.vault.format.entry import Entry
from memvault.vault.format.reading import LINK_REASON
from memvault.vault.write.store import Vault
from tests.support.fakes import WordEmbedder, put

TICK = 0.05  # longer than the racy window below: a folder changed before it is trusted


@pytest.fixture
def vault(tmp_path, monkeypatch):
    monkeypatch.setattr(catchup, "RACY_NS", 20_000_000)  # 20 ms, so a test need not wait 2 s for trust
    return Vault.init(tmp_path / "vault")


@pytest.fixture
def index(vault):
    embedder = WordEmbedder()
    store = IndexStore.open(vault.state_dir, embedder.identity, embedder.dims)
    yield store, embedder
    store.close()


def listed_entry_folders(monkeypatch) -> list[str]:
    """The entry folders `_scan` lists from now on (core/ and journal/ are not cached: a few files)."""
    seen: list[str] = []
    scan = listing._scan

    def spy(root, folder, links, shape):
        if folder.startswith(layout.ENTRIES):
            seen.append(folder)
        return scan(root, folder, links, shape)

    monkeypatch.setattr(listing, "_scan", spy)
    return seen


def settled(vault, index, count: int) -> None:
    """Files written, synced, and their folders' listings kept (older than the racy window)."""
    store, embedder = index
    for i in range(count):
        put(vault, Entry(text=f"fact {i} about topic{i}", conversation_id="work" if i % 2 else "home"))
    time.sleep(TICK)
    assert sync(vault, store, embedder).added == count
    time.sleep(TICK)


def test_an_unchanged_vault_is_not_listed_again(vault, index, monkeypatch):
    settled(vault, index, 6)
    store, embedder = index
    sync(vault, store, embedder)  # folders now older than the window: their listings are kept
    listed = listed_entry_folders(monkeypatch)
    report = sync(vault, store, embedder)
    assert (report.unchanged, report.added, report.removed, listed) == (6, 0, 0, [])
    assert (vault.state_dir / FOLDER_CACHE).is_file()


def test_what_a_person_does_in_a_listed_folder_is_found(vault, index, monkeypatch):
    settled(vault, index, 6)
    store, embedder = index
    sync(vault, store, embedder)
    files = sorted((vault.root / layout.ENTRIES).rglob("*.md"))
    gone, renamed, linked_to = files[0], files[1], files[2]
    gone.unlink()
    renamed.rename(renamed.with_name("by-hand.md"))  # same id, a name memvault did not give it
    new = put(vault, Entry(text="a fact added by hand", conversation_id="work"))
    link = linked_to.with_name("a-link.md")
    link.symlink_to(linked_to)
    listed = listed_entry_folders(monkeypatch)
    report = sync(vault, store, embedder)
    assert (report.removed, report.moved, report.added, report.unchanged) == (1, 1, 1, 4)
    assert (str(link.relative_to(vault.root)), LINK_REASON) in report.broken
    assert store.by_id(new.name.rsplit("__", 1)[1][:-3]) is not None
    assert {str(p.parent.relative_to(vault.root)) for p in (gone, renamed, link)} <= set(listed)  # listed again

def test_a_folder_changed_within_the_racy_window_is_listed_every_time(vault, index, monkeypatch):
    store, embedder = index
    put(vault, Entry(text="a fact", conversation_id="work"))
    sync(vault, store, embedder)  # no sleep: the folders are too new to be trusted
    listed = listed_entry_folders(monkeypatch)
    sync(vault, store, embedder)
    assert listed  # listed again, not taken from the cache


def test_a_damaged_cache_is_listed_afresh(vault, index):
    settled(vault, index, 4)
    store, embedder = index
    (vault.state_dir / FOLDER_CACHE).write_bytes(b"\x00not a cache")
    assert sync(vault, store, embedder).unchanged == 4
    assert catchup.read_folder_cache(vault.state_dir)  # written again
