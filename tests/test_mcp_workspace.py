"""The workspace through MCP, with the real `mcp` client SDK: scratchpad_* and read_core/update_core
tools, the core resources, the with-memory prompt's core section, over stdio (a real `memvault mcp`
child) and streamable HTTP; the stdio session's scratchpad is gone once the client leaves."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.support.server import isolated_env
from tests.test_mcp import failed, http_server, ok, stdio_server, stdio_session, subjects

pytestmark = pytest.mark.timeout(300)
USER_TEXT = "Alice Moreau is a marine biologist in Lisbon; she likes short answers."


@pytest.fixture(scope="module")
def stdio(tmp_path_factory):
    yield from stdio_server(tmp_path_factory, "mcp-ws-stdio")


@pytest.fixture(scope="module")
def http(tmp_path_factory):
    yield from http_server(tmp_path_factory, "mcp-ws-http")


@pytest.fixture(params=["stdio", "http"])
def mcp(request):
    return request.getfixturevalue(request.param)


def test_scratchpad_tools(mcp):
    wrote = ok(mcp.live.call("scratchpad_write", key="plan", value="1. trains 2. hotels", conversation="trip"))
    assert wrote == {"conversation": "trip", "keys": ["plan"]}
    ok(mcp.live.call("scratchpad_write", key="open", value="which rail pass?", conversation="trip"))
    assert ok(mcp.live.call("scratchpad_read", key="plan", conversation="trip"))["value"] == "1. trains 2. hotels"
    assert ok(mcp.live.call("scratchpad_list", conversation="trip"))["items"] == {
        "plan": "1. trains 2. hotels", "open": "which rail pass?"}
    # Scopes imply the conversation, as for memories: alice's pad is not the trip's.
    assert ok(mcp.live.call("scratchpad_list", user_id="alice"))["items"] == {}
    assert "no scratchpad key 'nope'" in failed(mcp.live.call("scratchpad_read", key="nope", conversation="trip"))
    assert "invalid conversation id" in failed(mcp.live.call("scratchpad_list", conversation="a\tb"))
    assert "more than 8,000" in failed(mcp.live.call("scratchpad_write", key="k", value="x" * 9000))
    pad = mcp.vault / ".memvault" / "session" / "trip" / "scratchpad.json"
    assert pad.is_file()
    assert subprocess.run(["git", "-C", str(mcp.vault), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == ""  # never committed


def test_read_and_update_core_and_the_core_resources(mcp):
    files = ok(mcp.live.call("read_core"))["files"]
    assert [f["name"] for f in files] == ["USER.md", "IDENTITY.md", "SOUL.md", "MEMORY.md"]
    assert all(f["text"] == "" for f in files)  # created empty but explained by the server's start
    saved = ok(mcp.live.call("update_core", name="USER", text=USER_TEXT))
    assert saved == {"path": "core/USER.md", "changed": True}
    assert subjects(mcp.vault)[0].startswith("memvault core: edit USER.md: Alice Moreau")
    assert ok(mcp.live.call("read_core", name="USER"))["files"][0]["text"] == USER_TEXT
    resource = mcp.live.run(lambda s: s.read_resource("memvault://core/USER.md"))
    assert resource.contents[0].text == USER_TEXT + "\n"
    assert "<!-- SOUL.md" in mcp.live.run(lambda s: s.read_resource("memvault://core/SOUL.md")).contents[0].text
    assert mcp.live.call("update_core", name="../../etc/passwd", text="x").is_error  # the schema refuses it
    assert "NUL character" in failed(mcp.live.call("update_core", name="USER", text="a\x00b"))
    assert ok(mcp.live.call("update_core", name="USER", text=USER_TEXT))["changed"] is False
    prompt = mcp.live.run(lambda s: s.get_prompt("with-memory", {"message": "Who am I?"}))
    text = prompt.messages[0].content.text
    assert text.startswith(f"Core memory:\n## USER.md\n{USER_TEXT}") and text.endswith("Current message: Who am I?")
    found = ok(mcp.live.call("recall", query="marine biologist in Lisbon"))["results"]
    assert found and found[0]["role"] == "core"  # indexed: search finds it


def test_a_stdio_sessions_scratchpad_is_cleared_when_the_client_leaves(tmp_path):
    vault = tmp_path / "vault"
    with isolated_env(tmp_path / "home"):
        live = stdio_session(vault)
        try:
            ok(live.call("scratchpad_write", key="draft", value="half a thought", conversation="work"))
            pad = vault / ".memvault" / "session" / "work" / "scratchpad.json"
            assert pad.is_file()
        finally:
            live.close()
    deadline = time.monotonic() + 30
    while pad.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pad.exists()
