"""Hostile review of `memvault import` / `export`: malformed exports give one-line errors, a source that
repeats an id never leaves two files with one id, and a vault whose conversation ids are not folder
names ("My Chat") still goes out and comes back byte for byte."""

import json
from pathlib import Path

import pytest

from tests.support.cli import Cli


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def entry_files(vault: Path) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted((vault / "entries").rglob("*")) if p.is_file()}


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_lines(path: Path, *records) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def one_line_error(result) -> str:
    assert result.exit_code != 0
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    return result.stderr


# -- export | import ------------------------------------------------------------------------------------

def test_a_conversation_id_that_is_no_folder_name_round_trips(cli, tmp_path):
    """`add -c "My Chat"` keeps the id as sent (folder My_Chat-<hash>_): its export must import again."""
    cli.ok("add", "hello there", "-c", "My Chat")
    cli.ok("add", "a plain one", "-c", "work")
    exported = cli.ok("export").stdout
    copy = Cli(tmp_path / "copy")
    copy.ok("init")
    copy.ok("import", "-", input=exported)
    assert entry_files(copy.vault) == entry_files(cli.vault)
    listed = {(row["conversation_id"], row["text"]) for row in copy.ok("list", "--json").json()}
    assert listed == {("My Chat", "hello there"), ("work", "a plain one")}


def test_import_into_one_conversation_takes_any_conversation_id_as_add_does(cli, tmp_path):
    source = write_lines(tmp_path / "lines.jsonl", {"text": "from a hand-made line"})
    cli.ok("import", str(source), "-c", "My Chat")
    assert [row["conversation_id"] for row in cli.ok("list", "--json").json()] == ["My Chat"]
