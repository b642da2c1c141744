"""Redaction (memvault/text/redact.py): secrets never reach the vault. The detector catches every kind
of the test set and nothing in LoCoMo's 5,882 turns; every write path (facts, turns, core files, the
journal, the scratchpad, held candidates, an exact import) keeps the marker, never the secret; the
settings turn it off or allow a value."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.errors import ConfigError
from memvault.text import redact
from memvault.text.secret_tokens import DETECT_SECRETS
from memvault.vault.format.entry import Entry
from tests.support.secret_samples import samples

TOKEN = "ghp_" + "Zq7XkP2mN9vB4cR8tY1wL6sD3fG5hJ0aE7uI"  # a github-token shape, 36 characters after ghp_
LOCOMO = [Path(__file__).resolve().parents[2] / "shared/data/locomo/locomo10.json",
          Path(__file__).resolve().parents[1] / "../shared/data/locomo/locomo10.json",
          Path("/work/shared/data/locomo/locomo10.json")]


@pytest.fixture(autouse=True)
def default_redaction():
    redact.configure()
    yield
    redact.configure()


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def vault_bytes(root: Path) -> bytes:
    """Every file of the vault, .memvault/ and .git/ included, concatenated."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_every_kind_of_the_test_set_is_caught():
    cases = samples()
    assert len({kind for kind, _, _ in cases}) >= 20
    for kind, text, secret in cases:
        clean = redact.redact(text)
        assert secret not in clean, f"{kind} not caught: {clean}"
        assert "[redacted: " in clean


def test_the_marker_names_the_kind_and_keeps_the_sentence():
    text = f"here is my github token {TOKEN} and my password is hunter2, please keep them"
    assert redact.redact(text) == ("here is my github token [redacted: github-token] and my password is "
                                   "[redacted: password], please keep them")


@pytest.mark.parametrize("text", [
    "The secret is patience.", "My password is strong.", "Her PIN is the same as mine.",
    "I took the token ring to the workshop.", "Call me at 555-0134 tomorrow at 10:30.",
    "See https://example.com/a/b?c=d for the recipe.", "I skipped 3 AKIA meetings",
])
def test_everyday_sentences_are_left_alone(text):
    assert redact.redact(text) == text


def test_no_locomo_turn_is_redacted():
    path = next((p for p in LOCOMO if p.is_file()), None)
    if path is None:
        pytest.skip("LoCoMo is not beside this checkout")
    turns = [turn["text"] for sample in json.loads(path.read_text(encoding="utf-8"))
             for key, session in sample["conversation"].items() if key.startswith("session_")
             and isinstance(session, list) for turn in session]
    assert len(turns) == 5882
    flagged = [(t, f) for t in turns for f in redact.active().find(t)]
    assert flagged == []


