"""sync.diff is pure: these tests build snapshots and index rows by hand, with no files and no index."""

from __future__ import annotations

from pathlib import PurePosixPath

from memvault.index.catchup import RACY_NS, ScannedFile, Snapshot, diff
from memvault.index.rows import IndexedFile
from memvault.vault.format.entry import Entry
from memvault.vault.format.reading import LINK_REASON

STARTED = 10 * RACY_NS  # when the pretend scan began
OLD = STARTED - 5 * RACY_NS  # an mtime safely before it
FACTS = "entries/default/facts"


def rel(name: str) -> PurePosixPath:
    return PurePosixPath(f"{FACTS}/{name}.md")


def row(memory_id: str, file_hash: str, mtime_ns: int = OLD, size: int = 10, rowid: int = 1) -> IndexedFile:
    return IndexedFile(rowid=rowid, id=memory_id, file_hash=file_hash, text_hash="t", mtime_ns=mtime_ns, size=size)


def read(name: str, entry: Entry, file_hash: str, mtime_ns: int = OLD, size: int = 10) -> ScannedFile:
    """A file the scan hashed and parsed (its bytes differ from the index)."""
    return ScannedFile(rel(name), mtime_ns, size, file_hash=file_hash, entry=entry)


def snapshot(*files: ScannedFile, links: tuple[str, ...] = ()) -> Snapshot:
    return Snapshot(files=files, links=links, started_ns=STARTED)


def test_a_file_the_index_lacks_is_new_and_a_row_without_a_file_is_removed():
    fresh, gone = Entry(text="fresh"), Entry(text="gone")
    plan = diff(snapshot(read("a", fresh, "h1")), {str(rel("b")): row(gone.id, "h2")})
    assert [p.entry.id for p in plan.new] == [fresh.id]
    assert plan.new[0].mtime_ns == OLD  # an old stamp is trusted and recorded
    assert plan.removed == (gone.id,)
    assert not plan.changed and not plan.moved and not plan.is_empty


def test_other_bytes_at_an_indexed_path_are_a_change():
    entry = Entry(text="edited")
    plan = diff(snapshot(read("a", entry, "new-hash", mtime_ns=OLD + 1)), {str(rel("a")): row(entry.id, "old-hash")})
    assert [(str(p.rel), p.file_hash) for p in plan.changed] == [(str(rel("a")), "new-hash")]
    assert not plan.new and not plan.removed


def test_an_id_whose_old_path_is_gone_is_a_move_not_a_removal():
    entry = Entry(text="travels")
    plan = diff(snapshot(read("b", entry, "h")), {str(rel("a")): row(entry.id, "h-old")})
    assert [str(p.rel) for p in plan.moved] == [str(rel("b"))]
    assert plan.removed == () and plan.new == ()


def test_a_file_whose_stat_matched_was_not_read_and_is_unchanged():
    indexed = {str(rel("a")): row("id-a", "h")}
    plan = diff(snapshot(ScannedFile(rel("a"), OLD, 10)), indexed)  # no hash: the scan trusted the stat
    assert plan.unchanged == 1 and plan.is_empty and plan.restat == ()


def test_same_bytes_with_a_new_stat_are_unchanged_and_restamped():
    indexed = {str(rel("a")): row("id-a", "h", mtime_ns=OLD, size=10)}
    touched = ScannedFile(rel("a"), OLD + 7, 10, file_hash="h")
    plan = diff(snapshot(touched), indexed)
    assert plan.unchanged == 1 and plan.is_empty
    assert plan.restat == ((str(rel("a")), OLD + 7, 10),)


def test_a_racy_timestamp_is_recorded_as_zero_so_the_next_sync_hashes_again():
    indexed = {str(rel("a")): row("id-a", "h")}
    racy = ScannedFile(rel("a"), STARTED - RACY_NS // 2, 10, file_hash="h")  # modified just before the scan
    assert diff(snapshot(racy), indexed).restat == ((str(rel("a")), 0, 10),)
    entry = Entry(text="new and racy")
    plan = diff(snapshot(read("b", entry, "h2", mtime_ns=STARTED + 1)), {})
    assert plan.new[0].mtime_ns == 0


def test_an_indexed_row_stored_without_a_stamp_is_never_trusted_on_stat():
    indexed = {str(rel("a")): row("id-a", "h", mtime_ns=0, size=10)}
    entry = Entry(text="x")
    plan = diff(snapshot(read("a", entry, "h2", mtime_ns=0)), indexed)
    assert len(plan.changed) == 1


def test_problems_and_links_are_reported_and_their_rows_kept():
    indexed = {str(rel("big")): row("id-big", "h")}
    files = (ScannedFile(rel("big"), OLD, 10**9, problem="too large"),
             ScannedFile(rel("bad"), OLD, 5, file_hash="x", problem="no front matter"))
    plan = diff(snapshot(*files, links=("entries/default/facts/link.md",)), indexed)
    assert dict(plan.broken) == {str(rel("big")): "too large", str(rel("bad")): "no front matter",
                                 "entries/default/facts/link.md": LINK_REASON}
    assert plan.removed == ()  # a file that is there but unreadable is not "gone"
    assert plan.is_empty


def test_a_copied_file_with_an_indexed_id_is_reported_not_indexed():
    entry = Entry(text="twice")
    indexed = {str(rel("a")): row(entry.id, "h")}
    plan = diff(snapshot(ScannedFile(rel("a"), OLD, 10), read("copy", entry, "h")), indexed)
    assert plan.broken == ((str(rel("copy")), f"duplicate id {entry.id}: also in {rel('a')}"),)
    assert plan.is_empty


def test_an_empty_vault_and_an_empty_index_agree():
    plan = diff(snapshot(), {})
    assert plan.is_empty and plan.unchanged == 0 and plan.broken == ()
