"""How steady is this machine? The same small pure-Python workload, timed many times.

On a shared VM the hypervisor steals the CPU now and then; a workload of fixed size then takes tens
of times longer. Benchmarks print this probe beside their latency percentiles so a reader can tell
the program's tail from the machine's.
"""

from __future__ import annotations

import time


def workload() -> int:
    total = 0
    for i in range(150_000):  # about 10 ms on one core of this machine when nothing interferes
        total += i
    return total


def probe(runs: int = 200) -> str:
    """'p50 / p95 / max ms' of the fixed workload."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        workload()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return f"{times[len(times) // 2]:.0f} / {times[int(0.95 * (len(times) - 1))]:.0f} / {times[-1]:.0f} ms"
