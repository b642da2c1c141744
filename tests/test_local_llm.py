"""The harness behind the end-to-end tests (tests/support/local_llm.py): the shared server serves the
model on loopback, a model that cannot load is a clear error, and no server process outlives its block.

What the model server, openai and litellm do with requests is theirs to test; memvault's use of them
is tested end to end (test_e2e_local_llm.py, test_server_proxy.py).
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from tests.support.local_llm import MODEL_NAME, LocalLLMUnavailable, local_llm_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def _llm_children() -> list[int]:
    """Pids of this process's live children that run the local LLM server."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"local_llm.py" in cmdline:
            found.append(int(proc.name))
    return found


def test_server_is_healthy_and_serves_the_model(local_llm):
    root = local_llm.removesuffix("/v1")
    with urllib.request.urlopen(root + "/health", timeout=10) as reply:
        assert reply.status == 200
    with urllib.request.urlopen(local_llm + "/models", timeout=10) as reply:
        ids = [m["id"] for m in json.load(reply)["data"]]
    assert MODEL_NAME in ids
    assert root.startswith("http://127.0.0.1:")


def test_a_broken_model_fails_with_the_servers_log_and_leaves_no_process(tmp_path):
    before = set(_llm_children())
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(LocalLLMUnavailable, match="did not start|exited"):
        with local_llm_server(model=broken, timeout=60):
            pass
    assert set(_llm_children()) - before == set()


def test_leaving_the_block_stops_the_server():
    # The one test that loads the model a second time (a small context: seconds): only a server of its
    # own can show that leaving the block ends the process and frees the port.
    before = set(_llm_children())  # the shared session server may be running: leave it alone
    with local_llm_server(n_ctx=256) as base_url:
        assert set(_llm_children()) - before
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/health", timeout=10) as reply:
            assert reply.status == 200
    assert set(_llm_children()) - before == set()
    with pytest.raises(OSError):
        urllib.request.urlopen(base_url.removesuffix("/v1") + "/health", timeout=5)
