"""The shell: batches for `add` (several texts, --lines, --jsonl), options before the command
(`--vault`, `--config`, `-C PATH` as in git), `similar ID` and `log` with its filters; real CLI, real
vault, real git, the real embedding model."""

from __future__ import annotations

import json
import subprocess

import pytest
from typer.testing import CliRunner

from tests.support.cli import Cli, run_memvault


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def commits(cli) -> list[str]:
    return subprocess.run(["git", "log", "--format=%s"], cwd=cli.vault, capture_output=True, text=True,
                          check=True).stdout.splitlines()


def texts(cli, *args) -> list[str]:
    return [row["text"] for row in cli.ok("list", "--json", *args).json()]


# -- add: several texts, --lines, --jsonl -------------------------------------------------------------
def test_several_texts_are_several_memories_in_one_commit(cli):
    before = len(commits(cli))
    out = cli.ok("add", "Tea is green.", "Coffee is black.", "--no-llm", "-c", "drinks", "--json").json()
    assert [r["memory"] for r in out["results"]] == ["Tea is green.", "Coffee is black."]
    assert sorted(texts(cli, "-c", "drinks")) == ["Coffee is black.", "Tea is green."]
    assert commits(cli)[0] == "memvault add: 2 memories" and len(commits(cli)) == before + 1


def test_lines_reads_one_memory_per_line_of_standard_input(cli):
    cli.ok("add", "-", "--lines", "--no-llm", "--user", "alice", input="Alice rows.\n\n  \nAlice paints.\r\n")
    rows = cli.ok("list", "--json").json()
    assert sorted(row["text"] for row in rows) == ["Alice paints.", "Alice rows."]
    assert {row["user_id"] for row in rows} == {"alice"}
    assert cli.ok("add", "--lines", "--no-llm", input="Bob sails.\n").exit_code == 0  # '-' may be left out


def test_jsonl_keeps_each_objects_front_matter_fields(cli):
    lines = [
        {"text": "Met Carla in Porto.", "user_id": "carla", "created_at": "2024-05-06T07:08:09.123456+00:00",
         "metadata": {"place": "Porto"}, "conversation_id": "trips"},
        {"text": "Which trip was best?", "role": "user", "conversation": "My Trips"},
    ]
    cli.ok("add", "--jsonl", input="\n".join(json.dumps(line) for line in lines) + "\n")
    rows = {row["text"]: row for row in cli.ok("list", "--json").json()}
    carla = rows["Met Carla in Porto."]
    assert (carla["user_id"], carla["conversation_id"], carla["metadata"]) == ("carla", "trips", {"place": "Porto"})
    assert carla["created_at"] == "2024-05-06T07:08:09.123456+00:00"
    assert rows["Which trip was best?"]["role"] == "user"
    assert rows["Which trip was best?"]["conversation_id"] == "My Trips"


@pytest.mark.parametrize("data, says", [
    ('{"text": "fine"}\n{"txt": "typo"}\n', "memory 2: unknown field 'txt'"),
    ('{"text": "fine"}\nnot json\n', "line 2: not JSON"),
    ('{"text": "fine"}\n["a list"]\n', "line 2: expected an object with at least"),
    ('{"text": "fine"}\n{"text": "x", "created_at": "yesterday"}\n', "'created_at' is not an ISO 8601 time"),
    ('{"text": "fine"}\n{"text": "x", "role": "summary"}\n', "unknown role"),
    ('{"text": "fine"}\n{"text": "x", "metadata": [1]}\n', "'metadata' must be a mapping"),
    ('\n\n', "no JSON object to remember"),
])
def test_a_bad_jsonl_line_is_one_clear_error_and_nothing_is_stored(cli, data, says):
    before = commits(cli)
    result = cli("add", "--jsonl", input=data)
    assert result.exit_code == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert commits(cli) == before and texts(cli) == []


@pytest.mark.parametrize("args, says", [
    (("add", "x", "--lines"), "--lines and --jsonl read standard input"),
    (("add", "--lines", "--jsonl"), "exclude each other"),
    (("add", "a", "-", "--no-llm"), "cannot be mixed"),
    (("add", "fine", "   ", "--no-llm"), "memory 2: 'text' must be a non-empty string"),
])
def test_batch_usage_errors(cli, args, says):
    result = cli(*args, input="from stdin\n")
    assert result.exit_code == 2 and says in result.stderr
    assert texts(cli) == []  # a bad text stops the batch before anything is stored


