"""Drive the CLI in-process (CliRunner) or as a real subprocess, against a temporary vault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


class Cli:
    """`cli("add", "text")` runs `memvault add text --vault <tmp vault>` in-process."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None, env: dict | None = None) -> Result:
        from memvault.cli.app import app

        result = self.runner.invoke(app, [*args, "--vault", str(self.vault)] if args and args[0] not in ("--help",)
                                    else list(args), input=input, env=env, catch_exceptions=False)
        return Result(result.exit_code, result.stdout, result.stderr)

    def ok(self, *args: str, **kw) -> Result:
        result = self(*args, **kw)
        assert result.exit_code == 0, f"{args} exited {result.exit_code}: {result.stderr}"
        return result


def initialised(vault: Path) -> Cli:
    """A Cli on a vault `memvault init` has just made."""
    cli = Cli(vault)
    cli.ok("init")
    return cli


def run_memvault(*args: str, cwd: Path | None = None, input: bytes | None = None, timeout: float = 60,
                 env: dict | None = None) -> subprocess.CompletedProcess:
    """A real `python -m memvault` process, with the test's environment."""
    return subprocess.run([sys.executable, "-m", "memvault", *args], cwd=cwd, input=input, capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def killed_after(args: list[str], marker: Path, delay: float) -> bool:
    """A real `python -m memvault ARGS` process in a session of its own, killed with its whole process
    group (SIGKILL) `delay` seconds after `marker` appears; False when it ended first."""
    import signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "memvault", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 180
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=120)
    return killed
