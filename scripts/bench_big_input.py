"""What one huge input costs: a 20 MB memory through the Python API and through the REST API.

    python scripts/bench_big_input.py [--code DIR] [--megabytes 20]

Each case runs in a fresh process (its own HOME and vault) so its peak memory is its own:
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
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.megabytes} MB of text; code {args.code}")
    for name, case in (("api", api_case), ("rest", rest_case)):
        result = case(args.code.resolve(), args.megabytes)
        print(f"{name:5} {result['outcome'][:70]:70} {result['seconds']:7.1f} s  peak {result['peak_mb']:8.0f} MB")


if __name__ == "__main__":
    main()
