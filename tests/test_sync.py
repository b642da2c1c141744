"""Hash-based incremental sync between the vault's files and the index (real files, real sqlite-vec).

`WordEmbedder` is a tiny deterministic model (hashed bag of words) that counts the texts it embeds:
the count is what proves a sync did, or did not, re-embed.
"""

from __future__ import annotations

import importlib.util
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import PurePosixPath

import pytest

from memvault.index import catchup as sync_module
from memvault.index.catchup import hash_file, index_entries, plan, sync, unindex
from memvault.index.store import FILE_NAME, IndexStore
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault
from tests.support.fakes import DIMS, WordEmbedder, put  # noqa: E402,F401


def age(vault: Vault, rel: PurePosixPath, seconds: float = 3600) -> None:
    """Make a file look old (a real vault's files are older than the racy-stat window)."""
    stamp = time.time() - seconds
    os.utime(vault.root / rel, (stamp, stamp))


@pytest.fixture
def vault(tmp_path):
    return Vault.init(tmp_path / "vault")


@pytest.fixture
def embedder():
    return WordEmbedder()


@pytest.fixture
def index(vault, embedder):
    store = IndexStore.open(vault.state_dir, embedder.identity, embedder.dims)
    yield store
    store.close()


def seed(vault, n=6):
    entries = [Entry(text=f"fact number {i} about topic{i}", conversation_id="work" if i % 2 else "global")
               for i in range(n)]
    return [(put(vault, e), e) for e in entries]


def test_second_sync_embeds_nothing_and_edits_embed_only_what_changed(vault, index, embedder):
    files = seed(vault)
    first = sync(vault, index, embedder)
    assert (first.added, first.embedded, first.rebuilt) == (6, 6, True)
    assert index.count() == 6

    again = sync(vault, index, embedder)
    assert (again.embedded, again.unchanged, again.added, again.rebuilt) == (0, 6, 0, False)

    rel, entry = files[0]
    put(vault, entry.replace(text="fact number 0 was rewritten by hand"))
    edited = sync(vault, index, embedder)
    assert (edited.updated, edited.embedded, edited.unchanged) == (1, 1, 5)
    assert index.by_id(entry.id)["text"] == "fact number 0 was rewritten by hand"
    assert index.lexical("rewritten", 5) and index.rows([r for r, _ in index.lexical("rewritten", 5)])[
        index.lexical("rewritten", 5)[0][0]]["id"] == entry.id


def test_front_matter_only_edit_updates_row_without_embedding(vault, index, embedder):
    (rel, entry), *_ = seed(vault, 2)
    sync(vault, index, embedder)
    put(vault, entry.replace(user_id="alice", metadata={"topic": "tea"}))
    report = sync(vault, index, embedder)
    assert (report.updated, report.embedded) == (1, 0)
    row = index.by_id(entry.id)
    assert row["user_id"] == "alice" and row["metadata"] == {"topic": "tea"}
    assert index.dense(embedder.embed([entry.text])[0], 1, "e.user_id = ?", ("alice",))[0][0] == row["rowid"]


def test_hand_added_file_is_picked_up_and_hand_deleted_file_dropped(vault, index, embedder):
    files = seed(vault, 3)
    sync(vault, index, embedder)
    note = PurePosixPath("entries/work/facts/my-own-note.md")
    (vault.root / note).write_text("Plain text written in an editor, no front matter.\n", encoding="utf-8")
    (vault.root / files[0][0]).unlink()
    report = sync(vault, index, embedder)
    assert (report.added, report.removed, report.embedded) == (1, 1, 1)
    assert index.by_id(files[0][1].id) is None
    hit = index.lexical("editor", 3)
    assert index.rows([hit[0][0]])[hit[0][0]]["path"] == str(note)
    assert index.count() == 3


def test_moved_file_is_not_re_embedded(vault, index, embedder):
    (rel, entry), *_ = seed(vault, 3)
    sync(vault, index, embedder)
    target = vault.root / "entries" / "work" / "facts" / f"renamed__{entry.id}.md"
    (vault.root / rel).rename(target)
    report = sync(vault, index, embedder)
    assert (report.moved, report.embedded, report.removed, report.added) == (1, 0, 0, 0)
    assert index.by_id(entry.id)["path"] == str(target.relative_to(vault.root).as_posix())
    assert index.count() == 3


