"""`search` and `reindex` through the CLI, with the real model, index and files."""

import pytest

from tests.support.cli import Cli


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "Alice prefers green tea over coffee", "-c", "alice", "--meta", "topic=drinks")
    cli.ok("add", "Bob is learning to play the violin", "-c", "bob", "--user", "bob")
    cli.ok("add", "The office closes early on Fridays", "-c", "global")
    return cli


def texts(result):
    return [hit["text"] for hit in result.json()]


def test_search_finds_what_was_just_added_without_a_reindex(cli):
    hits = cli.ok("search", "what does alice drink", "-c", "alice", "--json").json()
    assert hits[0]["text"] == "Alice prefers green tea over coffee"
    assert {"relevance", "recency", "total", "rank"} <= set(hits[0])


def test_search_looks_in_the_conversation_and_global_only(cli):
    found = texts(cli.ok("search", "violin office tea", "-c", "alice", "--json", "--top-k", "10"))
    assert "Bob is learning to play the violin" not in found
    assert "The office closes early on Fridays" in found


def test_filters_and_scopes_from_the_command_line(cli):
    assert texts(cli.ok("search", "violin", "--user", "bob", "--json")) == ["Bob is learning to play the violin"]
    found = texts(cli.ok("search", "tea", "--filter", '{"topic": {"eq": "drinks"}}', "--json"))
    assert found == ["Alice prefers green tea over coffee"]
    bad = cli("search", "tea", "--filter", "{not json")
    assert bad.exit_code == 2 and "--filter is not valid JSON" in bad.stderr
    bad = cli("search", "tea", "--filter", '{"topic": {"like": "x"}}')
    assert bad.exit_code == 2 and "like" in bad.stderr


def test_explain_shows_each_stage(cli):
    out = cli.ok("search", "green tea", "--explain").stdout
    assert "dense" in out and "lexical" in out and "recency" in out and "mmr" in out


def test_empty_query_is_a_usage_error(cli):
    result = cli("search", "   ")
    assert result.exit_code == 2 and "empty" in result.stderr


def test_reindex_picks_up_hand_edits_and_is_quiet_for_cron(cli):
    cli.ok("search", "tea", "--json")  # builds the index
    path = cli.vault / cli.ok("list", "-c", "alice", "--json").json()[0]["path"]
    path.write_text(path.read_text().replace("green tea", "jasmine tea"))
    (cli.vault / "entries" / "alice" / "facts" / "note.md").write_text("Alice keeps bees on her roof.\n")
    quiet = cli.ok("reindex", "--quiet")
    assert quiet.stdout == "" and quiet.stderr == ""
    assert texts(cli.ok("search", "bees", "-c", "alice", "--json"))[0] == "Alice keeps bees on her roof."
    assert texts(cli.ok("search", "jasmine", "-c", "alice", "--json"))[0] == "Alice prefers jasmine tea over coffee"
    report = cli.ok("reindex", "--json").json()
    assert report["embedded"] == 0 and report["unchanged"] == 4


def test_reindex_exits_1_and_names_broken_files(cli):
    (cli.vault / "entries" / "alice" / "facts" / "broken.md").write_text("---\nid: [\n---\nx\n")
    result = cli("reindex", "--quiet")
    assert result.exit_code == 1 and "broken.md" in result.stderr


def test_a_deleted_or_corrupt_index_is_rebuilt_by_search(cli):
    cli.ok("search", "tea", "--json")
    index = cli.vault / ".memvault" / "index.sqlite"
    index.unlink()
    assert texts(cli.ok("search", "violin", "--json"))[0] == "Bob is learning to play the violin"
    index.write_bytes(b"this is not a database" * 100)
    assert texts(cli.ok("search", "violin", "--json"))[0] == "Bob is learning to play the violin"


def test_rm_and_edit_keep_the_index_current(cli):
    memory_id = cli.ok("list", "-c", "bob", "--json").json()[0]["id"]
    cli.ok("search", "violin", "--json")
    cli.ok("edit", memory_id, "--text", "Bob is learning to play the cello")
    assert texts(cli.ok("search", "cello", "-c", "bob", "--json"))[0] == "Bob is learning to play the cello"
    cli.ok("rm", memory_id)
    assert "Bob is learning to play the cello" not in texts(cli.ok("search", "cello", "--json"))


def test_full_reindex_re_embeds_everything(cli):
    cli.ok("search", "tea", "--json")
    assert cli.ok("reindex", "--full", "--json").json()["embedded"] == 3
