"""`memvault chat` in a real terminal (tmux): Ctrl-C during a slow streamed answer stops it and keeps the
user's message; Ctrl-C at the prompt clears the line; Ctrl-D leaves cleanly. The model is a fake
OpenAI-compatible server on loopback that streams a word every 0.2 s for two minutes."""

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

from tests.support.cli import run_memvault
from tests.support.upstream import serving

NO_TERMINAL = shutil.which("tmux") is None or shutil.which("bash") is None
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300),
              pytest.mark.skipif(NO_TERMINAL, reason="tmux (or bash) is not installed (apt-get install tmux): "
                                 "the terminal test of chat's Ctrl-C needs a real terminal")]
MESSAGE = "My name is Bruno and I keep bees in Coimbra"


class SlowModel:
    """Streams "bla " forever (well, two minutes); answers a non-streamed (curation) call with []."""

    def __init__(self) -> None:
        self.asked: list[str] = []  # the last user message of each streamed request

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def handle(request):
            body = await request.json()
            if not body.get("stream"):
                return JSONResponse(completion({"role": "assistant", "content": "[]"}, "stop", "chat.completion"))
            self.asked.append(body["messages"][-1]["content"])

            async def words():
                for _ in range(600):
                    chunk = completion({"role": "assistant", "content": "bla "}, None, "chat.completion.chunk")
                    yield f"data: {json.dumps(chunk)}\n\n".encode()
                    await asyncio.sleep(0.2)

            return StreamingResponse(words(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", handle, methods=["POST"])])


def completion(message: dict, finish: str | None, kind: str) -> dict:
    key = "delta" if kind.endswith("chunk") else "message"
    return {"id": "chatcmpl-slow", "object": kind, "created": int(time.time()), "model": "slow",
            "choices": [{"index": 0, key: message, "finish_reason": finish}]}


class Terminal:
    """One tmux session on a private server socket (so no other tmux is touched)."""

    def __init__(self, tmp_path) -> None:
        self.socket = f"memvault-test-{uuid.uuid4().hex[:8]}"
        self.tmp = tmp_path

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30,
                              check=True).stdout

    def start(self, command: list[str], env: dict[str, str]) -> None:
        script = self.tmp / "run.sh"
        kept = {k: v for k, v in {**os.environ, **env}.items()
                if k.isidentifier() and k not in ("TERM", "TMUX", "TMUX_PANE", "COLUMNS", "LINES")}
        script.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in kept.items())
                          + f"{shlex.join(command)}\necho $? > {shlex.quote(str(self.tmp / 'rc'))}\nsleep 60\n")
        # bash, not dash: bash survives a Ctrl-C its child handled (dash exits, and the exit code is lost)
        self.tmux("new-session", "-d", "-s", "chat", "-x", "160", "-y", "50", f"bash {shlex.quote(str(script))}")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "chat", "-S", "-200")

    def wait_for(self, text: str, timeout: float = 90, times: int = 1) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if screen.count(text) >= times:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "chat", *keys)

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def terminal(tmp_path):
    term = Terminal(tmp_path)
    yield term
    term.stop()


def test_ctrl_c_stops_the_answer_and_keeps_the_message(tmp_path, terminal):
    vault = tmp_path / "vault"
    assert run_memvault("init", "--vault", str(vault)).returncode == 0
    model = SlowModel()
    with serving(model.app()) as root:
        terminal.start([sys.executable, "-m", "memvault", "chat", "--vault", str(vault)],
                       {"MEMVAULT_LLM_MODEL": "openai/slow", "MEMVAULT_LLM_API_BASE": root + "/v1",
                        "MEMVAULT_LLM_MAX_RETRIES": "0"})
        terminal.wait_for("you>")
        terminal.keys(MESSAGE, "Enter")
        terminal.wait_for("bla bla bla")
        terminal.keys("C-c")
        terminal.wait_for("answer interrupted")
        terminal.wait_for("you>", times=2)  # the message is stored: the prompt is back
        terminal.keys("half typed line", "C-c")  # Ctrl-C at the prompt clears the line
        time.sleep(0.5)
        terminal.keys("C-d")  # leaves: the session ends, the process exits 0
        deadline = time.monotonic() + 90
        while not (tmp_path / "rc").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "rc").read_text().strip() == "0", terminal.screen()
    assert model.asked == [MESSAGE] or model.asked[0].endswith(MESSAGE)  # "half typed line" never sent
    assert len(model.asked) == 1
    listed = run_memvault("list", "--json", "--vault", str(vault))
    stored = {(e["role"], e["text"]) for e in json.loads(listed.stdout)}
    assert ("user", MESSAGE) in stored
    assert not any(role == "assistant" for role, _ in stored)  # the cut answer is not stored
    assert not any("half typed" in text for _, text in stored)
    history = vault / ".memvault" / "chat_history"  # prompt_toolkit's line history: the owner's eyes only
    assert MESSAGE in history.read_text() and history.stat().st_mode & 0o777 == 0o600
