"""`memvault erase` (memvault/vault/forget/erase.py, memvault/core/erasing.py): a planted string is gone from
every commit, object, pack, reflog, state file and the work tree; everything else stays and answers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import zlib
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.curate.queue import CurationQueue
from memvault.vault.forget.scrub import Scrubber
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli

pytestmark = pytest.mark.timeout(600)

SECRET = "Zanzibar-Quokka-7781"  # not a token shape: redaction leaves it, so only erase can remove it
CHATGPT = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"
KEPT = {
    "museum": "Carol's favourite museum is the Gulbenkian in Lisbon.",
    "tea": "Dan drinks jasmine tea every afternoon.",
    "bike": "Erin rides a red bicycle to work.",
}


def git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True, check=True).stdout


def open_vault(root: Path) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)


def leftovers(root: Path, needle: str) -> list[str]:
    """Every place `needle` is still found: git's log and objects (inflated), the raw files of the
    repository (packs and loose objects, also inflated), .memvault/ and the work tree."""
    found = []
    raw = needle.encode()
    if raw in git(root, "log", "--all", "-p", "--format=%H%n%B"):
        found.append("git log --all -p")
    listed = git(root, "rev-list", "--all", "--objects").split(b"\n")
    shas = b"".join(line.split(b" ")[0] + b"\n" for line in listed if line.strip())
    if raw in git(root, "cat-file", "--batch", data=shas):
        found.append("an object reachable from a ref")
    if raw in git(root, "cat-file", "--batch-all-objects", "--batch", "--unordered"):
        found.append("an object in the repository (reachable or not)")
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if raw in data:
            found.append(str(path.relative_to(root)))
        elif "/objects/" in str(path) and len(path.parent.name) == 2:  # a loose object: zlib
            try:
                if raw in zlib.decompress(data):
                    found.append(f"{path.relative_to(root)} (inflated)")
            except zlib.error:
                pass
        elif path.suffix == ".pack":
            for sha in re.findall(rb"^([0-9a-f]{40}) ", git(root, "verify-pack", "-v", str(path.with_suffix(".idx"))),
                                  re.MULTILINE):
                if raw in git(root, "cat-file", "-p", sha.decode()):
                    found.append(f"{path.relative_to(root)} object {sha.decode()[:8]}")
    return found


@pytest.fixture
def planted(tmp_path):
    """A vault with the secret in a turn, a fact, a summary, a session summary, the journal, a core
    file, the scratchpad, a held candidate, the curation queue, an imported conversation, a rule and a
    past index; and unrelated memories before and after it."""
    root = tmp_path / "vault"
    m = open_vault(root)
    kept = {key: m.add_verbatim(text, conversation="other").id for key, text in KEPT.items() if key == "museum"}
    museum_commit = git(root, "rev-parse", "HEAD").decode().strip()
    time.sleep(1.1)  # git dates are seconds: the museum's commit is the last one of its second
    m.add_verbatim(f"My locker code is {SECRET}, remember it.", conversation="chat", role="user")
    m.add_verbatim(f"The user's locker code is {SECRET}.", conversation="chat")
    with m.vault.transaction("test", "summaries and the journal", "chat") as tx:
        tx.write(Entry(text=f"The user talked about lockers. Their code is {SECRET}. They also like tea.",
                       role="summary", conversation_id="chat"))
        tx.write(Entry(text=f"The user set a locker code ({SECRET}) today. They asked about tea.",
                       role="session", conversation_id="chat"))
        tx.write_file(Path("journal/2026-11-20.md"), f"# 2026-11-20\n\n- Learned the locker code {SECRET}.\n"
                                                     "- Talked about tea.\n")
    m.update_core("USER", f"# User\n\nKeeps a locker (code {SECRET}). Likes tea.\n")
    m.add_rule(f"Always remind the user of the locker code {SECRET}.", conversation="chat")
    m.scratchpad("chat").write("code", SECRET)
    m.scratchpad("chat").write("plan", "buy tea")
    record = m.session_buffer.read("chat")
    m.session_buffer.append_held(record, [{"text": f"locker code {SECRET}"}, {"text": "likes tea"}])
    CurationQueue(m.vault.state_dir).add("t1", "chat", {}, [{"role": "user", "content": f"code {SECRET}"}])
    export = tmp_path / "conversations.json"
    export.write_text(CHATGPT.read_text(encoding="utf-8").replace("Where should I stay?", f"My locker is {SECRET}."),
                      encoding="utf-8")
    Cli(root).ok("import", str(export))
    for key in ("tea", "bike"):
        kept[key] = m.add_verbatim(KEPT[key], conversation="other").id
    assert [h.text for h in m.search("locker code")]  # today's index holds it
    assert [h.text for h in m.search("locker code", as_of=git(root, "rev-parse", "HEAD").decode().strip())]
    assert list((root / ".memvault/asof").iterdir())  # a past index holds it
    m.close()
    everywhere = leftovers(root, SECRET)
    assert any("entries/" in place for place in everywhere) and ".memvault/asof" in " ".join(everywhere)
    return root, kept, museum_commit


def test_erase_matching_leaves_zero_bytes_and_everything_else(planted):
    root, kept, museum_commit = planted
    files_before = {p.relative_to(root) for p in (root / "entries/other").rglob("*.md")}
    cli = Cli(root)
    dry = cli.ok("erase", "--matching", SECRET, "--dry-run", "--json").json()
    assert dry["dry_run"] and dry["roles"]["user"] >= 2 and dry["roles"]["memory"] == 1 and dry["roles"]["rule"] == 1
    assert {"journal/2026-11-20.md", "core/USER.md"} <= set(dry["scrubbed"])
    assert any(p.endswith("summaries/summary.md") for p in dry["scrubbed"])
    assert dry["past_indexes"] >= 1 and dry["index_rows"] >= 4 and len(dry["state_files"]) >= 2
    assert len(dry["commit_ids"]) == dry["commits"] >= 5
    assert SECRET.encode() in git(root, "log", "--all", "-p")  # a dry run changes nothing

    done = cli.ok("erase", "--matching", SECRET, "--reason", "asked by the user", "-y", "--json").json()
    assert done["record"] and done["commits"] >= 5

    assert leftovers(root, SECRET) == []
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--full", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0 and fsck.stdout.strip() == "", fsck.stdout + fsck.stderr
    # The quotes are gone, the rest of each text stays.
    summary = next((root / "entries/chat").rglob("summary.md")).read_text()
    assert "The user talked about lockers. They also like tea." in summary
    assert (root / "journal/2026-11-20.md").read_text() == "# 2026-11-20\n\n- Talked about tea.\n"
    assert "Likes tea." in (root / "core/USER.md").read_text()
    assert json.loads(next(root.glob(".memvault/session/*/scratchpad.json")).read_text()) == {"plan": "buy tea"}
    # Every other memory is there with the same text, and found.
    m = open_vault(root)
    try:
        assert {p.relative_to(root) for p in (root / "entries/other").rglob("*.md")} == files_before
        for key, memory_id in kept.items():
            assert m.get(memory_id)[1].text == KEPT[key]
        assert m.search("jasmine tea")[0].text == KEPT["tea"]
        assert "Alfama" in " ".join(h.text for h in m.search("Alfama Lisbon", top_k=10))  # the rest of the import
        # A past commit id saved before the erase still answers (mapped), as does a date.
        past = m.search("favourite museum", as_of=museum_commit)
        assert [h.text for h in past] == [KEPT["museum"]]
        # The erasure record: kind, count, when, who, why; never the content.
        record = git(root, "log", "-1", "--format=%B").decode()
        assert "Memvault-Erased-Kind: matching" in record and "Memvault-Erased-Reason: asked by the user" in record
        assert "Memvault-Erased-Blob: " in record and SECRET not in record
    finally:
        m.close()


def test_erase_by_id_removes_the_memory_and_its_versions_from_history(tmp_path):
    root = tmp_path / "vault"
    m = open_vault(root)
    try:
        gone = m.add_verbatim("Frank's first passport number was K-55-ALPHA-991.", conversation="c")
        m.update(gone.id, "Frank's passport number is now K-77-BRAVO-112.")
        kept = m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")
        result = m.erase(ids=[gone.id[:8]])
        assert result.ids == [gone.id]
        for text in ("K-55-ALPHA-991", "K-77-BRAVO-112", gone.id):
            assert leftovers(root, text) == [], text
        assert m.get(kept.id)[1].text == "Frank likes sailing on Sundays."
        assert m.search("sailing")[0].id == kept.id
    finally:
        m.close()


def test_erase_user_alice_in_shared_conversations(tmp_path):
    """Alice and Bob talk in the same conversations: everything of Alice's goes, all of Bob's stays."""
    root = tmp_path / "vault"
    m = open_vault(root)
    alice = ["Alice: I grew up in Tromso near the fjords.", "Alice: my sister Ingrid plays the cello.",
             "Alice: I am allergic to hazelnuts."]
    bob = ["Bob: I restore vintage motorbikes.", "Bob: my dog Pixel loves the beach.", "Bob: I work night shifts."]
    try:
        for conversation in ("group-1", "group-2"):
            for a, b in zip(alice, bob, strict=True):
                m.add_entries([Entry(text=f"{a} ({conversation})", role="user", conversation_id=conversation,
                                     user_id="alice"),
                               Entry(text=f"{b} ({conversation})", role="user", conversation_id=conversation,
                                     user_id="bob")], f"turns in {conversation}")
            with m.vault.transaction("test", "summary", conversation) as tx:  # a summary quoting both
                tx.write(Entry(text=f"{alice[0]} ({conversation}) {bob[0]} ({conversation})", role="summary",
                               conversation_id=conversation))
        her_turn = next(e for _, e in m.list(conversation="group-1").entries if e.user_id == "alice")
        fact = m.add_entries([Entry(text="Alice is allergic to hazelnuts.", conversation_id="group-1",
                                    source=her_turn.id)], "a fact drawn from her turn, stored without a scope")[0]
        # About her, in shared scopes with no link to her turns: her id as the triple's subject, or as
        # its object in a fact nobody owns; or attributed to her. Bob's own facts that name her stay.
        about = m.add_entries([
            Entry(text="Alice is the best cellist of the choir.", conversation_id="group-1", subject="Alice",
                  predicate="is", object="the best cellist of the choir"),
            Entry(text="The treasurer of the choir is alice.", conversation_id="group-2",
                  subject="The treasurer of the choir", predicate="is", object="alice"),
            Entry(text="The choir rehearses in the old library.", conversation_id="group-2",
                  metadata={"attributed_to": "alice"})], "facts about Alice in shared scopes")
        bobs = m.add_entries([
            Entry(text="Bob climbs with Alice on Fridays.", conversation_id="group-1", user_id="bob", subject="Bob",
                  predicate="climbs with", object="Alice"),
            Entry(text="Bob thinks Alice plays too loud.", conversation_id="group-1")], "Bob's facts naming her")
        m.search("motorbikes")
        dry = m.erase(user="alice", dry_run=True)
        assert dry.about == sorted(e.id for e in about[:2])  # listed apart, for the operator to see
        assert {e.id for e in about} <= set(dry.ids) and not {e.id for e in bobs} & set(dry.ids)
        result = m.erase(user="alice", reason="GDPR Art. 17 request")
        assert result.roles["user"] == 6
        for text in ("best cellist", "treasurer of the choir", "old library"):
            assert leftovers(root, text) == [], text
        assert [m.get(e.id)[1].text for e in bobs] == [e.text for e in bobs]
        for text in [*alice, "Tromso", "Ingrid", "hazelnuts"]:
            assert leftovers(root, text.split(": ")[-1]) == [], text
        texts = [e.text for _, e in m.list().entries if e.role == "user"]
        assert sorted(texts) == sorted(f"{b} ({c})" for c in ("group-1", "group-2") for b in bob)
        assert fact.id in result.ids
        for conversation in ("group-1", "group-2"):
            assert m.vault.summary(conversation).text == f"{bob[0]} ({conversation})"
        assert m.search("vintage motorbikes")[0].text.startswith("Bob: I restore vintage motorbikes.")
    finally:
        m.close()


def test_bad_requests_are_one_line_errors(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    for args, message in [((), "exactly one of"), (("--matching", "(", "--regex"), "not a regular expression"),
                          (("--matching", "x", "--user", "y"), "exactly one of"), (("--matching", " "), "non-empty")]:
        result = cli("erase", *args)
        assert result.exit_code != 0 and message in result.stderr and "Traceback" not in result.stderr


def test_nothing_to_erase_changes_nothing(tmp_path):
    root = tmp_path / "vault"
    m = open_vault(root)
    try:
        m.add_verbatim("Gina collects stamps.")
        head = git(root, "rev-parse", "HEAD")
        result = m.erase(matching="no such words anywhere")
        assert result.ids == [] and result.record is None and git(root, "rev-parse", "HEAD") == head
    finally:
        m.close()


def test_an_enclosing_repository_is_refused(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    subprocess.run(["git", "init", "-q", str(notes)], check=True)
    m = Memvault.open(settings_module.load(None, {"vault.path": str(notes / "vault")}), create=True,
                      use_enclosing_repo=True)
    try:
        with pytest.raises(Exception, match="its own repository"):
            m.erase(matching="x")
    finally:
        m.close()
    shutil.rmtree(notes)


@pytest.mark.parametrize("text, quotes, expected", [
    ("One. Two has X in it. Three.", ["X"], "One. Three."),
    ("- a bullet with X\n- another\n", ["X"], "- another\n"),
    ("---\nid: 1\nevidence: said X\n---\nBody X here. Kept.\n", ["X"], "---\nid: 1\n---\nKept.\n"),
    ("Para one X\nspans\n\nNext.", ["X\nspans"], "Para one \n\nNext."),
])
def test_scrubber_takes_out_the_sentence(text, quotes, expected):
    assert Scrubber(quotes).scrub(text) == expected


def test_a_quoted_whole_sentence_goes_alone():
    assert Scrubber(["Alice: I grew up in Tromso. (g1)"]).scrub(
        "Alice: I grew up in Tromso. (g1) Bob: I fix motorbikes. (g1)") == "Bob: I fix motorbikes. (g1)"


def test_uncommitted_edits_are_never_lost_to_a_rewrite(tmp_path):
    root = tmp_path / "vault"
    m = open_vault(root)
    try:
        entry = m.add_verbatim("Hana's kite is orange.")
        path = root / m.get(entry.id)[0]
        path.write_text(path.read_text().replace("orange", "purple"))  # a person's edit, not committed
        with pytest.raises(Exception, match="uncommitted changes"):
            m.erase(matching="kite")
        assert "purple" in path.read_text() and "orange" in git(root, "log", "-p").decode()
    finally:
        m.close()


def test_a_whole_id_is_found_through_the_index_and_a_cli_erase_with_yes_selects_once(tmp_path, monkeypatch):
    from memvault.vault.forget import erase as erase_module
    from memvault.vault.write.store import Vault

    root = tmp_path / "vault"
    m = open_vault(root)
    try:
        gone = m.add_verbatim("Grace's locker code is 4-4-1-9.", conversation="c")
        kept = m.add_verbatim("Grace likes rowing.", conversation="c")
        m.search("rowing")  # the index is built and holds both
    finally:
        m.close()
    walks, selections = [], []
    resolve, select = Vault.resolve, erase_module.select
    monkeypatch.setattr(Vault, "resolve", lambda self, *a, **kw: walks.append(a) or resolve(self, *a, **kw))
    monkeypatch.setattr(erase_module, "select", lambda *a, **kw: selections.append(a) or select(*a, **kw))
    done = Cli(root).ok("erase", gone.id, "-y", "--json").json()
    assert done["ids"] == [gone.id] and (walks, len(selections)) == ([], 1)  # no walk of every file, no dry run
    assert leftovers(root, "4-4-1-9") == []
    Cli(root).ok("erase", kept.id[:8], "--dry-run")  # a prefix is still resolved by the walk
    assert walks and len(selections) == 2
