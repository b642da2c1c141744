"""How long `memvault add` (verbatim) takes as the vault grows: 100, 10,000 and 100,000 memories.

    python scripts/bench_add.py [--sizes 100,10000,100000] [--repeat 10]

For each size it builds a synthetic vault (scripts/synth_vault.py), then times:
- in-process: Memvault.add_verbatim (files + git commit; what the library and server pay),
- a real `memvault add` process start to finish (what a shell user pays; no model loads).
"""

from __future__ import annotations

import argparse
import os
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
    print(f"{'memories':>9} {'in-process p50':>15} {'p95':>8} {'CLI process p50':>16} {'p95':>8}")
    for size in [int(s) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "vault"
            make(path, size)
            memvault = Memvault.open(settings.load(None, {"vault.path": str(path)}))
            inproc = [timed(lambda i=i: memvault.add_verbatim(f"benchmark memory {i}")) for i in range(args.repeat)]
            cmd = [sys.executable, "-m", "memvault", "add", "benchmark via the CLI", "--vault", str(path)]
            procs = [timed(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env))
                     for _ in range(args.repeat)]
        print(f"{size:>9} {p(inproc, 50):>14.3f}s {p(inproc, 95):>7.3f}s {p(procs, 50):>15.3f}s {p(procs, 95):>7.3f}s",
              flush=True)


def p(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] if ordered else float("nan")


if __name__ == "__main__":
    main()
