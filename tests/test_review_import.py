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


# -- malformed exports: a one-line error or a note, never an internal error ------------------------------

def chatgpt_node(node_id, role, text, parent, children, **message):
    return {"id": node_id, "parent": parent, "children": children,
            "message": {"id": node_id, "author": {"role": role}, "create_time": 1700000000,
                        "content": {"content_type": "text", "parts": [text]}, **message}}


DAMAGED_CHATGPT = [
    {"id": "c1", "title": "author", "current_node": "a", "mapping": {"a": {
        "id": "a", "parent": None, "children": [], "message": {"id": "a", "author": "user", "content": {}}}}},
    {"id": "c2", "title": "content", "current_node": "a", "mapping": {"a": {
        "id": "a", "parent": None, "children": [],
        "message": {"id": "a", "author": {"role": "user"}, "content": "x"}}}},
    {"id": "c3", "title": "metadata", "current_node": "a",
     "mapping": {"a": chatgpt_node("a", "user", "kept despite its metadata", None, [], metadata="x")}},
    {"id": "c4", "title": "children", "mapping": {"a": {"id": "a", "parent": None, "children": 5, "message": None}}},
    {"id": "c5", "title": "current node", "current_node": ["a"], "mapping": {
        "a": chatgpt_node("a", "user", "found without a usable current_node", None, ["b"]),
        "b": {"id": "b", "parent": "a", "children": [["x"], 7], "message": None},
        "c": {"id": "c", "parent": ["a"], "children": [], "message": None}}},
]


def test_a_damaged_chatgpt_export_imports_what_it_can_read(cli, tmp_path):
    source = write_json(tmp_path / "conversations.json", DAMAGED_CHATGPT)
    result = cli("import", str(source), "--format", "chatgpt", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["conversations"] == 5
    texts = sorted(row["text"] for row in cli.ok("list", "--json").json())
    assert texts == ["found without a usable current_node", "kept despite its metadata"]


@pytest.mark.parametrize("metadata", ["a string", [1, 2]])
def test_a_mem0_dump_whose_metadata_is_no_object_is_a_one_line_error(cli, tmp_path, metadata):
    dump = write_json(tmp_path / "dump.json", {"results": [
        {"id": "11111111-1111-1111-1111-111111111111", "memory": "x", "user_id": "a", "metadata": metadata}]})
    message = one_line_error(cli("import", str(dump), "--format", "mem0"))
    assert "'metadata' must be an object" in message


@pytest.mark.parametrize("fmt", ["jsonl", "chatgpt"])
def test_json_nested_past_the_recursion_limit_is_a_one_line_error(cli, tmp_path, fmt):
    source = tmp_path / "deep.json"
    source.write_text("[" * 100_000 + "]" * 100_000)
    assert "nested too deeply" in one_line_error(cli("import", str(source), "--format", fmt))


# -- one id, one file -----------------------------------------------------------------------------------

def test_a_message_id_given_twice_in_a_conversation_leaves_one_file(cli, tmp_path):
    """A ChatGPT (or Claude) export that repeats a message id: two files with one id would make the id
    ambiguous (show picks one, rm deletes one); the first is kept and the repeat is named."""
    claude = [{"uuid": "u1", "name": "twice", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "one", "created_at": "2024-01-01T00:00:00Z"},
        {"uuid": "m1", "sender": "assistant", "text": "two", "created_at": "2024-01-01T00:00:05Z"}]}]
    result = cli("import", str(write_json(tmp_path / "conversations.json", claude)), "--format", "claude")
    assert result.exit_code == 0, result.stderr
    assert "left out 1 entry whose id the source gives twice" in result.stderr
    ids = [name.rsplit("__", 1)[1] for name in entry_files(cli.vault)]
    assert len(ids) == 1 == len(set(ids))
    assert [row["text"] for row in cli.ok("list", "--json").json()] == ["one"]


