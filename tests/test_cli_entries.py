"""Every foundation command through the real CLI, against a real vault and git repository."""

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import Cli


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def git_log(cli, *args):
    return subprocess.run(["git", "log", *args], cwd=cli.vault, capture_output=True, text=True, check=True).stdout


def only_id(cli, **filters):
    rows = cli.ok("list", "--json").json()
    assert len(rows) == 1
    return rows[0]["id"]


def test_add_stores_verbatim_with_scopes_and_metadata_and_commits_with_trailers(cli):
    out = cli.ok("add", "Alice drinks green tea", "-c", "work", "--user", "alice", "--agent", "bot", "--run", "r1",
                 "--meta", "topic=drinks", "--json").json()
    memory_id = out["results"][0]["id"]
    entry = cli.ok("show", memory_id[:6], "--json").json()
    assert (entry["text"], entry["conversation_id"], entry["user_id"], entry["agent_id"], entry["run_id"],
            entry["metadata"]) == ("Alice drinks green tea", "work", "alice", "bot", "r1", {"topic": "drinks"})
    assert (cli.vault / entry["path"]).read_text().startswith("---\nid: " + memory_id)
    message = git_log(cli, "-1", "--format=%B")
    assert message.startswith("memvault add: Alice drinks green tea")
    assert "Memvault-Operation: add" in message and f"Memvault-Event: ADD {memory_id}" in message
    assert "Memvault-Conversation: work" in message


def test_add_reads_standard_input(cli):
    cli.ok("add", "-", input="from a pipe\n")
    assert cli.ok("list", "--json").json()[0]["text"] == "from a pipe"


def test_list_filters_by_conversation_role_and_scope(cli):
    cli.ok("add", "one", "-c", "a", "--user", "u1")
    cli.ok("add", "two", "-c", "b", "--user", "u2")
    assert [r["text"] for r in cli.ok("list", "-c", "a", "--json").json()] == ["one"]
    assert [r["text"] for r in cli.ok("list", "--user", "u2", "--json").json()] == ["two"]
    assert cli.ok("list", "--role", "summary", "--json").json() == []
    assert "one" in cli.ok("list").stdout


def test_list_into_a_pipe_is_tab_separated_and_on_a_terminal_a_table_that_shows_brackets_literally(cli):
    cli.ok("add", "[/bold] is not markup\tnor is [red]this[/red]", "-c", "a")
    header, row = cli.ok("list").stdout.splitlines()
    assert header.split("\t") == ["id", "role", "conversation", "age", "text"]
    assert row.split("\t")[1:3] == ["memory", "a"] and row.endswith("[/bold] is not markup nor is [red]this[/red]")
    shown = cli.ok("list", env={"FORCE_COLOR": "1", "COLUMNS": "200"}).stdout
    assert "│" in shown or "┃" in shown  # rich's table
    assert "[/bold] is not markup" in shown and "[red]this[/red]" in shown


def test_show_prints_the_file(cli):
    cli.ok("add", "a fact")
    memory_id = only_id(cli)
    assert "a fact" in cli.ok("show", memory_id).stdout and "role: memory" in cli.ok("show", memory_id).stdout


def test_edit_in_editor_validates_and_commits(cli, tmp_path, monkeypatch):
    cli.ok("add", "old text")
    memory_id = only_id(cli)
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\nsed -i 's/old text/new text/' \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    cli.ok("edit", memory_id[:8])
    assert cli.ok("show", memory_id, "--json").json()["text"] == "new text"
    assert git_log(cli, "-1", "--format=%s").startswith("memvault update: new text")


def test_an_edit_that_breaks_the_front_matter_is_refused_and_its_draft_removed(cli, tmp_path, monkeypatch):
    """The draft in /tmp was kept after a refused edit: a text the vault refuses or redacts (a secret)
    stayed on disk, in a folder every user reads (issue 33)."""
    cli.ok("add", "stays")
    memory_id = only_id(cli)
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\necho \"$1\" > %s\nprintf -- '---\\nid: [broken\\n---\\nx' > \"$1\"\n"
                      % (tmp_path / "draft-name"))
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    result = cli("edit", memory_id)
    assert result.exit_code == 2 and "broken front matter" in result.stderr and "draft is removed" in result.stderr
    assert cli.ok("show", memory_id, "--json").json()["text"] == "stays"
    draft = Path((tmp_path / "draft-name").read_text().strip())
    assert draft.name.startswith("memvault-") and not draft.exists()