def test_tombstones_are_not_indexed(vault, index, embedder):
    seed(vault, 2)
    gone = Entry(text="soft deleted memory", conversation_id="work", deleted_at=datetime.now(timezone.utc))
    put(vault, gone)
    report = sync(vault, index, embedder)
    assert report.added == 2 and index.by_id(gone.id) is None


def test_broken_front_matter_is_reported_and_skipped(vault, index, embedder):
    files = seed(vault, 3)
    bad = PurePosixPath("entries/work/facts/broken.md")
    (vault.root / bad).write_text("---\nid: [unclosed\nrole: memory\n---\n\nbody\n", encoding="utf-8")
    report = sync(vault, index, embedder)
    assert report.added == 3 and [path for path, _ in report.broken] == [str(bad)]
    assert "front matter" in report.broken[0][1]

    # An indexed file a person breaks keeps its last good version searchable, and is reported.
    rel, entry = files[0]
    (vault.root / rel).write_text("---\nid: [oops\n---\n", encoding="utf-8")
    report = sync(vault, index, embedder)
    assert sorted(path for path, _ in report.broken) == sorted([str(bad), str(rel)])
    assert report.removed == 0 and index.by_id(entry.id)["text"] == entry.text


def test_copied_file_with_same_id_is_reported_not_indexed(vault, index, embedder):
    (rel, entry), *_ = seed(vault, 2)
    sync(vault, index, embedder)
    copy = rel.with_name("copy.md")
    (vault.root / copy).write_bytes((vault.root / rel).read_bytes())
    report = sync(vault, index, embedder)
    assert report.broken == ((str(copy), f"duplicate id {entry.id}: also in {rel}"),)
    assert index.by_id(entry.id)["path"] == str(rel) and index.count() == 2


def open_index(vault, embedder):
    return IndexStore.open(vault.state_dir, embedder.identity, embedder.dims)


def test_model_identity_change_re_embeds_everything(vault, embedder):
    seed(vault, 4)
    with open_index(vault, embedder) as index:
        sync(vault, index, embedder)
    other = WordEmbedder(name="other", dims=16)
    with open_index(vault, other) as reopened:
        assert reopened.rebuilt and "embedding model changed" in reopened.rebuild_reason
        report = sync(vault, reopened, other)
        assert (report.embedded, report.rebuilt) == (4, True)
        assert {len(v) for v in reopened.vectors([1, 2, 3, 4, 5, 6, 7, 8]).values()} == {16}


def test_corrupt_index_file_is_rebuilt_and_resynced(vault, embedder):
    seed(vault, 3)
    with open_index(vault, embedder) as index:
        sync(vault, index, embedder)
    path = vault.state_dir / FILE_NAME
    path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        (vault.state_dir / (FILE_NAME + suffix)).unlink(missing_ok=True)
    with open_index(vault, embedder) as reopened:
        report = sync(vault, reopened, embedder)
        assert report.rebuilt and "set aside" in report.rebuild_reason
        assert (report.added, report.embedded, reopened.count()) == (3, 3, 3)
    assert (vault.state_dir / (FILE_NAME + ".broken")).read_bytes().startswith(b"this is not")


def test_full_sync_re_embeds_everything(vault, index, embedder):
    seed(vault, 3)
    sync(vault, index, embedder)
    report = sync(vault, index, embedder, full=True)
    assert (report.embedded, report.rebuilt, index.count()) == (3, True, 3)


def test_interrupted_sync_keeps_finished_batches(vault, index, monkeypatch):
    seed(vault, 10)
    monkeypatch.setattr(sync_module, "EMBED_CHUNK", 4)  # one model call per batch of 4

    class FailsOnThirdBatch(WordEmbedder):
        def embed(self, texts, kind="passage"):
            if self.calls == 2:
                raise RuntimeError("power cut")
            return super().embed(texts, kind)

    with pytest.raises(RuntimeError):
        sync(vault, index, FailsOnThirdBatch())
    assert index.count() == 8  # two batches of 4 were committed
    resumed = WordEmbedder()
    assert sync(vault, index, resumed).embedded == 2


def test_same_size_edit_right_after_sync_is_caught(vault, index, embedder):
    """A file written just now may be rewritten within the same mtime tick: its stat is not trusted."""
    (rel, entry), *_ = seed(vault, 1)
    sync(vault, index, embedder)
    path = vault.root / rel
    before = path.stat()
    put(vault, entry.replace(text=entry.text.replace("number", "NUMBER")))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert sync(vault, index, embedder).embedded == 1


