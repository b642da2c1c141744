"""Index and search at scale: synthetic vaults of 10k and 100k memories (scripts/synth_vault.py).

    python scripts/bench_scale.py [--sizes 10000,100000] [--queries 50] [--cli-repeat 5]
                                  [--throughput-sample 1000] [--only reindex,search,cli]

For each size, with the vault and its index cached under .bench/scale/ (built on first use):
- full reindex throughput (texts/s). Embedding dominates and is linear in the number of texts, so it
  is measured as a real `reindex --full` of a scratch vault of `--throughput-sample` memories; the
  cached index of each size is built through the same sync code, but asking the model only once per
  distinct synthetic sentence (the text without its "(note i)"), which on a shared 2-core machine turns
  hours into minutes; that build's time minus its model time is the rest of the work (reading,
  hashing, SQLite, FTS), reported per size. Projected full reindex = size / rate + that rest;
- no-change reindex (s): `Memvault.reindex()` on the caught-up index, median of 3 (target <= 2 s at 10k);
- search latency in-process, query embedding included: `Memvault.search` in one conversation and
  across all, p50/p95 over `--queries` queries, also over each query's best of 3 (target p50 <= 50 ms at 100k);
- a cold `memvault search` process, start to finish (target <= 1.5 s at 10k).
The load average (1 min, 2 cores) is printed beside every figure: other work on the machine skews them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine_noise  # noqa: E402
from synth_vault import OBJECTS, SUBJECTS, VERBS, make  # noqa: E402

from memvault import settings  # noqa: E402
from memvault.core import Memvault  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".bench" / "scale"
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x"}


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def timed_cpu(fn) -> tuple[float, float]:
    """(wall, CPU) seconds of fn in this process: on a shared machine the CPU time is the steadier figure."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fresh_vault(path: Path, size: int) -> None:
    """A synthetic vault in its own git repository (.bench/ sits inside the project's repository,
    which Vault.init would otherwise adopt)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    make(path, size)


def open_memvault(path: Path) -> Memvault:
    return Memvault.open(settings.load(None, {"vault.path": str(path)}))


class SentenceCache:
    """The real embedder, asked once per distinct synthetic sentence; vectors of the sentence
    without its "(note i)" suffix. Same identity as the real model, so the index stays valid."""

    def __init__(self, inner) -> None:
        self.inner, self.cache, self.seconds = inner, {}, 0.0
        self.identity, self.dims, self.batch_size = inner.identity, inner.dims, inner.batch_size

    def embed(self, texts: list[str], kind: str = "passage"):
        import numpy as np

        keys = [re.sub(r" \(note \d+\)\.$", ".", text) for text in texts]
        missing = [key for key in dict.fromkeys(keys) if key not in self.cache]
        if missing:
            started = time.perf_counter()
            self.cache.update(zip(missing, self.inner.embed(missing, kind=kind), strict=True))
            self.seconds += time.perf_counter() - started
        return np.stack([self.cache[key] for key in keys])


def cached_vault(size: int) -> tuple[Path, dict]:
    """The cached vault of `size` memories with a caught-up index; returns it and its build record."""
    from memvault.index.sync import sync

    path = CACHE / f"vault-{size}"
    record_file = CACHE / f"vault-{size}.json"
    record = json.loads(record_file.read_text()) if record_file.exists() else {}
    if record.get("size") != size or not (path / ".memvault" / "index.sqlite").exists():
        print(f"[{size}] building the vault ({load()})", file=sys.stderr, flush=True)
        fresh_vault(path, size)
        memvault = open_memvault(path)
        index = memvault.open_index()
        embedder = SentenceCache(memvault.embedder())
        load_before = load()
        with memvault.vault.lock():
            seconds = timed(lambda: sync(memvault.vault, index, embedder, full=True))
        memvault.close()
        record = {"size": size, "build_s": seconds, "model_s": embedder.seconds,
                  "rest_s": seconds - embedder.seconds, "load": f"{load_before} -> {load()}",
                  "measured": time.strftime("%Y-%m-%d %H:%M")}
        record_file.write_text(json.dumps(record, indent=2))
    return path, record


def sample_throughput(count: int) -> tuple[float, str]:
    """texts/s of a full reindex of a scratch vault of `count` memories."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vault"
        fresh_vault(path, count)
        memvault = open_memvault(path)
        memvault.open_index()
        before = load()
        wall, cpu = timed_cpu(lambda: memvault.reindex(full=True))
        memvault.close()
        return count / wall, f"CPU {cpu:.1f} s for {wall:.1f} s wall; {before} -> {load()}"


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    shapes = ["what does {s} think of {o}", "{o}", "who {v} {o}", "did {s} ever mention {o}?", "{s} {v}"]
    return [rng.choice(shapes).format(s=rng.choice(SUBJECTS), v=rng.choice(VERBS), o=rng.choice(OBJECTS))
            for _ in range(count)]


