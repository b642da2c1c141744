from datetime import timedelta

import pytest

from memvault import settings
from memvault.core import Memvault
from memvault.errors import UsageError
from memvault.vault.forget.eviction import parse_age, plan_eviction
from memvault.vault.format.entry import Entry, now
from tests.support.cli import Cli


def test_eviction_takes_the_oldest_facts_and_turns_per_conversation_and_spares_summaries():
    t0 = now()
    entries = [Entry(f"a{i}", conversation_id="a", created_at=t0 + timedelta(minutes=i)) for i in range(5)]
    entries += [Entry("turn", role="user", conversation_id="a", created_at=t0 - timedelta(days=1))]
    entries += [Entry("summary", role="summary", conversation_id="a", created_at=t0 - timedelta(days=9))]
    entries += [Entry(f"b{i}", conversation_id="b", created_at=t0 + timedelta(minutes=i)) for i in range(2)]
    evicted = plan_eviction(entries, max_entries=3)
    assert [e.text for e in evicted] == ["turn", "a0", "a1"]


@pytest.mark.parametrize("text, seconds", [("90d", 90 * 86400), ("12h", 43200), ("2w", 1209600), ("7", 604800)])
def test_ages(text, seconds):
    assert parse_age(text).total_seconds() == seconds


def test_bad_age():
    with pytest.raises(UsageError):
        parse_age("soon")


def test_gc_evicts_softly_purges_old_tombstones_and_commits(tmp_path):
    memvault = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "v")}), create=True)
    ids = [memvault.add_verbatim(f"fact {i}").id for i in range(4)]
    plan = memvault.gc(max_entries=2, dry_run=True)
    assert [e.id for e in plan.evict] == ids[:2] and len(memvault.list().entries) == 4
    memvault.gc(max_entries=2, git_gc=False)
    assert [e.text for _, e in memvault.list().entries] == ["fact 2", "fact 3"]
    tombstones = [e for _, e in memvault.list(include_deleted=True).entries if e.deleted]
    assert len(tombstones) == 2
    assert memvault.gc(max_entries=2, purge_older_than="1d", git_gc=False).purge == []
    plan = memvault.gc(max_entries=2, purge_older_than="0s", git_gc=False)
    assert len(plan.purge) == 2
    assert all(not e.deleted for _, e in memvault.list(include_deleted=True).entries)
    assert memvault.log(1)[0].trailers["Operation"] == ["gc"]


def test_gc_cli_dry_run_changes_nothing(tmp_path):
    cli = Cli(tmp_path / "v")
    cli.ok("init")
    for i in range(3):
        cli.ok("add", f"x{i}")
    out = cli.ok("gc", "--max-entries", "1", "--dry-run", "--json").json()
    assert out["dry_run"] and [r["memory"] for r in out["results"]] == ["x0", "x1"]
    assert len(cli.ok("list", "--json").json()) == 3


def test_gc_leaves_one_shared_index_part(tmp_path):
    """Each re-split of git's index writes a new shared part; git deletes the old ones after two weeks:
    at a million files ten of them were 1.6 GB of the vault's .git after `memvault gc`."""
    import subprocess

    memvault = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "v")}), create=True)
    memvault.add_verbatim("one")
    dot = tmp_path / "v" / ".git"
    for _ in range(3):  # three shared parts, as three re-splits leave them
        subprocess.run(["git", "update-index", "--split-index"], cwd=dot.parent, check=True)
        memvault.add_verbatim("more")
    assert len(list(dot.glob("sharedindex.*"))) == 3
    memvault.gc(max_entries=100)
    assert len(list(dot.glob("sharedindex.*"))) == 1
    git_status = subprocess.run(["git", "status", "--porcelain"], cwd=dot.parent, capture_output=True, text=True)
    assert git_status.returncode == 0 and git_status.stdout == ""
    memvault.close()


def test_gc_reads_no_entry_when_no_conversation_is_over_the_limit(tmp_path, monkeypatch):
    """Counting names says there is nothing to evict: no file is read (a million were, for nothing)."""
    memvault = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "v")}), create=True)
    for text in ("one", "two", "three"):
        memvault.add_verbatim(text, "c")

    def no_reading(*args, **kwargs):
        raise AssertionError("an entry was read")

    monkeypatch.setattr(type(memvault.vault), "iter_entries", no_reading)
    assert memvault.gc(max_entries=3, git_gc=False).evict == []
    monkeypatch.undo()
    assert len(memvault.gc(max_entries=2, git_gc=False).evict) == 1  # over the limit: read and evicted
    memvault.close()
