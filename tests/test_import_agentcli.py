"""`memvault import` of agent-cli memory folders, as agent-cli's own code writes them
(tests/fixtures/agentcli/memory: made by tests/fixtures/agentcli/generate.py with agent-cli 0.112.0)."""

import shutil
from pathlib import Path

from tests.support.cli import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "agentcli" / "memory"
LISBON = "0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a64"
PORTO = "0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a63"
TURN = "0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a61"


def test_an_agent_cli_folder_is_copied_in_with_ids_times_sources_and_tombstones(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    report = cli.ok("import", str(FIXTURE), "--json").json()
    assert (report["format"], report["imported"], report["entries"]) == ("agent-cli", 2, 7)
    rows = {row["text"]: row for row in cli.ok("list", "--deleted", "--json").json()}
    lisbon = rows["The user lives in Lisbon."]
    assert (lisbon["id"], lisbon["source"], lisbon["conversation_id"]) == (LISBON, TURN, "work")
    assert lisbon["created_at"] == "2025-03-01T09:00:04.000+00:00"
    porto = rows["The user lived in Porto."]  # agent-cli's tombstone, in entries/deleted/work/
    assert (porto["id"], porto["replaced_by"]) == (PORTO, LISBON) and porto["deleted_at"]
    assert "/deleted/" in porto["path"]
    summary = cli.ok("list", "--role", "summary", "--json").json()[0]
    assert summary["metadata"] == {"imported_from": "agent-cli", "agent_cli_id": "work__summary-summary",
                                   "summary_kind": "summary"}
    ana = rows["My sister Ana plays the cello."]  # a hand-made id and a conversation id with a space
    assert ana["metadata"]["agent_cli_id"] == "hand-made-id-1"
    assert ana["metadata"]["agent_cli_conversation"] == "My Chat"
    assert ana["conversation_id"].startswith("My_Chat-")
    assert cli.ok("show", ana["id"][:8], "--json").json()["text"] == "My sister Ana plays the cello."
    hits = cli.ok("search", "where does the user live", "-c", "work", "--json").json()
    assert hits[0]["id"] == LISBON
    assert cli.ok("import", str(FIXTURE / "entries"), "--json").json()["entries"] == 0  # entries/ itself works too


def test_files_agent_cli_would_skip_are_named_and_left_out(tmp_path):
    source = tmp_path / "memory"
    shutil.copytree(FIXTURE, source)
    (source / "entries/work/facts/broken.md").write_text("---\nid: [\n---\nx\n")
    (source / "entries/work/facts/no-role.md").write_text("---\nid: abc\nconversation_id: work\n---\nx\n")
    (source / "entries/work/facts/link.md").symlink_to("/etc/passwd")
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    result = cli.ok("import", str(source))
    assert "broken.md: left out" in result.stderr and "no-role.md: left out: not an agent-cli" in result.stderr
    assert "link.md: left out: a symbolic link" in result.stderr
    assert len(cli.ok("list", "--deleted", "--json").json()) == 7  # the fixture's files, no more


def test_a_folder_in_memvaults_own_layout_keeps_scopes_metadata_and_deletion_times(tmp_path):
    other = Cli(tmp_path / "other")
    other.ok("init")
    other.ok("add", "Alice likes tea", "-c", "work", "--user", "alice", "--meta", "topic=drinks")
    gone = other.ok("add", "old news", "-c", "work", "--json").json()["results"][0]["id"]
    other.ok("rm", gone)
    before = {row["id"]: row for row in other.ok("list", "--deleted", "--json").json()}
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("import", str(other.vault), "--format", "agent-cli")
    after = {row["id"]: row for row in cli.ok("list", "--deleted", "--json").json()}
    assert set(after) == set(before)
    for memory_id, row in before.items():
        assert after[memory_id]["metadata"] == {**row["metadata"], "imported_from": "agent-cli"}
        for key in ("text", "user_id", "created_at", "deleted_at", "conversation_id"):
            assert after[memory_id][key] == row[key]