def test_two_jsonl_lines_with_one_id_leave_one_file(cli, tmp_path):
    memory_id = "22222222-2222-2222-2222-222222222203"
    source = write_lines(tmp_path / "lines.jsonl", {"text": "a", "id": memory_id, "created_at": "2024-01-01T00:00:00Z"},
                         {"text": "b", "id": memory_id, "created_at": "2024-01-02T00:00:00Z"})
    cli.ok("import", str(source))
    assert [row["text"] for row in cli.ok("list", "--json").json()] == ["a"]
    assert len(entry_files(cli.vault)) == 1


@pytest.mark.parametrize("lines", [
    [{"text": "a", "id": "22222222-2222-2222-2222-222222222205", "path": "entries/c/facts/x.md"},
     {"text": "b", "id": "22222222-2222-2222-2222-222222222206", "path": "entries/c/facts/x.md"}],
    [{"text": "first summary", "role": "summary", "conversation_id": "c"},
     {"text": "second summary", "role": "summary", "conversation_id": "c"}],
])
def test_two_jsonl_lines_for_one_file_stop_the_import_before_anything_is_written(cli, tmp_path, lines):
    """The second line would overwrite the first in the same commit: the first line's text was lost."""
    source = write_lines(tmp_path / "lines.jsonl", *lines)
    message = one_line_error(cli("import", str(source)))
    assert "line 2: the file entries/c/" in message and "is also given by line 1" in message
    assert entry_files(cli.vault) == {}


def test_a_hand_made_line_with_a_path_but_no_id_takes_the_id_its_path_names(cli, tmp_path):
    memory_id = "22222222-2222-2222-2222-222222222299"
    path = f"entries/c/facts/20240101T000000000Z__{memory_id}.md"
    cli.ok("import", str(write_lines(tmp_path / "lines.jsonl", {"text": "placed by hand", "path": path})))
    assert list(entry_files(cli.vault)) == [path]
    assert cli.ok("show", memory_id[:8], "--json").json()["text"] == "placed by hand"


# -- two imports at once --------------------------------------------------------------------------------

def test_an_import_whose_view_went_stale_never_rewrites_what_another_import_wrote(cli, tmp_path, monkeypatch):
    """Two imports of one source at once: each looks at the vault before it writes, so the slower one
    sees none of the faster one's files. Under the lock it must find them, write nothing and say so
    (it rewrote every file, an edit made meanwhile included, and counted them all as imported)."""
    from memvault.cli.base import open_memvault
    from memvault.transfer import import_source
    from memvault.transfer.runner import Importer

    claude = [{"uuid": "u1", "name": "tea", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "I drink green tea", "created_at": "2024-01-01T00:00:00Z"},
        {"uuid": "m2", "sender": "assistant", "text": "Noted.", "created_at": "2024-01-01T00:00:05Z"}]}]
    source = write_json(tmp_path / "conversations.json", claude)
    cli.ok("import", str(source))
    turn = next(p for p in (cli.vault / "entries").rglob("*.md") if "turns/user" in str(p))
    turn.write_text(turn.read_text().replace("green tea", "black tea"))  # edited since the first import
    before = entry_files(cli.vault)

    monkeypatch.setattr(Importer, "held", lambda self: (set(), set()))  # the view of an import started earlier
    (cli.vault / ".memvault" / "imports").rename(tmp_path / "progress")  # nor had it seen the progress file
    report = import_source(open_memvault(str(cli.vault), None), [str(source)])
    assert (report.imported, report.entries, report.present, report.unchanged) == (0, 0, 2, 1)
    assert entry_files(cli.vault) == before  # the edit is kept


@pytest.mark.parametrize("record", [
    {"text": "x" * 1_100_000},
    {"path": "entries/c/facts/big.md", "file": "---\nid: 22222222-2222-2222-2222-222222222207\nrole: memory\n"
     "created_at: '2024-01-01T00:00:00+00:00'\n---\n\n" + "y" * 1_100_000 + "\n"},
])
def test_a_jsonl_line_the_vault_could_not_read_back_stops_the_import(cli, tmp_path, record):
    """An entry file over limits.max_file_bytes is reported as broken and never read: imported, the
    line's text was in the vault and in git but in no list or search."""
    message = one_line_error(cli("import", str(write_lines(tmp_path / "lines.jsonl", record))))
    assert "more than limits.max_file_bytes" in message
    assert entry_files(cli.vault) == {}