# -- options before the command -----------------------------------------------------------------------
def test_vault_and_config_before_the_command(tmp_path):
    from memvault.cli.app import app

    runner = CliRunner()
    vault, other = tmp_path / "v", tmp_path / "other"
    for path in (vault, other):
        assert runner.invoke(app, ["--vault", str(path), "init"]).exit_code == 0
    assert runner.invoke(app, ["--vault", str(vault), "add", "Before the command.", "--no-llm"]).exit_code == 0
    listed = runner.invoke(app, ["--vault", str(vault), "list", "--json"])
    assert [row["text"] for row in json.loads(listed.stdout)] == ["Before the command."]
    # The command's own --vault wins over the one before it.
    own = runner.invoke(app, ["--vault", str(vault), "list", "--json", "--vault", str(other)])
    assert json.loads(own.stdout) == []
    config = tmp_path / "memvault.toml"
    config.write_text(f'[vault]\npath = "{other}"\n')
    runner.invoke(app, ["--config", str(config), "add", "Through the config.", "--no-llm"])
    assert [row["text"] for row in json.loads(runner.invoke(app, ["--vault", str(other), "list", "--json"]).stdout)
            ] == ["Through the config."]


def test_dash_c_runs_as_if_started_in_that_folder(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    assert run_memvault("-C", str(project), "--vault", "memory", "init").returncode == 0
    assert (project / "memory" / ".git").is_dir()  # a relative --vault is read from PATH, as git -C does
    done = run_memvault("-C", str(project), "add", "Started elsewhere.", "--no-llm", "--vault", "memory")
    assert done.returncode == 0, done.stderr
    missing = run_memvault("-C", str(tmp_path / "nowhere"), "list")
    assert missing.returncode == 2 and b"cannot change to" in missing.stderr and b"Traceback" not in missing.stderr


# -- similar ------------------------------------------------------------------------------------------
def test_similar_lists_the_memories_nearest_a_memory_without_itself(cli):
    out = cli.ok("add", "My cat Biscuit sleeps on the piano.", "Biscuit the cat loves sleeping on warm pianos.",
                 "The quarterly tax return is due in April.", "Mortgage interest rates rose again.", "--no-llm",
                 "--json").json()
    cat, cat_too, tax, _ = [r["id"] for r in out["results"]]
    near = cli.ok("similar", cat[:8], "--json").json()
    assert near[0]["id"] == cat_too and cat not in [hit["id"] for hit in near]
    assert len(cli.ok("similar", tax, "-k", "1", "--json").json()) == 1
    assert "Biscuit the cat" in cli.ok("similar", cat).stdout
    missing = cli("similar", "0123abcd")
    assert missing.exit_code == 1 and "no memory with id 0123abcd" in missing.stderr


# -- log ----------------------------------------------------------------------------------------------
def test_log_lists_commits_filtered_by_operation_and_conversation(cli):
    work = cli.ok("add", "Standup at nine.", "--no-llm", "-c", "work", "--json").json()["results"][0]["id"]
    cli.ok("add", "Lathe class on Tuesday.", "--no-llm", "-c", "workshop")
    cli.ok("add", "Buy milk.", "--no-llm", "-c", "home")
    cli.ok("rm", work)
    everything = cli.ok("log", "--json").json()
    assert [c["operation"] for c in everything] == ["delete", "add", "add", "add", "core", "init"]
    adds = cli.ok("log", "--operation", "add", "--json").json()
    assert [c["conversation"] for c in adds] == ["home", "workshop", "work"]
    in_work = cli.ok("log", "-c", "work", "--json").json()  # exactly "work", not "workshop"
    assert [(c["operation"], c["conversation"]) for c in in_work] == [("delete", "work"), ("add", "work")]
    assert in_work[0]["events"] == [f"DELETE {work}"]
    assert [c["operation"] for c in cli.ok("log", "-o", "delete", "-c", "home", "--json").json()] == []
    assert len(cli.ok("log", "-n", "2", "--json").json()) == 2
    table = cli.ok("log", "-o", "delete").stdout
    assert "memvault rm" in table and "Buy milk" not in table