def test_unchanged_stat_skips_hashing(vault, index, embedder, monkeypatch):
    files = seed(vault, 3)
    for rel, _ in files:
        age(vault, rel)
    sync(vault, index, embedder)
    assert all(f.mtime_ns for f in index.files().values())  # old files: stat trusted
    hashed, real_hash = [], sync_module.hash_bytes
    monkeypatch.setattr(sync_module, "hash_bytes", lambda data: hashed.append(data) or real_hash(data))
    result = plan(vault, index)
    assert (result.unchanged, result.broken, len(hashed)) == (3, (), 0)  # no file read
    age(vault, files[0][0], seconds=7200)  # touched: another stat, the same bytes
    result = plan(vault, index)
    assert (result.unchanged, len(hashed)) == (3, 1) and [path for path, _, _ in result.restat] == [str(files[0][0])]


def test_write_path_indexes_at_once_and_sync_then_embeds_nothing(vault, index, embedder):
    entry = Entry(text="written by memvault add", conversation_id="work")
    rel = put(vault, entry)
    assert index_entries(index, embedder, [(rel, entry, hash_file(vault.root / rel))]) == 1
    assert index.by_id(entry.id)["path"] == str(rel)
    report = sync(vault, index, embedder)
    assert (report.embedded, report.unchanged) == (0, 1)
    assert unindex(index, [entry.id]) == 1 and index.count() == 0


def test_no_change_sync_of_10k_files(tmp_path, monkeypatch):
    """The design target: confirming that 10k files are unchanged takes about a second, because
    no file is even opened when its stat matches."""
    vault = Vault.init(tmp_path / "big")
    created = datetime(2024, 1, 1, tzinfo=timezone.utc)
    written = []
    for c in range(20):
        folder = vault.root / "entries" / f"conv{c}" / "facts"
        folder.mkdir(parents=True)
        for i in range(500):
            entry = Entry(text=f"memory {c}-{i} about item{i}", conversation_id=f"conv{c}",
                          created_at=created + timedelta(seconds=i))
            rel = PurePosixPath("entries", f"conv{c}", "facts", f"{layout.file_stamp(entry)}__{entry.id}.md")
            # A minimal hand-made file: rendering 10k files through YAML would dominate the test.
            data = (f"---\nid: {entry.id}\nrole: memory\nconversation_id: conv{c}\n"
                    f"created_at: '2024-01-01'\n---\n\n{entry.text}\n")
            (vault.root / rel).write_text(data, encoding="utf-8")
            age(vault, rel)
            written.append((rel, entry, hash_file(vault.root / rel)))
    embedder = WordEmbedder(batch_size=1000)
    with open_index(vault, embedder) as index:
        index_entries(index, embedder, written)  # as the write path leaves them: stat not yet recorded
        first = sync(vault, index, embedder)
        assert (first.unchanged, first.embedded) == (10_000, 0)
        hashed, real_hash = [], sync_module.hash_bytes
        monkeypatch.setattr(sync_module, "hash_bytes", lambda data: hashed.append(1) or real_hash(data))
        timings = []
        for _ in range(3):
            started = time.perf_counter()
            report = sync(vault, index, embedder)
            timings.append(time.perf_counter() - started)
    print(f"\nno-change sync of 10k files: best {min(timings):.3f} s of {[round(t, 3) for t in timings]}")
    assert (report.unchanged, report.embedded, len(hashed)) == (10_000, 0, 0)
    assert min(timings) < 5.0  # about 0.3 s on an idle 2-core machine; the margin is for a busy one


@pytest.mark.skipif(importlib.util.find_spec("memvault.models.embedders") is None, reason="no embedders module")
def test_real_minilm_embedder_end_to_end(vault):
    from memvault.models.embedders import load_embedder

    model = load_embedder("minilm")
    texts = ["Alice adopted a golden retriever puppy", "The quarterly tax report is due in April",
             "Bob is learning to play the violin"]
    for text in texts:
        put(vault, Entry(text=text, conversation_id="work"))
    with open_index(vault, model) as index:
        assert sync(vault, index, model).embedded == 3
        query = model.embed(["which pet does alice have?"], kind="query")[0]
        best = index.dense(query, 1, "e.conversation_id = ?", ("work",))[0][0]
        assert index.rows([best])[best]["text"] == texts[0]
        assert sync(vault, index, model).embedded == 0
