"""How long `memvault add --no-llm` takes as the vault grows: 100, 10,000 and 100,000 memories.

    python scripts/bench_add.py [--sizes 100,10000,100000] [--repeat 10]

For each size it builds a synthetic vault (scripts/synth_vault.py), then times:
- in-process: Memvault.add_verbatim (files + git commit; what the library and server pay),
- a real `memvault add --no-llm` process start to finish (what a shell user pays; no model loads),
  with the CPU its git processes used (user + sys: far less sensitive to other load than wall time)
  and how many git processes one add starts (GIT_TRACE).
The load average (1 min, 2 cores) is printed beside every row: other work on the machine skews them.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_vault import make  # noqa: E402

from memvault import settings  # noqa: E402
from memvault.core import Memvault  # noqa: E402


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,10000,100000")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x"}
    print(f"{'memories':>9} {'in-process p50':>15} {'p95':>8} {'CLI process p50':>16} {'p95':>8} "
          f"{'git CPU p50':>12} {'git runs':>9}  load")
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "vault"
            make(path, size)
            memvault = Memvault.open(settings.load(None, {"vault.path": str(path)}))
            inproc = [timed(lambda i=i: memvault.add_verbatim(f"benchmark memory {i}")) for i in range(args.repeat)]
            cmd = [sys.executable, "-m", "memvault", "add", "benchmark via the CLI", "--no-llm", "--vault", str(path)]
            procs = [timed(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env))
                     for _ in range(args.repeat)]
            git_cpu = [git_seconds(memvault, f"benchmark memory {i} (git CPU)") for i in range(args.repeat)]
            runs = git_runs(cmd, env, Path(tmp) / "trace")
        print(f"{size:>9} {p(inproc, 50):>14.3f}s {p(inproc, 95):>7.3f}s {p(procs, 50):>15.3f}s {p(procs, 95):>7.3f}s "
              f"{p(git_cpu, 50):>11.3f}s {runs:>9}  {os.getloadavg()[0]:.2f}", flush=True)


def git_seconds(memvault: Memvault, text: str) -> float:
    """CPU seconds (user + sys) of the git processes one in-process add ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    memvault.add_verbatim(text)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def git_runs(cmd: list[str], env: dict, trace: Path) -> int:
    """How many git commands one `memvault add` process runs (a forked helper, such as gc --auto, counts)."""
    subprocess.run(cmd, check=True, capture_output=True, env={**env, "GIT_TRACE": str(trace)})
    lines = trace.read_text(encoding="utf-8", errors="replace").splitlines()
    return sum(1 for line in lines if "built-in: git" in line)


def p(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] if ordered else float("nan")


if __name__ == "__main__":
    main()
