"""A search as of a commit reads a past's view (memvault.index.past_view: today's index with what changed
since hidden, the commit's versions in a small index beside it) and must answer exactly as that commit's
whole past index (memvault.index.past) answers: the same memories, texts, order and scores, lane by lane,
at every commit of a vault that since had turns and facts edited, deleted, added and renamed, a hand edit
in the work tree (indexed, not committed), a write today's index has not caught up with (its journal),
and a file git does not track yet. Real files, git, model and index; the whole past index is the oracle."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest

from tests.support.server import isolated_env
from tests.support.ui import BEFORE, YESTERDAY, dated, noon, settings_for

QUERIES = ("green tea", "where does Alice live", "the violin lesson", "what did I say about Lisbon",
           "Bob plays music", "a trip to Porto", "ferns and moss")
TURNS = ("I had green tea in Lisbon this morning.", "Lisbon is sunny and the tea was hot.",
         "Tomorrow I take the train to Porto.", "My violin lesson moved to Thursday.",
         "Bob says the violin lesson was great.", "We ate pastries after the lesson.",
         "The trip to Porto took three hours.", "Porto has a fine bridge over the river.")


def git(root, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    root = tmp_path_factory.mktemp("view") / "v"
    with isolated_env(tmp_path_factory.mktemp("home")):
        at = noon(BEFORE) - timedelta(hours=6)  # before the day's commits (noon): rows today's index serves
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            turns = [Entry(text, role="user" if i % 2 == 0 else "assistant", conversation_id="chat",
                           created_at=at + timedelta(minutes=i)) for i, text in enumerate(TURNS)]
            core.add_entries(turns, "memvault chat: turns")
            facts = core.add_entries([
                Entry("Alice lives in Lisbon.", conversation_id="chat", subject="Alice", predicate="LIVES_IN",
                      object="Lisbon", created_at=at + timedelta(hours=1)),
                Entry("Alice drinks green tea every morning.", conversation_id="alice",
                      created_at=at + timedelta(hours=1, seconds=1)),
                Entry("Bob plays the violin.", conversation_id="alice", subject="Bob", predicate="PLAYS",
                      object="violin", created_at=at + timedelta(hours=1, seconds=2)),
                Entry("Alice visited Porto in May.", conversation_id="alice",  # after its commit's moment
                      created_at=noon(BEFORE) + timedelta(hours=1)),
                Entry("Carol teaches the violin lesson.", conversation_id="alice",
                      created_at=at + timedelta(hours=1, seconds=4)),
            ], "memvault add")
            projects = zip(("Atlas", "Birch", "Cedar", "Delta", "Ember", "Fjord"),
                           ("May", "June", "July", "August", "Lisbon", "Porto"), strict=True)
            core.add_entries([Entry(f"Project {name} ships in {month}.", conversation_id="work",  # never changed
                                    created_at=at + timedelta(hours=2, seconds=i))
                              for i, (name, month) in enumerate(projects)], "memvault add")
            # The same words in two files, the later path written first: ties go in the commit's order.
            core.add_entries([Entry("Ferns like shade.", conversation_id="zeta", created_at=at + timedelta(hours=3))],
                             "memvault add")
            core.add_entries([Entry("Ferns like shade.", conversation_id="alpha", created_at=at + timedelta(hours=3))],
                             "memvault add")
            moss = core.add_entries([Entry("Moss likes damp stones.", conversation_id="alice",
                                           created_at=at + timedelta(hours=3, seconds=i)) for i in (1, 2)],
                                    "memvault add")
            core.search("tea")  # today's index open: later writes reach it at once
        later = noon(YESTERDAY)
        with dated(YESTERDAY):
            core.update(facts[0].id, text="Alice lives in Porto now.")  # an edited fact (and its relation)
            core.update(turns[3].id, text="My cello lesson moved to Friday.")  # an edited turn: context around it
            core.delete([facts[2].id, turns[6].id])  # a fact and a turn deleted
            core.add_entries([Entry(f"Later turn {i}: more green tea in Porto.", role="user", conversation_id="chat",
                                    created_at=later + timedelta(minutes=i)) for i in range(3)], "memvault chat")
            core.add_entries([Entry("Dave plays the violin too.", conversation_id="alice", created_at=later)],
                             "memvault add")  # an addition
            for name, memory in (("20200101T000000000Z", facts[3]), ("20200102T000000000Z", moss[1])):
                [moved] = [p for p in (root / "entries" / "alice" / "facts").rglob("*.md") if memory.id in p.name]
                git(root, "mv", str(moved), str(moved.with_name(f"{name}__{memory.id}.md")))  # sorts first now
            git(root, "commit", "-qm", "two facts renamed by hand")
        core.reindex()
        # The work tree since: a hand edit indexed but not committed, and a file git does not track.
        [edited] = [p for p in (root / "entries" / "alice" / "facts").rglob("*.md") if facts[1].id in p.name]
        edited.write_text(edited.read_text().replace("green tea", "black coffee"))
        (edited.parent / "20991231T000000000Z__0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9b01.md").write_text(
            "---\nid: 0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9b01\nrole: memory\nconversation_id: alice\n---\n"
            "Erin drinks green tea in Lisbon.\n")
        core.reindex()
        core.close()
        core = Memvault.open(settings_for(root))  # index closed: this write is journalled
        core.update(facts[4].id, text="Carol teaches the piano lesson.")
        yield core, root
        core.close()


def found(core, sha: str, query: str, conversation: str | None) -> list[tuple]:
    hits = core.search(query, conversation, as_of=sha, top_k=20, score_threshold=0.0)
    return [(h.id, h.text, h.conversation_id, h.explain["dense_rank"], h.explain["lexical_rank"],
             round(h.dense, 6), None if h.lexical is None else round(h.lexical, 6), round(h.total, 6)) for h in hits]


def answers(core, sha: str) -> dict:
    with core.index_as_of(sha):  # the relations read the past the search held
        relations = [r.to_dict() for r in core.relations("Alice Bob", as_of=sha)]
    scopes = (None, "chat", "alice")
    return {"relations": relations, **{(q, c): found(core, sha, q, c) for q in QUERIES for c in scopes}}


def test_a_search_as_of_each_commit_answers_as_the_whole_past_index(vault, monkeypatch):
    import memvault.index.past as past
    import memvault.index.past_view as past_view

    core, root = vault
    shas = git(root, "rev-list", "HEAD").split()
    assert len(shas) >= 8
    building = past.past_index
    for sha in shas:
        monkeypatch.setattr(past, "past_index", lambda *a: pytest.fail("the whole past index was built"))
        monkeypatch.setattr(past_view, "MOST_CHANGED", 1.0)  # the view even where nearly all changed since
        viewed = answers(core, sha)
        monkeypatch.setattr(past, "past_index", building)
        monkeypatch.setattr(past_view, "past_view", lambda *a: None)  # the whole past index, the oracle
        expected = answers(core, sha)
        monkeypatch.undo()
        for key in expected:
            assert viewed[key] == expected[key], f"{key} as of {sha[:12]}"
    first = repr(answers(core, core.resolve_as_of(BEFORE).sha))  # before the changes: the commit's texts
    assert "Alice lives in Lisbon." in first and "Alice drinks green tea" in first and "violin lesson" in first
    assert "Porto now" not in first and "Later turn" not in first and "Erin" not in first and "Dave" not in first


def test_the_view_hides_no_more_than_what_changed(vault, monkeypatch):
    """The small index holds the commit's versions of what changed (and the turns around a changed turn),
    not the vault: today's rows serve the rest. Where most of today's rows changed since, the whole past
    index is built instead (kept per commit, it serves every later search of that past)."""
    import memvault.index.past_view as past_view
    from memvault.index.past import past_index

    core, root = vault
    with core.index_as_of(BEFORE) as (view, _):
        assert isinstance(view, past_view.PastView)
        small, hidden, today = view.small.count(), len(view.today.excluded), view.today.count()
    monkeypatch.setattr(past_view, "MOST_CHANGED", 0.1)
    with core.index_as_of(BEFORE) as (index, _):
        assert not isinstance(index, past_view.PastView)
    with past_index(core.vault, core.embedder(), core.resolve_as_of(BEFORE)) as whole:
        then = whole.count()
    assert today - hidden + small == then  # the view's rows are the commit's, one for one
    assert 0 < small < then and 0 < hidden < today


def test_an_erase_leaves_no_past_search_the_erased_text(tmp_path, monkeypatch):
    """The commit's versions of the files changed since live in a small index on disk: an erase (a
    history rewrite) must leave none that a search as of a commit from before it could read."""
    import memvault.index.past_view as past_view
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    monkeypatch.setattr(past_view, "MOST_CHANGED", 1.0)  # the view, in a vault this small
    root = tmp_path / "v"
    with isolated_env(tmp_path / "home"):
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            [secret, *_] = core.add_entries([Entry("Dave hides marbles under the stairs.", conversation_id="c"),
                                            Entry("Dave likes chess.", conversation_id="c"),
                                            Entry("Dave drinks tea at noon.", conversation_id="c")], "memvault add")
            core.search("Dave")
        with dated(YESTERDAY):
            core.update(secret.id, text="Dave hides coins under the stairs.")  # then: in the small index
        before = core.resolve_as_of(BEFORE)

        def texts(past) -> str:
            with core.index_as_of(past) as (view, _):
                assert isinstance(view, past_view.PastView)
            return repr([hit.text for hit in core.search("what does Dave hide", as_of=past, score_threshold=0.0)])

        assert "marbles" in texts(before) and "coins" not in texts(before)
        core.erase([secret.id], reason="test")
        after = core.resolve_as_of(before.sha)  # the old id answers through the commit map
        assert "marbles" not in texts(after) and "chess" in texts(after)
        kept = [p for p in (root / ".memvault" / "asof").rglob("*") if p.is_file()]
        assert kept and not any(b"marbles" in p.read_bytes() for p in kept)
        core.close()


def test_a_write_todays_index_has_not_caught_up_with_is_read_from_git(tmp_path, monkeypatch):
    """Above WORK_TREE_CHECK_MAX rows the work tree is not stat'ed: an entry written while today's index
    was closed (its journal) must still be read from the commit, not from today's stale row."""
    import memvault.index.past_view as past_view
    from memvault.core import Memvault
    from memvault.index.past import past_index
    from memvault.vault.format.entry import Entry

    monkeypatch.setattr(past_view, "MOST_CHANGED", 1.0)
    monkeypatch.setattr(past_view, "WORK_TREE_CHECK_MAX", 0)  # as a vault of 1M rows
    root = tmp_path / "v"
    with isolated_env(tmp_path / "home"):
        with dated(BEFORE):
            core = Memvault.open(settings_for(root), create=True)
            at = noon(BEFORE) - timedelta(hours=6)  # before the commit's moment: today's rows serve them
            [fact, _] = core.add_entries([Entry("Carol collects stamps.", conversation_id="c", created_at=at),
                                          Entry("Carol likes tea.", conversation_id="c", created_at=at)],
                                         "memvault add")
            core.search("stamps")  # today's index caught up
        core.close()
        with dated(YESTERDAY):
            core = Memvault.open(settings_for(root))  # index closed: this write is journalled
            core.update(fact.id, text="Carol collects shells.")
        past = core.resolve_as_of("HEAD")
        with core.index_as_of(past) as (view, _):
            assert isinstance(view, past_view.PastView)
            seen = sorted(row["text"] for row in view.select())
        with past_index(core.vault, core.embedder(), past) as whole:
            assert seen == sorted(row["text"] for row in whole.select()) == ["Carol collects shells.",
                                                                              "Carol likes tea."]
        core.close()
