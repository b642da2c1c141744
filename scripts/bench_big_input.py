"""What one huge input costs: a 20 MB memory through the Python API and through the REST API.

    python scripts/bench_big_input.py [--code DIR] [--megabytes 20] [--cases cli api rest]

Each case runs in a fresh process (its own HOME and vault) so its peak memory is its own:
- cli:  `memvault add --no-llm -` with the text on standard input (the person's door; the vault made
        by `memvault init` first, not timed);
- api:  `Memory.add(text, infer=False)`, which embeds at once as a long-lived process does;
- rest: `memvault serve` receiving `POST /v1/memories/` with the text; the server's peak (VmHWM).
`--code` points at another checkout (e.g. an older commit in a git worktree) to compare before/after.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

API_CASE = """
import json, resource, sys, time
from memvault import Memory
text = ("lorem ipsum dolor sit amet " * (int(sys.argv[2]) * 40_000))[: int(sys.argv[2]) * 1_000_000]
memory = Memory(vault=sys.argv[1])
started = time.perf_counter()
try:
    memory.add(text, user_id="alice", infer=False)
    outcome = "stored"
except Exception as exc:  # the cap refuses it: that is the outcome we measure
    outcome = f"refused: {str(exc)[:100]}"
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - started,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def environment(code: Path, home: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code), "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_DATA_HOME": f"{home}/.local/share", "XDG_CACHE_HOME": f"{home}/.cache"}


def api_case(code: Path, megabytes: int) -> dict:
    home = tempfile.mkdtemp()
    done = subprocess.run([sys.executable, "-c", API_CASE, f"{home}/vault", str(megabytes)], cwd=home,
                          env=environment(code, home), capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cli_case(code: Path, megabytes: int) -> dict:
    home = tempfile.mkdtemp()
    env = environment(code, home)
    vault = f"{home}/vault"
    subprocess.run([sys.executable, "-m", "memvault", "init", "--vault", vault], cwd=home, env=env,
                   capture_output=True, check=True)
    text = ("lorem ipsum dolor sit amet " * (megabytes * 40_000))[: megabytes * 1_000_000]
    timer = "import resource, subprocess, sys, time; started = time.perf_counter(); " \
            "done = subprocess.run(sys.argv[1:], stdin=sys.stdin); " \
            "print(done.returncode, time.perf_counter() - started, " \
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
    done = subprocess.run([sys.executable, "-c", timer, sys.executable, "-m", "memvault", "add", "--vault", vault,
                           "--no-llm", "-q", "-"], input=text, text=True, cwd=home, env=env, capture_output=True,
                          check=True)
    code_, seconds, peak = done.stdout.split()[-3:]
    return {"outcome": "stored" if code_ == "0" else f"exit {code_}", "seconds": float(seconds),
            "peak_mb": float(peak)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rest_case(code: Path, megabytes: int) -> dict:
    import httpx

    home = tempfile.mkdtemp()
    port = free_port()
    env = environment(code, home)
    server = subprocess.Popen([sys.executable, "-m", "memvault", "serve", "--vault", f"{home}/vault", "--port",
                               str(port)], cwd=home, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                httpx.get(f"{url}/health", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        text = ("lorem ipsum dolor sit amet " * (megabytes * 40_000))[: megabytes * 1_000_000]
        started = time.perf_counter()
        reply = httpx.post(f"{url}/v1/memories/", json={"messages": text, "user_id": "alice", "infer": False},
                           timeout=900)
        return {"outcome": f"HTTP {reply.status_code}", "seconds": time.perf_counter() - started,
                "peak_mb": peak_mb(server.pid)}
    finally:
        server.terminate()
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose memvault is measured")
    parser.add_argument("--megabytes", type=int, default=20)
    parser.add_argument("--cases", nargs="+", default=["cli", "api", "rest"], choices=["cli", "api", "rest"])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.megabytes} MB of text; code {args.code}")
    parser_cases = {"cli": cli_case, "api": api_case, "rest": rest_case}
    for name in args.cases:
        case = parser_cases[name]
        result = case(args.code.resolve(), args.megabytes)
        print(f"{name:5} {result['outcome'][:70]:70} {result['seconds']:7.1f} s  peak {result['peak_mb']:8.0f} MB")


if __name__ == "__main__":
    main()