def test_edit_with_text_option(cli):
    cli.ok("add", "v1")
    memory_id = only_id(cli)
    cli.ok("edit", memory_id, "--text", "v2")
    assert cli.ok("show", memory_id, "--json").json()["text"] == "v2"


def test_edit_with_the_same_text_makes_no_commit_and_says_so(cli):
    memory_id = cli.ok("add", "Ana's birthday is on May 3.", "--json").json()["results"][0]["id"]
    head = git_log(cli, "-1", "--format=%H")
    same = cli.ok("edit", memory_id, "--text", "Ana's birthday is on May 3.")
    assert same.stdout == "" and "No change." in same.stderr
    assert cli.ok("edit", memory_id, "--text", "Ana's birthday is on May 3.", "--json").json() == {"results": []}
    assert git_log(cli, "-1", "--format=%H") == head


def test_restore_brings_a_deleted_memory_back_into_search_in_one_commit(cli):
    memory_id = cli.ok("add", "Ana's birthday is on May 3.", "--json").json()["results"][0]["id"]
    cli.ok("search", "when is Ana's birthday")  # the index is built before the delete, as a person would have
    cli.ok("rm", memory_id)
    assert "May 3" not in cli.ok("search", "when is Ana's birthday").stdout
    commits = len(git_log(cli, "--format=%H").split())
    restored = cli.ok("restore", memory_id[:8])
    assert restored.stdout.split("\t")[:2] == ["RESTORE", memory_id]
    assert len(git_log(cli, "--format=%H").split()) == commits + 1
    assert git_log(cli, "-1", "--format=%s").startswith("memvault restore: Ana's birthday")
    assert "May 3" in cli.ok("search", "when is Ana's birthday").stdout  # no reindex needed
    assert "not indexed" not in cli("doctor").stdout
    assert cli.ok("list", "--json").json()[0]["id"] == memory_id
    assert [e["event"] for e in cli.ok("history", memory_id, "--json").json()] == ["ADD", "DELETE", "RESTORE"]


def test_restore_json_and_its_refusals(cli):
    memory_id = cli.ok("add", "Bo keeps bees.", "--json").json()["results"][0]["id"]
    live = cli("restore", memory_id)
    assert live.exit_code == 2 and "is not deleted: nothing to restore" in live.stderr
    assert cli("restore", "ffffffff").exit_code == 1
    cli.ok("rm", memory_id)
    assert cli.ok("restore", memory_id, "--json").json() == {
        "results": [{"event": "RESTORE", "id": memory_id, "memory": "Bo keeps bees."}]}


def test_rm_soft_deletes_and_history_shows_every_event(cli):
    cli.ok("add", "first version")
    memory_id = only_id(cli)
    cli.ok("edit", memory_id, "--text", "second version")
    cli.ok("rm", memory_id[:7])
    assert cli.ok("list", "--json").json() == []
    assert cli.ok("list", "--deleted", "--json").json()[0]["deleted_at"]
    events = cli.ok("history", memory_id, "--json").json()
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "first version"),
        ("UPDATE", "first version", "second version"),
        ("DELETE", "second version", None),
    ]
    log = cli.ok("history", "--json").json()
    assert [c["operation"] for c in log] == ["delete", "update", "add", "core", "init"]  # init: core files too
    assert log[0]["events"] == [f"DELETE {memory_id}"]


def test_history_sees_edits_a_person_commits_by_hand(cli):
    cli.ok("add", "by the tool")
    entry = cli.ok("show", only_id(cli), "--json").json()
    path = cli.vault / entry["path"]
    path.write_text(path.read_text().replace("by the tool", "by hand"))
    subprocess.run(["git", "-c", "user.name=p", "-c", "user.email=p@x", "commit", "-qam", "hand edit"],
                   cwd=cli.vault, check=True)
    events = cli.ok("history", entry["id"], "--json").json()
    assert events[-1]["event"] == "UPDATE" and events[-1]["new_memory"] == "by hand"