def search_latency(memvault: Memvault, texts: list[str], conversation: str | None) -> tuple[str, str]:
    """'p50 / p95 ms wall (CPU; best of 3)' over the queries, and the load around the run.

    Each query runs three times: the first run's wall and CPU times are the plain figures; the best of
    the three, per query, leaves out the stalls a shared VM adds (see the machine-noise row)."""
    memvault.search("warm up", conversation)  # the model and the index are loaded once per process
    before = load()
    runs = [[timed_cpu(lambda q=q: memvault.search(q, conversation)) for _ in range(3)] for q in texts]
    walls = [r[0][0] * 1000 for r in runs]
    cpus = [r[0][1] * 1000 for r in runs]
    bests = [min(w for w, _ in r) * 1000 for r in runs]
    return (f"{percentile(walls, 50):.0f} / {percentile(walls, 95):.0f} ms (CPU {percentile(cpus, 50):.0f} / "
            f"{percentile(cpus, 95):.0f} ms; best of 3 {percentile(bests, 50):.0f} / {percentile(bests, 95):.0f} ms)",
            f"{before} -> {load()}")


def cli_search(path: Path, repeat: int) -> tuple[str, str]:
    """Median and max wall seconds of a cold process, with its median CPU seconds."""
    cmd = [sys.executable, "-m", "memvault", "search", "green tea in Lisbon", "--vault", str(path), "-c", "c3"]
    # Bytecode may be written, as an installed package has it (this machine sets PYTHONDONTWRITEBYTECODE).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **GIT_ENV}
    subprocess.run(cmd, check=True, capture_output=True, env=env)  # once: bytecode and the OS file cache warm
    before = load()
    walls, cpus = [], []
    for _ in range(repeat):
        cpu = children_cpu()
        walls.append(timed(lambda: subprocess.run(cmd, check=True, capture_output=True, env=env)))
        cpus.append(children_cpu() - cpu)
    return (f"{percentile(walls, 50):.2f} / {max(walls):.2f} s (CPU {percentile(cpus, 50):.2f} s)",
            f"{before} -> {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cli-repeat", type=int, default=5)
    parser.add_argument("--throughput-sample", type=int, default=1000,
                        help="time a real full reindex of a scratch vault of N memories (0: skip)")
    parser.add_argument("--only", default="reindex,search,cli")
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    only = set(args.only.split(","))
    print("| memories | measure | value | load (1 min, 2 cores) |\n|---|---|---|---|")
    rate = None
    if args.throughput_sample:
        rate, when = sample_throughput(args.throughput_sample)
        print(f"| {args.throughput_sample} (scratch) | full reindex, real model | {rate:.0f} texts/s | {when} |",
              flush=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        path, record = cached_vault(size)
        projected = f"; projected full reindex {size / rate + record['rest_s']:.0f} s" if rate else ""
        print(f"| {size} | index build without the model (read, hash, SQLite, FTS; {record['measured']}) | "
              f"{record['rest_s']:.1f} s{projected} | {record['load']} |", flush=True)
        memvault = open_memvault(path)
        if "reindex" in only:
            memvault.reindex()  # settles the stat cache (files hashed once after the build)
            before = load()
            runs = sorted(timed_cpu(memvault.reindex) for _ in range(3))
            print(f"| {size} | no-change reindex, median of 3 | {runs[1][0]:.2f} s (CPU {runs[1][1]:.2f} s) | "
                  f"{before} -> {load()} |", flush=True)
        if "search" in only:
            texts = queries(args.queries)
            for label, conversation in (("one conversation + global", "c3"), ("all conversations", None)):
                figures, when = search_latency(memvault, texts, conversation)
                print(f"| {size} | search in-process, {label}, p50 / p95 | {figures} | {when} |", flush=True)
            print(f"| {size} | machine noise: a fixed ~10 ms workload, p50 / p95 / max | {machine_noise.probe()} | "
                  f"{load()} |", flush=True)
        memvault.close()
        if "cli" in only:
            figures, when = cli_search(path, args.cli_repeat)
            print(f"| {size} | cold `memvault search` process, median / max of {args.cli_repeat} | {figures} | "
                  f"{when} |", flush=True)


if __name__ == "__main__":
    main()
