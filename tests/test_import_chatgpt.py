"""`memvault import` of a ChatGPT data export (conversations.json, to the shape OpenAI's export writes:
a tree of messages per conversation, `current_node` the leaf of the thread the user kept)."""

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def turns(cli):
    return [(row["conversation_id"], row["role"], row["text"]) for row in cli.ok("list", "--json").json()]


def test_each_conversation_becomes_its_kept_thread_of_turns_with_times_and_sources(cli):
    report = cli.ok("import", str(FIXTURE), "--json").json()
    assert (report["format"], report["conversations"], report["imported"], report["turns"]) == ("chatgpt", 2, 2, 6)
    assert turns(cli) == [
        ("chatgpt-trip-to-lisbon-67c2f1a0", "user", "I'm flying to Lisbon in May. Where should I stay?"),
        ("chatgpt-trip-to-lisbon-67c2f1a0", "assistant", "Alfama or Príncipe Real are lovely in May."),
        # the branch the user edited away, the system prompt, the tool call and its result are left out;
        # an image part is left out of a multimodal message, its text kept
        ("chatgpt-trip-to-lisbon-67c2f1a0", "user", "I'm vegetarian. Here is a photo of the hotel."),
        ("chatgpt-trip-to-lisbon-67c2f1a0", "assistant", "Try Ao 26 Vegan Food Project."),
        ("chatgpt-cello-practice-67c3a2b0", "user", "My sister Ana plays the cello."),
        ("chatgpt-cello-practice-67c3a2b0", "assistant", "How long has she been playing?"),
    ]
    first = cli.ok("list", "--json").json()[0]
    assert first["created_at"] == "2025-03-01T09:00:01.500+00:00"
    assert first["metadata"] == {"imported_from": "chatgpt", "source_message": "u-0001", "title": "Trip to Lisbon",
                                 "source_conversation": "67c2f1a0-1b2c-8000-9d3e-4f5a6b7c8d9e"}
    log = subprocess.run(["git", "log", "--format=%s%n%b"], cwd=cli.vault, capture_output=True, text=True).stdout
    assert log.count("memvault import:") == 2 and "Memvault-Operation: import" in log
    hits = cli.ok("search", "cello", "--json").json()
    assert hits[0]["text"] == "My sister Ana plays the cello."


def test_the_export_folder_and_its_zip_are_read_too(cli, tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    shutil.copy(FIXTURE, folder / "conversations.json")
    (folder / "chat.html").write_text("<html></html>")
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as archive:
        archive.write(folder / "chat.html", "chat.html")
        archive.write(FIXTURE, "conversations.json")
    assert cli.ok("import", str(tmp_path / "export.zip"), "--json").json()["turns"] == 6
    assert cli.ok("import", str(folder), "--json").json()["turns"] == 0  # the same conversations


def test_a_conversation_that_grew_brings_only_its_new_turns(cli, tmp_path):
    data = json.loads(FIXTURE.read_text())
    cli.ok("import", str(FIXTURE))
    cello = data[1]
    cello["mapping"]["a-1"]["children"] = ["u-2"]
    cello["mapping"]["u-2"] = {"id": "u-2", "parent": "a-1", "children": [], "message": {
        "id": "u-2", "author": {"role": "user"}, "create_time": 1740906100.0,
        "content": {"content_type": "text", "parts": ["Ten years now."]}, "metadata": {}, "recipient": "all"}}
    cello["current_node"] = "u-2"
    grown = tmp_path / "conversations.json"
    grown.write_text(json.dumps(data))
    report = cli.ok("import", str(grown), "--json").json()
    # another file, so no progress notes for it: the turns it shares are found by their ids
    assert (report["imported"], report["entries"], report["unchanged"], report["present"]) == (1, 1, 1, 6)
    assert turns(cli)[-1] == ("chatgpt-cello-practice-67c3a2b0", "user", "Ten years now.")


def test_voice_mode_turns_come_in_as_their_transcriptions(cli, tmp_path):
    data = json.loads(FIXTURE.read_text())[1:]
    data[0]["mapping"]["u-1"]["message"]["content"] = {"content_type": "multimodal_text", "parts": [
        {"content_type": "audio_transcription", "text": "My sister Ana plays the viola.", "direction": "in"},
        {"content_type": "audio_asset_pointer", "asset_pointer": "sediment://file_1", "size_bytes": 9000}]}
    voice = tmp_path / "conversations.json"
    voice.write_text(json.dumps(data))
    cli.ok("import", str(voice))
    assert turns(cli)[0][2] == "My sister Ana plays the viola."


def test_into_one_named_conversation(cli):
    cli.ok("import", str(FIXTURE), "-c", "history")
    assert {row[0] for row in turns(cli)} == {"history"}
    # imported elsewhere already: found by their ids, wherever they are
    assert cli.ok("import", str(FIXTURE), "--json").json()["entries"] == 0
    assert len(turns(cli)) == 6


@pytest.mark.parametrize(("content", "message"), [
    ("[1, 2]", "cannot tell the format of"),
    ('{"not": "a list"}', "cannot tell the format of"),
    ("not json at all", "is not a known export (not JSON"),
    ('[{"title": "x", "mapping": {}}]', "a ChatGPT conversation has no id"),
])
def test_a_file_that_is_not_an_export_is_one_clear_error(cli, tmp_path, content, message):
    bad = tmp_path / "conversations.json"
    bad.write_text(content)
    result = cli("import", str(bad))
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_wrong_format_or_a_missing_file_is_refused(cli, tmp_path):
    result = cli("import", str(FIXTURE), "--format", "claude")
    assert result.exit_code == 2 and "is not a Claude export" in result.stderr
    result = cli("import", str(tmp_path / "nothing.json"))
    assert result.exit_code == 2 and "no such file or folder" in result.stderr
    result = cli("import", str(FIXTURE), "--format", "word")
    assert result.exit_code == 2 and "unknown format 'word'" in result.stderr


def test_a_message_too_long_for_the_vault_is_named_and_left_out(cli, tmp_path):
    data = json.loads(FIXTURE.read_text())
    data[1]["mapping"]["a-1"]["message"]["content"]["parts"] = ["x" * 100_001]
    big = tmp_path / "conversations.json"
    big.write_text(json.dumps(data))
    result = cli.ok("import", str(big))
    assert "message a-1: left out: the memory text has 100,001 characters" in result.stderr
    assert len(turns(cli)) == 5


def test_auto_detection_reads_the_export_once(tmp_path, monkeypatch):
    # The format is told from the parsed JSON; the import goes on with it instead of parsing it again.
    from memvault import settings, transfer
    from memvault.core import Memvault
    from memvault.transfer import chatgpt, source_files

    reads = []
    real = source_files.read_export

    def counted(path, what, *limit):
        reads.append(what)
        return real(path, what, *limit)

    monkeypatch.setattr(transfer.source_files, "read_export", counted)
    monkeypatch.setattr(chatgpt, "read_export", counted)
    core = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    report = transfer.import_source(core, [str(FIXTURE)])
    core.close()
    assert report.turns > 0 and reads == ["known export"]