@pytest.mark.parametrize("args, code, message", [
    (("show", "0123abcd"), 1, "no memory with id 0123abcd"),
    (("show", "../../etc/passwd"), 2, "invalid memory id"),
    (("rm", "/etc"), 2, "invalid memory id"),
    (("add", "x", "-c", "a\tb"), 2, "invalid conversation id"),  # any printable id: "../x" is stored safely
    (("add", "x", "-c", "x" * 201), 2, "invalid conversation id"),  # (see tests/test_agentcli_vault.py)
    (("add", "   "), 2, "the memory text is empty"),
    (("add", "x", "--meta", "novalue"), 2, "--meta takes key=value"),
    (("list", "--role", "robot"), 2, "unknown role"),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(cli, args, code, message):
    result = cli(*args)
    assert result.exit_code == code
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr + result.stdout


def test_ambiguous_prefix(cli):
    from memvault.vault.format.entry import Entry
    from memvault.vault.write.store import Vault

    vault = Vault.open(cli.vault)
    with vault.transaction("add", "two ids sharing a prefix") as tx:
        for suffix in ("1", "2"):
            tx.write(Entry(f"memory {suffix}", id=f"abcd{suffix}000-0000-4000-8000-000000000000"), event="ADD")
    result = cli("show", "abcd")
    assert result.exit_code == 1 and "id prefix abcd is ambiguous: 2 memories match" in result.stderr
    assert cli.ok("show", "abcd2", "--json").json()["text"] == "memory 2"


def test_broken_file_is_reported_by_list_and_left_alone(cli):
    cli.ok("add", "good")
    bad = cli.vault / "entries" / "default" / "facts" / "broken.md"
    bad.write_text("---\ntitle: [x\n---\nbody\n")
    (cli.vault / "entries" / "default" / "facts" / "binary.md").write_bytes(b"\xff\xfe\x00junk")
    result = cli.ok("list", "--json")
    assert [r["text"] for r in result.json()] == ["good"]
    assert "broken.md: broken front matter" in result.stderr and "binary.md: not UTF-8" in result.stderr
    assert bad.read_text() == "---\ntitle: [x\n---\nbody\n"


def test_vault_that_is_a_file_or_missing(tmp_path):
    (tmp_path / "afile").write_text("")
    result = Cli(tmp_path / "afile")("list")
    assert result.exit_code == 1 and "is a file" in result.stderr
    result = Cli(tmp_path / "nothing")("list")
    assert result.exit_code == 1 and "memvault init" in result.stderr


def test_detached_head_is_a_clear_error(cli):
    cli.ok("add", "x")
    subprocess.run(["git", "checkout", "-q", "--detach"], cwd=cli.vault, check=True)
    result = cli("add", "y")
    assert result.exit_code == 1 and "detached HEAD" in result.stderr


def test_conflicted_repository_is_a_clear_error(cli):
    cli.ok("add", "base")
    path = cli.vault / cli.ok("list", "--json").json()[0]["path"]
    run = lambda *a: subprocess.run(["git", "-c", "user.name=p", "-c", "user.email=p@x", *a], cwd=cli.vault,  # noqa: E731
                                    capture_output=True, text=True)
    run("checkout", "-q", "-b", "other")
    path.write_text(path.read_text().replace("base", "theirs"))
    run("commit", "-qam", "theirs")
    run("checkout", "-q", "main")
    path.write_text(path.read_text().replace("base", "ours"))
    run("commit", "-qam", "ours")
    assert run("merge", "other").returncode != 0
    result = cli("add", "during the conflict")
    assert result.exit_code == 1 and "middle of a merge" in result.stderr


def test_vault_from_environment(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from memvault.cli.app import app

    monkeypatch.setenv("MEMVAULT_VAULT", str(tmp_path / "envvault"))
    runner = CliRunner()
    assert runner.invoke(app, ["init"]).exit_code == 0
    assert runner.invoke(app, ["add", "via env"]).exit_code == 0
    assert (tmp_path / "envvault" / "entries" / "default" / "facts").is_dir()


def test_default_vault_lives_under_xdg_data_home(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from memvault.cli.app import app

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert CliRunner().invoke(app, ["init"]).exit_code == 0
    assert (tmp_path / "data" / "memvault" / "vault" / ".git").is_dir()


def test_usage_errors_exit_2(cli):
    assert cli("add", "x", "--no-such-flag").exit_code == 2
