"""Crashing memvault on purpose: real `memvault serve` processes killed with SIGKILL, a fake LLM
that curates (one fact per user message) on loopback, and the checks that follow a crash.

    upstream = FactUpstream()                         # /v1/chat/completions: "ok", or a fact list
    with serving(upstream.app()) as root:
        server = ServeProcess(vault, root + "/v1")    # `python -m memvault serve` on a free port
        server.url ... server.kill()                  # SIGKILL: nothing runs after it
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.upstream import instant_completion, instant_stream

EXTRACTION_MARK = "You extract long-term memories"
LATEST_MARK = "Latest user message (extract from this only):"


class FactUpstream:
    """An OpenAI-shaped LLM for curation: the extraction prompt gets `["The user said: <message>."]`,
    every other request "ok" (reconciliation then falls back to adding the fact, as designed).
    `delay` seconds are spent before answering an extraction (to catch curation in flight)."""

    def __init__(self, delay: float = 0.0, slow_answer: float = 0.0) -> None:
        self.delay = delay
        self.slow_answer = slow_answer  # seconds before answering a message that says "SLOW" (stopped mid-answer)
        self.extractions = 0
        self.slow_asked = 0

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def handle(request):
            body = json.loads(await request.body() or b"{}")
            prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
            reply = instant_completion()
            if EXTRACTION_MARK in prompt:
                self.extractions += 1
                if self.delay:
                    await asyncio.sleep(self.delay)
                message = prompt.split(LATEST_MARK, 1)[-1].strip()
                reply["choices"][0]["message"]["content"] = json.dumps([f"The user said: {message}."])
            elif "SLOW" in prompt and self.slow_answer and body.get("stream"):  # the answer, not its curation
                self.slow_asked += 1
                await asyncio.sleep(self.slow_answer)
            if body.get("stream"):  # `memvault chat` streams its answers
                return StreamingResponse(instant_stream(), media_type="text/event-stream")
            return JSONResponse(reply)

        return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "POST"])])


class ServeProcess:
    """`python -m memvault serve` in its own process (so it can be SIGKILLed), on a free port."""

    def __init__(self, vault: Path, api_base: str = "", model: str = "openai/fake", timeout: float = 120.0) -> None:
        env = {**os.environ, "MEMVAULT_LLM_API_BASE": api_base, "MEMVAULT_LLM_MODEL": model if api_base else "",
               "MEMVAULT_LLM_API_KEY": "upstream-key", "MEMVAULT_LLM_MAX_RETRIES": "0"}
        # The log goes to a file: a pipe nobody reads fills up and then blocks the server mid-request.
        self.log_path = Path(vault).parent / f"serve-{time.monotonic_ns()}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            # A process group of its own, as a terminal's job or a service has: `stop_group` signals all of it.
            self.process = subprocess.Popen([sys.executable, "-m", "memvault", "serve", "--vault", str(vault),
                                             "--port", "0"], env=env, stdout=subprocess.DEVNULL, stderr=log,
                                            start_new_session=True)
        self.url = self._wait_for_url(timeout)
        self._wait_healthy(timeout)

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _wait_for_url(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.process.poll() is None:
            found = re.search(r"listening on (http://\S+)/v1", self.text())
            if found:
                return found.group(1)
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("memvault serve did not start:\n" + self.text())

    def _wait_healthy(self, timeout: float) -> None:
        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("memvault serve exited:\n" + self.text())
            try:
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError("memvault serve never answered /health")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup (what a crash or the OOM killer does)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> str:
        """A clean stop (SIGINT, as Ctrl-C); returns what the server logged."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        return self.text()

    def stop_group(self, sig: int, times: int = 1, timeout: float = 300.0) -> float:
        """Send `sig` to the server's whole process group `times` times, half a second apart (Ctrl-C in a
        terminal, a service manager's stop; twice: a person who will not wait); the seconds it took to exit
        (SIGKILL after `timeout`, and then the seconds are `timeout`)."""
        started = time.monotonic()
        for n in range(times):
            if n:
                time.sleep(0.5)
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return timeout
        return time.monotonic() - started

    def chat(self, text: str, conversation: str = "torture", timeout: float = 60.0) -> Any:
        """One chat turn through the proxy; the httpx response."""
        import httpx

        return httpx.post(self.url + "/v1/chat/completions", timeout=timeout,
                          json={"model": "fake", "messages": [{"role": "user", "content": text}],
                                "memory_id": conversation})


def git(vault: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=check).stdout


def memvault_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memvault", *args], capture_output=True, text=True, timeout=timeout)


def indexed_ids(vault: Path) -> set[str]:
    """Ids in the index file, read without memvault (which would finish an interrupted build first)."""
    import apsw

    path = vault / ".memvault" / "index.sqlite"
    if not path.exists():
        return set()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM entries")}
    finally:
        conn.close()


def kill_when_ready(script: str, *args: str, ready: str) -> None:
    """Run `script` (Python source) in a child with this checkout on its path, wait for it to print
    `ready`, then SIGKILL it: a crash at a known instant."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout.readline().decode().strip() == ready, proc.stderr.read().decode()[-2000:]
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