def test_the_vendored_rules_are_detect_secrets_own():
    """The copies in redact.py are the installed detect-secrets' regular expressions, plugin by plugin."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    by_name = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    for name, kind, pattern, *flags in DETECT_SECRETS:
        theirs = {(r.pattern, bool(r.flags & re.IGNORECASE)) for r in by_name[name].denylist}
        assert (pattern, bool(flags)) in theirs, f"{name}: {pattern} is not detect-secrets' own"
        assert kind == re.sub(r"[^a-z0-9]+", "-", by_name[name].secret_type.lower()).strip("-")


def test_facts_turns_rules_core_journal_and_state_files_keep_only_the_marker(memvault):
    said = f"my token is {TOKEN}"
    memvault.add_verbatim(said, conversation="c1")
    memvault.add_verbatim(said, conversation="c1", role="user")
    memvault.write_turns([Entry(text=said, role="user", conversation_id="c1")])
    memvault.add_rule(f"always sign requests with {TOKEN}", conversation="c1")
    memvault.update_core("USER", f"# User\n\nDeploys with {TOKEN}.\n")
    with memvault.vault.transaction("journal", "test journal") as tx:
        tx.write_file(Path("journal/2026-11-26.md"), f"# 2026-11-26\n\n- used {TOKEN}\n")
    memvault.scratchpad("c1").write("key", said)
    buffer = memvault.session_buffer
    record = buffer.read("c1")
    buffer.append_held(record, [{"text": said}])
    everything = vault_bytes(memvault.vault.root)
    assert TOKEN.encode() not in everything
    assert everything.count(b"[redacted: github-token]") >= 7
    listed = [e.text for _, e in memvault.list(conversation="c1").entries]
    assert "my token is [redacted: github-token]" in listed


def test_an_exact_import_holding_a_secret_is_rendered_anew(memvault):
    entry = Entry(text=f"old key {TOKEN}", role="user", conversation_id="imp")
    data = f"---\nid: {entry.id}\nrole: user\n---\nold key {TOKEN}\n".encode()
    rel = Path("entries/imp/turns/user") / f"20260101T000000000Z__{entry.id}.md"
    with memvault.vault.transaction("import", "test import") as tx:
        tx.write_exact(rel, data, entry)
    text = (memvault.vault.root / rel).read_text()
    assert TOKEN not in text and "old key [redacted: github-token]" in text


def test_settings_turn_redaction_off_or_allow_a_value(tmp_path):
    settings = settings_module.load(None, {"vault.path": str(tmp_path / "v"), "redaction.enabled": "false"})
    m = Memvault.open(settings, create=True)
    try:
        m.add_verbatim(f"kept {TOKEN}")
        assert TOKEN.encode() in vault_bytes(m.vault.root)
    finally:
        m.close()
    settings = settings_module.load(None, {"vault.path": str(tmp_path / "w"), "redaction.allow": "ghp_Zq7.*"})
    m = Memvault.open(settings, create=True)
    try:
        m.add_verbatim(f"allowed {TOKEN}, not {TOKEN.replace('Zq7', 'Zq8')}")
        text = next(e.text for _, e in m.list().entries)
        assert text == f"allowed {TOKEN}, not [redacted: github-token]"
    finally:
        m.close()
    settings = settings_module.load(None, {"vault.path": str(tmp_path / "x"), "redaction.allow": "(unclosed"})
    with pytest.raises(ConfigError, match="redaction.allow is not a regular expression"):
        Memvault.open(settings, create=True)


def test_vault_delete_setting_takes_soft_or_erase(tmp_path):
    assert settings_module.load(None, {"vault.delete": "erase"}).vault.delete == "erase"
    with pytest.raises(ConfigError, match="vault.delete must be one of soft, erase"):
        settings_module.load(None, {"vault.delete": "shred"})


def test_git_never_saw_the_secret(memvault):
    memvault.add_verbatim(f"token {TOKEN}")
    log = subprocess.run(["git", "-C", str(memvault.vault.root), "log", "--all", "-p"], capture_output=True,
                         text=True, check=True).stdout
    assert "[redacted: github-token]" in log and TOKEN not in log


@pytest.mark.timeout(300)
def test_the_proxy_sends_the_original_upstream_and_keeps_the_marker(tmp_path):
    """The user chose to send the token to their LLM: it goes there as sent. What memvault keeps is redacted."""
    import httpx

    from memvault.server.run import running
    from tests.support.server import server_settings
    from tests.support.upstream import Upstream, serving

    said = f"here is my github token {TOKEN} and my password is hunter2, please keep them"
    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(tmp_path / "vault", root + "/v1", model="openai/fake", llm_key="k")
        with running(settings) as base:
            reply = httpx.post(base + "/v1/chat/completions", timeout=60, json={
                "model": "fake", "memory_id": "keys", "messages": [{"role": "user", "content": said}]})
            assert reply.status_code == 200, reply.text
    assert said in upstream.chat_requests()[0]["messages"][-1]["content"]  # the original went upstream
    turn = next(p for p in (tmp_path / "vault/entries").rglob("*.md") if "/turns/user/" in p.as_posix()).read_text()
    assert "here is my github token [redacted: github-token] and my password is [redacted: password]" in turn
    everything = vault_bytes(tmp_path / "vault")
    assert TOKEN.encode() not in everything and b"hunter2" not in everything
