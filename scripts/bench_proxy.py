"""What the memory proxy adds to a chat completion, at 10,000 memories.

    python scripts/bench_proxy.py [--memories 10000] [--clients 4] [--seconds 20] [--max-requests 2000]

A synthetic vault (scripts/synth_vault.py) is indexed first (not timed), then `memvault serve` runs
in its own process on loopback in front of an instant OpenAI-shaped fake LLM (tests/support/upstream.py,
also on loopback). N concurrent clients first call the fake LLM directly (the LLM time), then the
proxy (retrieve + inject + forward + store the turns in one git commit), each phase bounded in time
and count. Overhead, non-streaming: latency - the LLM time the proxy reports for that request
(Server-Timing); streaming: latency - the median of streaming from the LLM directly. Loopback only.
CPU per request: the server process's own CPU time and its git children's (Linux /proc) over each
proxy phase, divided by the requests answered: the figure to compare on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))
from synth_vault import OBJECTS, SUBJECTS, make  # noqa: E402

from tests.support.upstream import Upstream, serving  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def load(url: str, body_for, clients: int, seconds: float, max_requests: int, stream: bool = False):
    """Latencies (s) of requests sent by `clients` concurrent clients until time or count runs out."""
    import httpx

    latencies: list[float] = []
    failures: list[str] = []
    deadline = time.monotonic() + seconds
    issued = 0

    async def client(n: int) -> None:
        nonlocal issued
        async with httpx.AsyncClient(timeout=120, headers={"Authorization": "Bearer bench"}) as http:
            while time.monotonic() < deadline and issued < max_requests:
                issued += 1
                start = time.perf_counter()
                if stream:
                    async with http.stream("POST", url, json=body_for(n)) as reply:
                        async for _ in reply.aiter_bytes():
                            pass
                else:
                    reply = await http.post(url, json=body_for(n))
                elapsed = time.perf_counter() - start
                if reply.status_code == 200:
                    latencies.append((elapsed, server_timing(reply.headers.get("server-timing"))))
                else:
                    failures.append(f"{reply.status_code}")

    await asyncio.gather(*(client(n) for n in range(clients)))
    return latencies, failures


def server_timing(header: str | None) -> dict[str, float]:
    """Seconds per phase (retrieve, llm, store) of a proxied request, from its Server-Timing header."""
    phases = {}
    for part in (header or "").split(","):
        name, _, duration = part.strip().partition(";dur=")
        if duration:
            phases[name] = float(duration) / 1000
    return phases


def cpu_seconds(pid: int) -> tuple[float, float] | None:
    """(own, waited-for children's) CPU seconds of a process, from /proc (None where there is none).
    The children are the git processes the server ran and waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime) / tick, (cutime + cstime) / tick


def start_server(vault: Path, api_base: str) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "MEMVAULT_VAULT": str(vault), "MEMVAULT_LLM_API_BASE": api_base, "MEMVAULT_LLM_MODEL": "",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen([sys.executable, "-m", "memvault", "serve", "--port", "0"], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in proc.stderr:
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)/v1", line, re.IGNORECASE)
        if found:
            # Read the rest (uvicorn's access log) as it comes: a full pipe would stall the server.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found.group(1)
    raise SystemExit("memvault serve did not start")


