"""Who may use the server: loopback by default, a key for anything else, the key on every request,
and which key the LLM gets when the server has its own."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from memvault.errors import ConfigError
from memvault.server.auth import check_bind, is_loopback, upstream_key
from memvault.server.run import running
from tests.support.cli import Cli
from tests.support.server import server_settings
from tests.support.upstream import Upstream, serving

pytestmark = pytest.mark.timeout(300)
KEY = "s3cret-key"


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                                ("[::1]", True), ("localhost", True), ("0.0.0.0", False),
                                                ("::", False), ("192.168.1.5", False), ("example.com", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_binding_beyond_loopback_needs_a_key():
    with pytest.raises(ConfigError, match="refusing to bind 0.0.0.0 without an API key"):
        check_bind("0.0.0.0", "")
    check_bind("0.0.0.0", KEY)
    check_bind("127.0.0.1", "")


def test_serve_refuses_0_0_0_0_without_a_key_in_one_line(tmp_path):
    result = Cli(tmp_path / "vault")("serve", "--host", "0.0.0.0", "--port", "0")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("memvault: error: refusing to bind 0.0.0.0") and "MEMVAULT_API_KEY" in lines[-1]


def test_upstream_key_rules():
    client = {"authorization": "Bearer client"}
    assert upstream_key(client, "", "") == "client"  # no server key: passed through
    assert upstream_key(client, "client", "configured") == "configured"  # the server's own key stays here
    assert upstream_key(client, "client", "") is None  # litellm then reads the provider's variable
    both = {**client, "x-upstream-authorization": "Bearer explicit"}
    assert upstream_key(both, "client", "configured") == "explicit"
    assert upstream_key({}, "", "configured") == "configured"


def test_every_request_needs_the_key(tmp_path):
    with running(server_settings(tmp_path / "vault", api_key=KEY)) as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-API-Key": KEY + "x"}, {"Authorization": KEY[:-1]}):
            for path in ("/health", "/v1/memories/?user_id=u", "/v1/models", "/openapi.json"):
                reply = httpx.get(url + path, headers=headers, timeout=60)
                assert reply.status_code == 401, (path, headers)
                assert reply.json()["error"]["code"] == "invalid_api_key"
        assert httpx.get(url + "/health", headers={"Authorization": f"Bearer {KEY}"}, timeout=60).status_code == 200
        assert httpx.get(url + "/health", headers={"X-API-Key": KEY}, timeout=60).status_code == 200


def test_with_a_server_key_the_llm_gets_its_own_key(tmp_path):
    import openai

    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(tmp_path / "vault", api_base=root + "/v1", api_key=KEY, llm_key="configured-llm-key")
        with running(settings) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0, timeout=120)
            client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}])
            assert upstream.requests[-1]["headers"]["authorization"] == "Bearer configured-llm-key"
            client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hi"}],
                                           extra_headers={"X-Upstream-Authorization": "Bearer per-request"})
            assert upstream.requests[-1]["headers"]["authorization"] == "Bearer per-request"
            client.models.list()
            assert upstream.requests[-1]["headers"]["authorization"] == "Bearer configured-llm-key"
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=url + "/v1", api_key="guess", max_retries=0).models.list()
    assert all(KEY not in str(r["headers"]) for r in upstream.requests)  # the server's key never leaves


@pytest.mark.slow
def test_memvault_serve_runs_and_stops_cleanly_on_ctrl_c(tmp_path):
    env = {**os.environ, "MEMVAULT_VAULT": str(tmp_path / "vault")}
    proc = subprocess.Popen([sys.executable, "-m", "memvault", "serve", "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)
    reader.start()
    try:
        url, seen = None, []
        deadline = time.monotonic() + 240
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                continue
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/v1", seen[-1], re.IGNORECASE)
            url = found.group(1) if found else None
        assert url, f"the server did not report its address: {seen}"
        assert httpx.get(url + "/health", timeout=240).json()["status"] == "ok"  # answered once started
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        reader.join(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rest = "".join(list(lines.queue))
    assert proc.returncode == 0, rest
    assert "server stopped" in rest and "Traceback" not in rest
