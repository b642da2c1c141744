"""Settings and environment for tests that share one memvault server across a module.

conftest's isolation (HOME, XDG, no git identity) is per test, but a module-scoped server starts
before the first test's isolation and its vault remembers the git identity it saw first. So
module-scoped servers are started inside `isolated_env`, the same isolation for the whole module.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memvault.settings import Settings


def isolate(mp: pytest.MonkeyPatch, home: Path) -> None:
    """Point HOME and the XDG folders at `home`, drop MEMVAULT_* and GIT_* variables, and leave git
    without a global identity (memvault must cope on its own); nothing reaches the network."""
    mp.setenv("HOME", str(home))
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        mp.setenv(var, str(home / sub))
    for var in list(os.environ):
        if var.startswith("MEMVAULT_") or var.startswith("GIT_"):
            mp.delenv(var, raising=False)
    mp.setenv("GIT_CONFIG_GLOBAL", str(home / "no-gitconfig"))
    mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
    mp.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    mp.setenv("HF_HUB_OFFLINE", "1")


@contextmanager
def isolated_env(home: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        isolate(mp, home)
        yield


def server_settings(vault: Path, api_base: str = "", model: str = "", api_key: str = "", llm_key: str = "",
                    allow_reset: bool = False) -> Settings:
    """Settings for a test server on a free loopback port (no file, no environment)."""
    settings = Settings()
    settings.vault.path = str(vault)
    settings.llm.api_base = api_base
    settings.llm.model = model
    settings.llm.api_key = llm_key
    settings.server.port = 0
    settings.server.api_key = api_key
    settings.server.allow_reset = allow_reset
    return settings


@contextmanager
def memvault_serve(vault: Path, env: dict[str, str]) -> Iterator[str]:
    """`memvault serve --port 0` as a process; yields its base URL, stops it with Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-m", "memvault", "serve", "--port", "0", "--vault", str(vault)],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        url, deadline = None, time.monotonic() + 240
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/v1", lines.get(timeout=1))
            except queue.Empty:
                continue
            url = found.group(1) if found else None
        assert url, "memvault serve did not report its address: " + "".join(lines.queue)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