def row(name: str, values: list[float], seconds: float) -> str:
    if not values:
        return f"{name:<34} {'-':>8} {'-':>8} {'-':>8} {0:>6}"
    return (f"{name:<34} {percentile(values, 0.5) * 1000:>8.1f} {percentile(values, 0.95) * 1000:>8.1f} "
            f"{statistics.fmean(values) * 1000:>8.1f} {len(values):>6} {len(values) / seconds:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--max-requests", type=int, default=2000)
    parser.add_argument("--vault", type=Path, help="Keep the synthetic vault (and its index) here and reuse it "
                        "next time; default: a temporary folder.")
    args = parser.parse_args()
    rng = random.Random(11)

    def plain_body(n: int, stream: bool = False) -> dict:
        return {"model": "fake", "messages": [{"role": "user", "content": "hi"}], "stream": stream}

    def chat_body(n: int, stream: bool = False) -> dict:
        question = f"What do you know about {rng.choice(SUBJECTS)} and {rng.choice(OBJECTS)}?"
        return {"model": "fake", "messages": [{"role": "user", "content": question}],
                "memory_id": f"c{n % 10}", "stream": stream}

    with tempfile.TemporaryDirectory(prefix="memvault-bench-") as tmp:
        vault = args.vault or Path(tmp) / "vault"
        started = time.perf_counter()
        if not (vault / ".git").exists():
            make(vault, args.memories)
            print(f"vault of {args.memories} memories written in {time.perf_counter() - started:.1f} s", flush=True)
        from memvault import settings as settings_module
        from memvault.core import Memvault

        started = time.perf_counter()
        core = Memvault.open(settings_module.load(None, {"vault.path": str(vault)}))
        core.reindex()
        core.close()
        print(f"indexed in {time.perf_counter() - started:.1f} s (not timed below)", flush=True)

        upstream = Upstream()
        with serving(upstream.app()) as root:
            proc, url = start_server(vault, root + "/v1")
            try:
                phases = [
                    ("LLM alone (fake upstream, direct)", root + "/v1/chat/completions", plain_body, False),
                    ("LLM alone, streaming", root + "/v1/chat/completions", lambda n: plain_body(n, True), True),
                    ("proxy, non-streaming", url + "/v1/chat/completions", chat_body, False),
                    ("proxy, streaming", url + "/v1/chat/completions", lambda n: chat_body(n, True), True),
                ]
                import httpx

                httpx.get(url + "/health", timeout=600).raise_for_status()  # started: index caught up
                asyncio.run(load(phases[2][1], chat_body, 1, 120, 3))  # warm-up: litellm's first call, first search
                results, cpu = {}, {}
                for name, target, body, stream in phases:
                    seconds = args.seconds / 2 if name.startswith("LLM") else args.seconds
                    before = (*(cpu_seconds(proc.pid) or ()), time.process_time())
                    timed, failures = asyncio.run(load(target, body, args.clients, seconds, args.max_requests,
                                                       stream))
                    after = (*(cpu_seconds(proc.pid) or ()), time.process_time())
                    results[name] = (timed, seconds)
                    if len(before) == 3 and timed and not name.startswith("LLM"):
                        cpu[name] = [(end - start) / len(timed) for start, end in zip(before, after, strict=True)]
                    if failures:
                        print(f"{name}: {len(failures)} failed ({', '.join(sorted(set(failures)))})")
            finally:
                proc.terminate()
                proc.wait(timeout=120)

    print(f"\n{args.memories} memories, {args.clients} concurrent clients, loopback, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'':<34} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'n':>6} {'req/s':>7}")
    for name, (timed, seconds) in results.items():
        print(row(name, [latency for latency, _ in timed], seconds))
    # Non-streaming: minus the LLM time the proxy measured for that very request (Server-Timing).
    timed, seconds = results["proxy, non-streaming"]
    print(row("overhead: non-streaming", [max(0.0, t - phases.get("llm", 0.0)) for t, phases in timed], seconds))
    for phase in ("retrieve", "store"):
        print(row(f"  of which {phase} (Server-Timing)", [p[phase] for _, p in timed if phase in p], seconds))
    # Streaming: minus the median of the LLM streaming alone.
    stream_p50 = percentile([t for t, _ in results["LLM alone, streaming"][0]] or [0.0], 0.5)
    timed, seconds = results["proxy, streaming"]
    print(row("overhead: streaming (- LLM p50)", [max(0.0, t - stream_p50) for t, _ in timed], seconds))
    for name, (own, children, bench) in cpu.items():
        print(f"CPU per request, {name}: {(own + children) * 1000:.1f} ms (server {own * 1000:.1f}, "
              f"its git children {children * 1000:.1f}); this script (clients, fake LLM) {bench * 1000:.1f} ms")

if __name__ == "__main__":
    main()
