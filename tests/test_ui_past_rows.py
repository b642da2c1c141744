"""The as-of pages that do not rank (overview, timeline, lists, graph) read a commit's rows
(memvault.index.past_rows: today's index rows where a file is unchanged since, the commit's own file
elsewhere) and must show exactly what the past's full index shows: compared at every commit of a
vault with edits, a soft delete, a broken file, an erase that rewrote history, and a hand edit in
the work tree since (indexed today, so today's row is not the past's)."""

from __future__ import annotations

import difflib
import subprocess
from datetime import timedelta
from pprint import pformat

import pytest

from tests.support.server import isolated_env
from tests.support.ui import BEFORE, YESTERDAY, dated, noon, settings_for

BOOKKEEPING = ("rowid", "file_hash", "mtime_ns", "size", "facts")  # the file's, not the entry's: not shown


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    root = tmp_path_factory.mktemp("past") / "v"
    with isolated_env(tmp_path_factory.mktemp("home")):
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            at = noon(BEFORE)
            turn = Entry("I moved to Lisbon and I work at Acme.", role="user", conversation_id="trip", created_at=at)
            facts = [
                Entry("Alice lives in Lisbon.", conversation_id="trip", source=turn.id, subject="Alice",
                      predicate="LIVES_IN", object="Lisbon", created_at=at + timedelta(seconds=1)),
                Entry("Alice works at Acme.", conversation_id="trip", source=turn.id, subject="Alice",
                      predicate="WORKS_AT", object="Acme", created_at=at + timedelta(seconds=2), user_id="alice"),
                Entry("Acme is based in Porto.", conversation_id="alice", subject="Acme", predicate="BASED_IN",
                      object="Porto", created_at=at + timedelta(seconds=3), user_id="alice"),
                Entry("Bob plays the violin.", conversation_id="alice", created_at=at + timedelta(seconds=4)),
                Entry("Alice's secret is 1234-erased.", conversation_id="alice", subject="Alice",
                      predicate="HAS_SECRET", object="1234-erased", created_at=at + timedelta(seconds=5)),
            ]
            core.add_entries([turn, *facts], "memvault chat: a turn and its facts", operation="chat")
            core.add_rule("Answer in British English.", "trip")
        with dated(YESTERDAY):
            core.update(facts[3].id, text="Bob plays the cello.")  # an edit
            core.delete([facts[2].id])  # a soft delete: its relation leaves the graph
            broken = root / "entries" / "alice" / "facts" / "20260101T000000000Z__broken.md"
            broken.write_text("---\nid: [not closed\n---\nbroken\n")
            git(root, "add", "entries")
            git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a broken file by hand")
            core.add_entries([Entry("Alice likes Porto.", conversation_id="alice", subject="Alice",
                                    predicate="LIKES", object="Porto", created_at=noon(YESTERDAY))], "memvault add")
        core.erase([facts[4].id], reason="test")  # history rewritten: every commit's sha changes
        # A hand edit in the work tree since (not committed), indexed: today's row is not the past's.
        [edited] = [p for p in (root / "entries" / "trip" / "facts").rglob("*.md") if facts[0].id in p.name]
        edited.write_text(edited.read_text().replace("Alice lives in Lisbon.", "Alice lives in Lisbon and Faro."))
        core.reindex()
        yield core, root
        core.close()


def without_bookkeeping(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in BOOKKEEPING} for row in rows]


def pages(core, sha, conversations: tuple[str, ...] = ("trip", "alice")) -> dict:
    """What the non-ranking pages read as of `sha`."""
    timeline = {c: core.timeline(c, as_of=sha) for c in conversations}
    return {
        "overview": core.overview(as_of=sha),
        "overview, a user's": core.overview({"user_id": "alice"}, as_of=sha),
        "timelines": {c: (p.total, [(without_bookkeeping([t]), without_bookkeeping(t["facts"]))
                                    for t in p.items]) for c, p in timeline.items()},
        "lists": {(c, r): without_bookkeeping(core.rows_page(c, r, as_of=sha).items)
                  for c in conversations for r in ("memory", "rule", "user", None)},
        "graph": [core.graph(name, 2, as_of=sha) for name in ("Alice", "Porto", "Acme")],
        "relations": core.relations("where does Alice work", as_of=sha),
    }


