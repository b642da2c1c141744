"""An agent-cli vault, as agent-cli's own code wrote it, opened by memvault as it is.

tests/fixtures/agentcli_vault/ was written by agent-cli 0.112's `agent_cli.memory` file code
(scripts/gen_agentcli_vault.py regenerates it): turns, facts with `source_id`, a summary whose id
is no UUID ('My_Chat__summary-summary'), a hand-made id ('note-1'), the conversation "My Chat" in
the folder My_Chat/, and a tombstone where agent-cli moves deleted files (entries/deleted/default/).
Each test copies it and commits it as agent-cli does (`git add .`), then drives the real CLI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "agentcli_vault"
JANE = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a03"  # tombstoned by agent-cli, replaced by ANNE
ANNE = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a06"
HIKING = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a05"
TURN = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a01"
SUMMARY = "My_Chat__summary-summary"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def cli(tmp_path):
    root = tmp_path / "agentcli"
    shutil.copytree(FIXTURE, root)
    # What agent-cli's init_repo and commit_changes do: a .gitignore of its own, then `git add .`.
    (root / ".gitignore").write_text("chroma/\nmemory_index.json\n__pycache__/\n*.tmp\n.DS_Store\n")
    git(root, "init", "-q")
    git(root, "-c", "user.name=Agent CLI", "-c", "user.email=agent-cli@local", "add", ".")
    git(root, "-c", "user.name=Agent CLI", "-c", "user.email=agent-cli@local", "commit", "-qm", "Initial commit")
    return Cli(root)


def by_id(rows: list[dict]) -> dict[str, dict]:
    return {row["id"]: row for row in rows}


def test_listing_reads_every_entry_and_agentcli_tombstones_count_as_deleted(cli):
    live = by_id(cli.ok("list", "--json").json())
    assert JANE not in live  # its file is under entries/deleted/default/: a tombstone
    assert {ANNE, HIKING, "note-1", SUMMARY} <= set(live)
    assert live[SUMMARY]["conversation_id"] == "My Chat" and live[SUMMARY]["role"] == "summary"
    everything = by_id(cli.ok("list", "--deleted", "--json").json())
    assert everything[JANE]["deleted_at"]
    assert everything[JANE]["replaced_by"] == ANNE
    assert everything[JANE]["conversation_id"] == "default"
    assert len(everything) == len(live) + 1
    assert "deleted" not in cli.ok("list", "--json", "--conversation", "deleted").stdout  # not a conversation


def test_a_conversation_id_finds_the_folder_agentcli_made_of_it(cli):
    rows = cli.ok("list", "--conversation", "My Chat", "--json").json()
    assert {row["conversation_id"] for row in rows} == {"My Chat"} and len(rows) == 3
    hits = cli.ok("search", "tomato plants", "--conversation", "My Chat", "--json").json()
    assert hits and all(hit["conversation_id"] in ("My Chat", "global") for hit in hits)
    assert cli.ok("list", "--conversation", "../My Chat", "--json").json() == []  # an id, never a path
    added = cli.ok("add", "Kept apart.", "-c", "../escape", "--json").json()["results"][0]["id"]
    place = cli.ok("show", added, "--json").json()
    assert place["conversation_id"] == "../escape" and place["path"].startswith("entries/escape-")


def test_non_uuid_ids_are_shown_edited_removed_and_have_a_history(cli):
    assert "Miso" in cli.ok("show", "note-1").stdout
    assert cli("show", "note").exit_code == 1  # an id that is no UUID's prefix is matched whole
    summary = cli.ok("show", SUMMARY, "--json").json()
    assert summary["path"] == "entries/My_Chat/summaries/summary.md"
    cli.ok("edit", "note-1", "--text", "The user's cat is called Miso and is ten.")
    assert cli.ok("show", "note-1", "--json").json()["text"] == "The user's cat is called Miso and is ten."
    cli.ok("edit", SUMMARY, "--text", "The user grows tomatoes.")
    events = cli.ok("history", SUMMARY, "--json").json()
    assert [event["event"] for event in events] == ["ADD", "UPDATE"]
    assert events[-1]["new_memory"] == "The user grows tomatoes."
    cli.ok("rm", "note-1")
    assert "note-1" not in by_id(cli.ok("list", "--json").json())
    assert [event["event"] for event in cli.ok("history", "note-1", "--json").json()] == ["ADD", "UPDATE", "DELETE"]
    for bad in ("../note-1", "note-1/..", "x" * 300):
        result = cli("show", bad)
        assert result.exit_code == 2 and "invalid memory id" in result.stderr


def test_edit_keeps_front_matter_memvault_does_not_know_and_times_to_the_microsecond(cli):
    path = next((cli.vault / "entries/default/facts").glob(f"*__{ANNE}.md"))
    cli.ok("edit", ANNE, "--text", "The user's wife is Anne Smith.")
    text = path.read_text()
    assert f"source_id: {TURN}" in text  # agent-cli's link to the turn the fact came from
    assert "created_at: '2025-03-01T10:06:00.678901+00:00'" in text
    summary = cli.vault / "entries/My_Chat/summaries/summary.md"
    cli.ok("edit", SUMMARY, "--text", "Tomatoes.")
    assert "summary_kind: summary" in summary.read_text()


def test_removing_an_agentcli_entry_keeps_it_in_its_own_folder(cli):
    cli.ok("rm", "5c2d8e71-1f44-4b8a-8c3e-2a9d7c6b5e02")
    tombstones = list((cli.vault / "entries/My_Chat/deleted/facts").glob("*.md"))
    assert len(tombstones) == 1 and "deleted_at:" in tombstones[0].read_text()
    assert not list((cli.vault / "entries").glob("My Chat*"))  # no second folder for the same conversation


def test_gc_evicts_and_purges_agentcli_entries_including_its_tombstones(cli):
    plan = cli.ok("gc", "--max-entries", "2", "--purge-deleted", "0s", "--no-git-gc", "--json").json()["results"]
    assert {item["id"] for item in plan if item["event"] == "PURGE"} == {JANE}
    assert not list((cli.vault / "entries/deleted").rglob("*.md"))
    evicted = {item["id"] for item in plan if item["event"] == "EVICT"}
    assert len(evicted) == 4 and TURN in evicted  # default held six facts and turns
    assert all(list((cli.vault / "entries/default/deleted").rglob(f"*__{memory_id}.md")) for memory_id in evicted)
    live = by_id(cli.ok("list", "--json").json())
    default_facts = [row for row in live.values() if row["conversation_id"] == "default" and row["role"] == "memory"]
    assert len(default_facts) <= 2


def test_memvault_state_stays_out_of_agentcli_commits(cli):
    cli.ok("search", "wife")  # builds the index under .memvault/
    assert (cli.vault / ".memvault").is_dir()
    git(cli.vault, "add", ".")  # agent-cli's commit_changes
    staged = git(cli.vault, "diff", "--cached", "--name-only")
    assert ".memvault" not in staged
    assert git(cli.vault, "status", "--porcelain", "--ignored").count(".memvault") == 1  # one ignored folder


def test_edit_in_an_editor_keeps_what_memvault_does_not_know(cli):
    path = next((cli.vault / "entries/default/facts").glob(f"*__{HIKING}.md"))
    cli.ok("edit", HIKING, env={"EDITOR": "sed -i s/Alps/Dolomites/"})
    text = path.read_text()
    assert "hiking in the Dolomites" in text and f"source_id: {TURN}" in text
    assert "created_at: '2025-03-01T10:05:00.567890+00:00'" in text


AGENTCLI_PYTHON = Path(os.environ.get("AGENTCLI_PYTHON", "/work/venvs/agentcli/bin/python"))


@pytest.mark.skipif(not AGENTCLI_PYTHON.exists(), reason="agent-cli's venv is not here (set AGENTCLI_PYTHON)")
def test_the_fixture_is_what_agentcli_writes(tmp_path):
    """scripts/gen_agentcli_vault.py, run with agent-cli's own Python, writes the vendored files byte for byte."""
    script = Path(__file__).parents[1] / "scripts" / "gen_agentcli_vault.py"
    subprocess.run([str(AGENTCLI_PYTHON), str(script), str(tmp_path / "out")], check=True, capture_output=True,
                   env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    made = {p.relative_to(tmp_path / "out"): p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    vendored = {p.relative_to(FIXTURE): p.read_bytes() for p in FIXTURE.rglob("*") if p.is_file()}
    assert made == vendored


def test_agentcli_files_stay_where_agentcli_put_them_and_memvault_writes_day_folders(cli):
    before = sorted(git(cli.vault, "ls-files", "entries").splitlines())
    listed = by_id(cli.ok("list", "--deleted", "--json").json())
    cli.ok("init")  # the format migrations, the move into day folders among them
    assert sorted(git(cli.vault, "ls-files", "entries").splitlines()) == before  # agent-cli's names: no stamp
    assert by_id(cli.ok("list", "--deleted", "--json").json()).keys() == listed.keys()
    added = cli.ok("add", "--no-llm", "The user keeps bees", "--json").json()["results"][0]["id"]
    [path] = [rel for rel in git(cli.vault, "ls-files", "entries").splitlines() if added in rel]
    assert path.startswith("entries/default/facts/") and len(path.split("/")) == 7  # .../<YYYY>/<MM>/<DD>/<file>
    # agent-cli reads entries/ recursively (its _files.load_memory_files: rglob("*.md")), as this does:
    assert added in {p.stem.rsplit("__", 1)[-1] for p in (cli.vault / "entries").rglob("*.md")
                     if "deleted" not in p.parts}
