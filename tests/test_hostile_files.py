"""Import sources a person (or an attacker) can place: a zip bomb stops at limits.max_import_bytes while
it streams, a FIFO or a device is refused on its open descriptor, and an id the source gives twice is
noted (issue 23, items 4, 5 and 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.support.cli import initialised

FIXTURE = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"


@pytest.fixture
def cli(tmp_path):
    return initialised(tmp_path / "vault")


def memvault(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memvault", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def zip_bomb(path: Path, inflated: int) -> Path:
    """A ChatGPT-shaped export whose conversations.json inflates to `inflated` bytes (spaces: a
    thousandth of that on disk), written a megabyte at a time."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("conversations.json", "w", force_zip64=True) as member:
        member.write(b"[")
        block = b" " * (1 << 20)
        for _ in range(inflated >> 20):
            member.write(block)
        member.write(b"]")
    return path


def test_a_zip_bomb_stops_at_the_cap_naming_the_setting_without_inflating_it(tmp_path, cli):
    bomb = zip_bomb(tmp_path / "export.zip", 200 << 20)  # 200 MB inflated, 200 KB on disk
    assert bomb.stat().st_size < 1 << 20
    # VmHWM is this process's own peak: ru_maxrss would also count the pytest process it was forked from
    # (Linux keeps the larger of the two across exec), over 800 MB late in the whole suite.
    code = textwrap.dedent(f"""
        import re, sys
        from memvault.cli.app import main
        sys.argv = ['memvault', 'import', {str(bomb)!r}, '--vault', {str(cli.vault)!r}]
        try:
            main()
        finally:
            status = open('/proc/self/status').read()
            print('peak', re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1), file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMVAULT_LIMITS_MAX_IMPORT_BYTES": str(20 << 20)})
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if not line.startswith("peak")]
    assert len(lines) == 1 and "limits.max_import_bytes" in lines[0], done.stderr
    peak_kb = int(done.stderr.split("peak")[-1])
    assert peak_kb < 150_000, f"peak RSS {peak_kb} KB: the export was inflated whole"  # capped: about 50 MB


def test_a_fifo_given_as_the_source_is_refused_at_once(tmp_path, cli):
    fifo = tmp_path / "conversations.json"
    os.mkfifo(fifo)
    done = memvault("import", str(fifo), "--vault", str(cli.vault), timeout=60)  # once: blocked forever
    assert done.returncode != 0
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def agentcli_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "agent-memory"
    conversation = folder / "entries" / "chat"
    conversation.mkdir(parents=True)
    (conversation / "20250101-000000-user-aaaa.md").write_text(
        "---\nid: 11111111-1111-4111-8111-111111111111\nconversation_id: chat\nrole: user\n"
        "created_at: '2025-01-01T00:00:00+00:00'\n---\nI keep bees\n")
    return folder


def test_a_fifo_among_an_import_sources_files_is_left_out_with_a_note(tmp_path, cli):
    folder = agentcli_folder(tmp_path)
    os.mkfifo(folder / "entries" / "chat" / "20250101-000001-user-bbbb.md")
    done = memvault("import", str(folder), "--json", "--vault", str(cli.vault), timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert any("not a regular file" in note for note in report["notes"])
    assert [row["text"] for row in cli.ok("list", "--json").json()] == ["I keep bees"]


def test_a_character_device_named_md_is_left_out_not_read(tmp_path, cli):
    folder = agentcli_folder(tmp_path)
    device = folder / "entries" / "chat" / "20250101-000002-user-cccc.md"
    try:
        os.mknod(device, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero: never ends
    except PermissionError:
        pytest.skip("making a device needs CAP_MKNOD")
    done = memvault("import", str(folder), "--json", "--vault", str(cli.vault), timeout=120)
    assert done.returncode == 0, done.stderr
    assert any("not a regular file" in note for note in json.loads(done.stdout)["notes"])


def test_an_id_the_source_gives_twice_in_two_conversations_is_noted(tmp_path, cli):
    source = tmp_path / "memories.jsonl"
    same = "22222222-2222-4222-8222-222222222222"
    source.write_text(json.dumps({"id": same, "text": "Ada keeps bees", "conversation_id": "one"}) + "\n"
                      + json.dumps({"id": same, "text": "Ada sells honey", "conversation_id": "two"}) + "\n")
    report = cli.ok("import", str(source), "--json").json()
    assert any("twice" in note for note in report["notes"]), report
    assert [row["text"] for row in cli.ok("list", "--json").json()] == ["Ada keeps bees"]