def test_a_commits_rows_read_what_its_index_reads(vault):
    core, root = vault
    shas = git(root, "rev-list", "HEAD").split()
    assert len(shas) >= 5
    seen = set()
    for sha in shas:
        past = core.resolve_as_of(sha)
        with core.index_as_of(past):  # the past's full index, held: the reads below use it
            expected = pages(core, past)
        found = pages(core, past)  # nothing held: the commit's rows
        for name in expected:  # page by page: a difference names its page and shows itself
            if found[name] != expected[name]:
                pytest.fail(f"{name} as of {sha[:12]}:\n" + "\n".join(difflib.unified_diff(
                    pformat(expected[name]).splitlines(), pformat(found[name]).splitlines(), lineterm="")))
        seen.add(repr(found["overview"]))
    assert len(seen) >= 4  # the commits differ: the comparison covered more than one past
    texts = repr(pages(core, core.resolve_as_of(shas[0])))
    assert "Lisbon and Faro" not in texts and "Alice lives in Lisbon." in texts  # the commit's, not today's file
    assert "1234-erased" not in texts and "cello" in texts and "Porto" in texts


def test_the_rows_are_read_without_a_past_index(vault, monkeypatch):
    """No past index is built for them (no model run, no file written under .memvault/asof)."""
    import memvault.index.past

    core, root = vault
    monkeypatch.setattr(memvault.index.past, "past_index", lambda *a: pytest.fail("a past index was built"))
    sha = git(root, "rev-list", "HEAD").split()[1]
    assert core.overview(as_of=sha)["conversations"]
    assert core.graph("Alice", as_of=sha).relations


def test_writes_today_s_index_has_not_caught_up_with_are_read_from_git(tmp_path):
    """An entry written while today's index was closed (its journal) has a row that may not say what
    its file says: the file is read from the commit, not copied, even when its bytes are the commit's
    again (here a person checked the old file out after the journalled edit)."""
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    root = tmp_path / "v"
    with isolated_env(tmp_path / "home"):
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            [fact] = core.add_entries([Entry("Carol collects stamps.", conversation_id="c")], "memvault add")
            past = core.resolve_as_of("HEAD")
            core.search("stamps")  # today's index open: the next write reaches its row at once
            core.update(fact.id, text="Carol collects coins.")
        core.close()
        with dated(YESTERDAY):
            core = Memvault.open(settings_for(root))  # index closed: this write is journalled
            core.update(fact.id, text="Carol collects shells.")
        [path] = git(root, "ls-files", "entries/c/facts").split()
        git(root, "checkout", past.sha, "--", path)  # the file as it was then; today's row still says coins
        with core.index_as_of(past):
            expected = pages(core, past, ("c",))
        found = pages(core, past, ("c",))
        assert found == expected and "Carol collects stamps." in repr(found) and "coins" not in repr(found)
        core.close()


def test_rows_kept_from_before_an_erase_are_dropped(tmp_path, monkeypatch):
    """An erase rewrites every commit: the rows kept of its old commits (which hold what it erased)
    are dropped at the next read of the past, never served again."""
    import memvault.index.past_rows as past_rows
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    monkeypatch.setattr(past_rows, "_kept", type(past_rows._kept)(past_rows.KEEP))
    root = tmp_path / "v"
    with isolated_env(tmp_path / "home"):
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            [secret, _] = core.add_entries([Entry("Dave hides marbles under the stairs.", conversation_id="c"),
                                            Entry("Dave likes chess.", conversation_id="c")], "memvault add")
        with dated(YESTERDAY):
            core.add_entries([Entry("Dave likes tea.", conversation_id="c")], "memvault add")
        before = core.resolve_as_of("HEAD~1")
        assert "marbles" in repr(core.rows_page("c", as_of=before).items)
        core.erase([secret.id], reason="test")
        after = core.resolve_as_of(before.sha)  # the old id answers through the commit map
        assert "marbles" not in repr(core.rows_page("c", as_of=after).items)
        assert "marbles" not in repr([row.conn.execute("SELECT text FROM entries").fetchall()
                                   for row in past_rows._kept.values()])
        core.close()
