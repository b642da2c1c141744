"""`memvault export` and `import` of JSONL: a vault goes out and comes back byte for byte, every file
(facts, turns, summaries, tombstones, hand-written files memvault would not write so)."""

import json
import subprocess
from pathlib import Path

import pytest

from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import render
from tests.support.cli import Cli, run_memvault


def files_of(vault: Path, folders: tuple[str, ...] = ("entries", "core", "journal")) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for folder in folders
            for p in sorted((vault / folder).rglob("*")) if p.is_file()}


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True, check=True).stdout


def without_file_times(exported: str) -> list[dict]:
    lines = [json.loads(line) for line in exported.splitlines()]
    for line in lines:
        if "text" in line and not line.get("file", "---").startswith("---"):
            del line["created_at"], line["updated_at"]
    return lines


def commit_by_hand(vault: Path, message: str) -> None:
    git(vault, "add", "-A")
    git(vault, "-c", "user.name=me", "-c", "user.email=me@example.com", "commit", "-qm", message)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A vault with one of each kind of file, written by memvault and by hand."""
    from tests.support.server import isolated_env

    root = tmp_path_factory.mktemp("source")
    with isolated_env(root / "home"):
        cli = Cli(root / "vault")
        cli.ok("init")
        cli.ok("add", "Alice likes green tea", "-c", "work", "--user", "alice", "--agent", "bot", "--run", "r1",
               "--meta", "topic=drinks")
        cli.ok("add", "Ünïcödé ✓ 日本語 and a tab\there", "-c", "work")
        cli.ok("add", "multi\nline\n\n  indented text", "--no-llm")
        gone = cli.ok("add", "to be deleted", "--json").json()["results"][0]["id"]
        cli.ok("rm", gone)
        vault = cli.vault
        summary = Entry(text="Alice talks about tea.", role="summary", conversation_id="work",
                        metadata={"when": "2026-01-02", "nested": {"list": [1, 2.5, True, None]}})
        (vault / "entries/work/summaries").mkdir(parents=True)
        (vault / "entries/work/summaries/summary.md").write_text(render(summary), encoding="utf-8")
        turn = Entry(text="Hello there", role="user", conversation_id="chat", user_id="bob")
        (vault / "entries/chat/turns/user").mkdir(parents=True)
        (vault / f"entries/chat/turns/user/20260101T000000000Z__{turn.id}.md").write_text(render(turn))
        # What memvault's rendering would not give back: no front matter, a key it does not know, a time
        # to the microsecond, Windows line ends.
        (vault / "entries/work/facts/notes.md").write_text("a note written by hand\n")
        (vault / "entries/work/facts/20250301T090000123Z__0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a64.md").write_text(
            "---\nid: 0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a64\nconversation_id: work\nrole: memory\n"
            "created_at: '2025-03-01T09:00:00.123456+00:00'\nsource_id: x\n---\nagent-cli wrote this\n")
        (vault / "entries/work/facts/crlf.md").write_bytes(
            b"---\r\nid: 7d0c5a4e-0a8e-4d52-9e0c-2f3b8f6f9b11\r\nrole: memory\r\nconversation_id: work\r\n"
            b"created_at: '2026-01-01T00:00:00+00:00'\r\n---\r\n\r\nWindows text\r\n")
        # A fact with its triple, a core file a person wrote in, and a journal day: the round trip keeps them.
        triple = Entry(text="Alice's sister is called Ana.", conversation_id="work", user_id="alice",
                       category="relationship", subject="Alice", predicate="HAS_SISTER", object="Ana",
                       evidence="my sister Ana")
        (vault / f"entries/work/facts/20260102T000000000Z__{triple.id}.md").write_text(render(triple))
        (vault / "core/USER.md").write_text("# USER\n\nAlice, a tea drinker who lives in Lisbon.\n")
        (vault / "journal").mkdir(exist_ok=True)
        (vault / "journal/2026-01-02.md").write_text("# 2026-01-02\n\n## 10:00 UTC · chat\n- ADD Alice likes tea\n")
        commit_by_hand(vault, "hand-written files")
        exported = cli.ok("export").stdout
    return vault, exported


def test_export_is_one_line_per_entry_file_with_every_front_matter_field(source):
    vault, exported = source
    lines = [json.loads(line) for line in exported.splitlines()]
    assert sorted(line["path"] for line in lines) == sorted(files_of(vault, ("entries",)) | {
        "core/USER.md": b"", "journal/2026-01-02.md": b""})  # core templates nobody wrote in are left out
    workspace = {line["path"]: line for line in lines if "text" not in line}
    assert workspace["core/USER.md"] == {"path": "core/USER.md",
                                         "file": "# USER\n\nAlice, a tea drinker who lives in Lisbon.\n"}
    triple = next(line for line in lines if line.get("text") == "Alice's sister is called Ana.")
    assert (triple["subject"], triple["predicate"], triple["object"], triple["evidence"], triple["category"]) == (
        "Alice", "HAS_SISTER", "Ana", "my sister Ana", "relationship")
    lines = [line for line in lines if "text" in line]
    tea = next(line for line in lines if line["text"] == "Alice likes green tea")
    assert (tea["user_id"], tea["agent_id"], tea["run_id"], tea["metadata"]) == ("alice", "bot", "r1",
                                                                                 {"topic": "drinks"})
    assert {"id", "role", "conversation_id", "created_at", "updated_at", "hash", "source", "deleted_at",
            "replaced_by"} <= set(tea)
    assert "file" not in tea  # memvault's own files are rendered back from their fields
    deleted = next(line for line in lines if line["text"] == "to be deleted")
    assert deleted["deleted_at"] and "/deleted/" in deleted["path"]
    hand = {line["path"].rsplit("/", 1)[1]: line for line in lines if "file" in line}
    assert set(hand) == {"notes.md", "crlf.md", "20250301T090000123Z__0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a64.md"}


def test_round_trip_into_an_empty_vault_reproduces_every_file_byte_for_byte(source, tmp_path):
    vault, exported = source
    copy = Cli(tmp_path / "copy")
    copy.ok("init")
    copy.ok("import", "-", input=exported)  # `memvault export | memvault import -`
    assert files_of(copy.vault) == files_of(vault)
    assert git(copy.vault, "status", "--porcelain") == ""
    commits = git(copy.vault, "log", "--format=%s").splitlines()
    # one per conversation, and one for the core file and the journal day
    assert len([c for c in commits if c.startswith("memvault import")]) == 4
    # Exported again, the same lines; but a file without front matter takes its time from the file's
    # modification time, which a copy (like a git clone) does not keep.
    assert without_file_times(copy.ok("export").stdout) == without_file_times(exported)
    # The copy is a working vault: its index is built from the imported files.
    hits = copy.ok("search", "green tea", "-c", "work", "--json").json()
    assert hits and hits[0]["text"] == "Alice likes green tea"


def test_importing_the_same_export_again_changes_nothing(source, tmp_path):
    vault, exported = source
    (tmp_path / "vault.jsonl").write_text(exported, encoding="utf-8")
    copy = Cli(tmp_path / "copy")
    copy.ok("init")
    copy.ok("import", str(tmp_path / "vault.jsonl"))
    head = git(copy.vault, "rev-parse", "HEAD")
    report = copy.ok("import", str(tmp_path / "vault.jsonl"), "--json").json()
    assert (report["imported"], report["entries"], report["unchanged"]) == (0, 0, 3)
    assert git(copy.vault, "rev-parse", "HEAD") == head
    # Without the progress file, the ids alone keep a second import from writing anything.
    for state in (copy.vault / ".memvault/imports").iterdir():
        state.unlink()
    report = copy.ok("import", str(tmp_path / "vault.jsonl"), "--json").json()
    entry_lines = [line for line in exported.splitlines() if "text" in json.loads(line)]
    assert (report["entries"], report["present"]) == (0, len(entry_lines))
    assert git(copy.vault, "rev-parse", "HEAD") == head


def test_export_to_a_file_through_the_real_program(source, tmp_path):
    vault, exported = source
    done = run_memvault("export", "-o", str(tmp_path / "out.jsonl"), "--vault", str(vault))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == exported
    assert b"exported 12 files" in done.stderr  # 10 entries, a core file and a journal day


def test_a_line_made_by_hand_needs_only_text(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    lines = [{"text": "Carol likes jazz", "user_id": "carol", "metadata": {"k": 1}},
             {"text": "A turn", "role": "user", "conversation_id": "chat", "created_at": "2025-01-02T03:04:05Z"}]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    cli.ok("import", "-", "--format", "jsonl", input=text)
    rows = {row["text"]: row for row in cli.ok("list", "--json").json()}
    assert rows["Carol likes jazz"]["user_id"] == "carol" and rows["Carol likes jazz"]["conversation_id"] == "default"
    assert rows["A turn"]["created_at"] == "2025-01-02T03:04:05.000+00:00"
    cli.ok("import", "-", "--format", "jsonl", input=text)  # ids made from the lines: nothing twice
    assert len(cli.ok("list", "--json").json()) == 2


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "line 2: not JSON"),
    ('{"text": ""}', "line 2: 'text' must be a non-empty string"),
    ('{"text": "x", "path": "../../etc/passwd.md"}', "line 2: 'path' '../../etc/passwd.md' is not an entry file"),
    ('{"text": "x", "path": "entries/a/notes/x.md"}', "is not in a folder memvault reads entries from"),
    ('{"text": "x", "hash": "0123"}', "'hash' does not match 'text'"),
    ('{"text": "x", "role": "boss"}', "unknown role 'boss'"),
    ('{"text": "x", "colour": "red"}', "unknown field 'colour'"),
    ('{"text": "x", "id": "not-a-uuid"}', "invalid memory id"),
    ('{"text": "x", "conversation_id": "a\\u0001b"}', "invalid conversation id"),  # '../up' is one
    ('{"text": "x", "user_id": "a\\u0001b"}', "invalid user_id"),
    ('{"path": "entries/a/facts/x.md", "file": "---\\nid: [\\n---\\n"}', "broken front matter"),
    ('{"text": "x", "id": "7d0c5a4e-0a8e-4d52-9e0c-2f3b8f6f9b11", '
     '"path": "entries/a/facts/20250101T000000000Z__59267f38-96f9-4a4e-b751-6b3f652747ae.md"}',
     "'path' names id 59267f38-96f9-4a4e-b751-6b3f652747ae, the entry's id is 7d0c5a4e"),
])
def test_a_bad_line_stops_the_import_before_anything_is_written(tmp_path, line, message):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    head = git(cli.vault, "rev-parse", "HEAD")
    result = cli("import", "-", "--format", "jsonl", input='{"text": "a good line"}\n' + line + "\n")
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert git(cli.vault, "rev-parse", "HEAD") == head and files_of(cli.vault, ("entries",)) == {}


def test_an_existing_file_is_never_overwritten(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "mine", "-c", "work")
    ours = cli.ok("list", "--json").json()[0]
    theirs = {**ours, "text": "theirs", "hash": None}
    report = cli.ok("import", "-", "--format", "jsonl", "--json", input=json.dumps(theirs) + "\n").json()
    assert (report["entries"], report["present"]) == (0, 1)
    assert [row["text"] for row in cli.ok("list", "--json").json()] == ["mine"]


def test_export_names_unreadable_files_and_leaves_them_out(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "fine")
    (cli.vault / "entries/default/facts/broken.md").write_text("---\nid: [\n---\nbody\n")
    result = cli.ok("export")
    assert [json.loads(line)["text"] for line in result.stdout.splitlines()] == ["fine"]
    assert "skipped entries/default/facts/broken.md" in result.stderr


def test_a_tombstone_where_agent_cli_puts_them_comes_back_where_it_was(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    rel = "entries/deleted/work/facts/2025-03-01T09-00-03.000001-00-00__0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a63.md"
    content = ("---\nid: 0b5a3f7e-6d1c-4a8e-9f2b-1c2d3e4f5a63\nconversation_id: work\nrole: memory\n"
               "created_at: '2025-03-01T09:00:03.000001+00:00'\nreplaced_by: x\n---\nThe user lived in Porto.\n")
    cli.ok("import", "-", "--format", "jsonl", input=json.dumps({"path": rel, "file": content}) + "\n")
    assert (cli.vault / rel).read_text() == content


def test_a_file_in_the_place_of_an_imported_one_is_kept(tmp_path):
    """A conversation's summary is one file whatever its id: an imported summary never replaces one."""
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    ours = Entry(text="our summary", role="summary", conversation_id="work")
    (cli.vault / "entries/work/summaries").mkdir(parents=True)
    (cli.vault / "entries/work/summaries/summary.md").write_text(render(ours))
    commit_by_hand(cli.vault, "a summary")
    theirs = {"text": "their summary", "role": "summary", "conversation_id": "work"}
    report = cli.ok("import", "-", "--format", "jsonl", "--json", input=json.dumps(theirs) + "\n").json()
    assert (report["entries"], report["present"]) == (0, 1)
    assert (cli.vault / "entries/work/summaries/summary.md").read_text() == render(ours)



def test_a_core_file_line_fills_a_template_but_never_overwrites_what_a_person_wrote(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    (cli.vault / "core/SOUL.md").write_text("Be brief.\n")
    commit_by_hand(cli.vault, "my soul")
    lines = [{"path": "core/USER.md", "file": "Bruno keeps bees.\n"}, {"path": "core/SOUL.md", "file": "Be verbose.\n"}]
    report = cli.ok("import", "-", "--format", "jsonl", "--json",
                    input="".join(json.dumps(line) + "\n" for line in lines)).json()
    assert (cli.vault / "core/USER.md").read_text() == "Bruno keeps bees.\n"
    assert (cli.vault / "core/SOUL.md").read_text() == "Be brief.\n"
    assert any("core/SOUL.md" in note for note in report["notes"])
    assert git(cli.vault, "status", "--porcelain") == ""
    bad = cli("import", "-", "--format", "jsonl", input='{"path": "core/USER.md", "file": "x", "text": "y"}\n')
    assert bad.exit_code == 2 and "'path' and 'file' only" in bad.stderr
