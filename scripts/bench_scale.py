"""Index and search at scale: synthetic vaults of 10k and 100k memories (scripts/synth_vault.py).

    python scripts/bench_scale.py --n 100000 [--repeat 5] [--rows add,search-one,...]
    python scripts/bench_scale.py [--sizes 10000,100000] [--queries 50] [--cli-repeat 5]
                                  [--throughput-sample 1000] [--only reindex,search,cli]

`--n N` prints issue 36's table for a vault of the proxy's shape (synth_vault.make_proxy: one huge
conversation of turns, 200 of facts, a year of dated commits), built once and cached under
~/.cache/memvault-bench/ (MEMVAULT_BENCH_CACHE; outside the repository, so no checkout drags it
along): in-process add, a whole `memvault add` process, search in the huge conversation and across
all (p50 / p95), no-change reindex (also with a `reindex --watch` running: `reindex-watched`, which
writes the watcher's lock under the vault's .memvault/watch/), a cold `memvault search`, `--as-of` a
month back, a no-change `sync` (a bare remote beside the vault), `erase` of one memory, and `.git`
after `memvault gc`; each measured in a process of its own, whose peak memory (max RSS) is printed
beside it. The adds and the erase change the cached vault a little each run.

Without `--n`:

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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import machine_noise  # noqa: E402
from synth_vault import OBJECTS, SUBJECTS, VERBS, make, make_proxy  # noqa: E402

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
    from memvault.index.catchup import sync

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
    # The model and the index are loaded once per process: a process's first query runs on a session opened
    # without graph passes, its second opens the folded one (models.embedders.OnnxMiniLM._prepare).
    memvault.search("warm up", conversation)
    memvault.search("warm up again", conversation)
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


# -- issue 36's table (--n) ----------------------------------------------------------------------------
BENCH_CACHE = Path(os.environ.get("MEMVAULT_BENCH_CACHE", Path.home() / ".cache" / "memvault-bench"))
SELF = Path(__file__).resolve()


def proxy_vault(n: int) -> Path:
    """The cached proxy-shaped vault of `n` memories with a caught-up index and a bare remote."""
    from memvault.index.catchup import sync

    home = BENCH_CACHE / f"proxy-{n}"
    path, record_file = home / "vault", home / "build.json"
    if record_file.exists() and (path / ".memvault" / "index.sqlite").exists():
        record = json.loads(record_file.read_text())
        if "relayout_s" not in record:  # cached before day folders: moved as a person's vault is
            record.update(relayout(path))
            record_file.write_text(json.dumps(record, indent=2))
            reset_remote(path)
        elif not any(home.glob("remote-*.git")):
            reset_remote(path)
        return path
    shutil.rmtree(home, ignore_errors=True)
    path.mkdir(parents=True)
    print(f"[{n}] building the vault ({load()})", file=sys.stderr, flush=True)
    started = time.perf_counter()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    make_proxy(path, n)
    files_s = time.perf_counter() - started
    memvault = open_memvault(path)
    embedder = SentenceCache(memvault.embedder())
    with memvault.vault.lock():
        index_s = timed(lambda: sync(memvault.vault, memvault.open_index(), embedder, full=True))
    memvault.close()
    reset_remote(path)
    record_file.write_text(json.dumps({"n": n, "files_and_commits_s": files_s, "index_s": index_s, "relayout_s": 0.0,
                                       "model_s": embedder.seconds, "load": load(),
                                       "built": time.strftime("%Y-%m-%d %H:%M")}, indent=2))
    return path


def relayout(path: Path) -> dict:
    """Move a vault cached before day folders into them (vault.write.relayout, as `sync` does), then
    catch its index up (the moves: rehashed, not re-embedded); the seconds of each, and the load."""
    from memvault.vault.write.relayout import relayout as move

    print(f"moving {path} into day folders ({load()})", file=sys.stderr, flush=True)
    memvault = open_memvault(path)
    with memvault.vault.lock():
        moved_s = timed(lambda: move(memvault.vault))
    reindex_s = timed(memvault.reindex)
    memvault.close()
    return {"relayout_s": moved_s, "reindex_after_relayout_s": reindex_s, "relayout_load": load()}


def reset_remote(path: Path) -> None:
    """A bare copy of the vault beside it, as `origin` (sync's remote), in step with it. A new folder each
    time: a git the last erase left running may still be writing into the old one."""
    for old in path.parent.glob("remote-*.git"):
        shutil.rmtree(old, ignore_errors=True)
    remote = path.parent / f"remote-{time.time_ns()}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(path), str(remote)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "remove", "origin"], capture_output=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", str(remote)], check=True)
    subprocess.run(["git", "-C", str(path), "fetch", "-q", "origin"], check=True)
    subprocess.run(["git", "-C", str(path), "branch", "-q", "-u", "origin/main"], check=True)


def child(command: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """Run a process to its end: (wall seconds, peak memory in MiB, its stdout). The peak is GNU time's
    (%M): a child forked from this big process would start with this process's pages counted."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        started = time.perf_counter()
        done = subprocess.run(["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name, *command], capture_output=True,
                              text=True, env={**os.environ, **GIT_ENV, **(env or {})})
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[:6])} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
        return wall, int(rss.read().split()[-1]) // 1024, done.stdout


def memvault_cli(path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "memvault", *args, "--vault", str(path)]


def measure_in_process(path: Path, what: str, repeat: int) -> str:
    """One in-process measure, run in this (child) process: its figures as text."""
    memvault = open_memvault(path)
    if what == "add":
        memvault.add_verbatim("warm up", conversation="default", role="user")
        walls = [timed(lambda i=i: memvault.add_verbatim(f"bench turn {i}", conversation="default", role="user"))
                 for i in range(repeat * 2)]
        result = f"{percentile(walls, 50) * 1000:.0f} / {percentile(walls, 95) * 1000:.0f} ms"
    elif what in ("search-one", "search-all"):
        memvault.reindex()  # as a cron's would: the vectors' snapshot is written if there is none yet
        figures, _ = search_latency(memvault, queries(repeat * 6), "default" if what == "search-one" else None)
        result = figures
    else:  # no-change reindex
        memvault.reindex()  # settles what the adds of this run left
        runs = sorted(timed_cpu(memvault.reindex) for _ in range(3))
        result = f"{runs[1][0]:.2f} s (CPU {runs[1][1]:.2f} s)"
    memvault.close()
    return result


ROWS = ("add", "search-one", "search-all", "reindex", "reindex-watched", "cli-add", "cold-search", "as-of", "sync",
        "erase", "gc")


def watching(path: Path) -> subprocess.Popen:
    """A `memvault reindex --watch` of the vault, once it vouches that nothing changed (its first sync
    done): a reindex then stats no file. It writes its lock and probes under .memvault/watch/."""
    from memvault.index.vouch import vouched

    watcher = subprocess.Popen([*memvault_cli(path, "reindex", "--watch", "--quiet")], stderr=subprocess.PIPE,
                               text=True, env={**os.environ, **GIT_ENV})
    while (refused := vouched(path / ".memvault")) is not None:
        if watcher.poll() is not None:
            raise SystemExit(f"the watcher stopped: {watcher.stderr.read().strip()[-400:]}")
        print(f"waiting for the watcher: {refused}", file=sys.stderr, flush=True)
        time.sleep(5)
    return watcher


def table(n: int, repeat: int, rows: set[str]) -> None:
    """Issue 36's table for the proxy-shaped vault of `n` memories: the rows named in `rows` (ROWS)."""
    path = proxy_vault(n)
    print(f"| {n} memories (proxy shape) | value | peak memory | load (1 min, 2 cores) |\n|---|---|---|---|")
    build = json.loads((path.parent / "build.json").read_text())
    print(f"| building it (files and dated commits; index without the model) | {build['files_and_commits_s']:.0f} s; "
          f"{build['index_s'] - build['model_s']:.0f} s | | {build['load']} |", flush=True)

    def row(label: str, value: str, peak: int | str, before: str) -> None:
        print(f"| {label} | {value} | {peak} MiB | {before} -> {load()} |", flush=True)

    for what, label in (("add", "in-process add to the huge conversation, p50 / p95"),
                        ("search-one", "search in-process, the huge conversation, p50 / p95"),
                        ("search-all", "search in-process, all conversations, p50 / p95"),
                        ("reindex", "no-change reindex, median of 3")):
        if what not in rows:
            continue
        before = load()
        _, peak, out = child([sys.executable, str(SELF), "--measure", what, "--path", str(path),
                              "--repeat", str(repeat)])
        row(label, out.strip(), peak, before)
    if "reindex-watched" in rows:
        watcher = watching(path)
        try:
            before = load()
            _, peak, out = child([sys.executable, str(SELF), "--measure", "reindex", "--path", str(path),
                                  "--repeat", str(repeat)])
            row("no-change reindex, `reindex --watch` running, median of 3", out.strip(), peak, before)
            before = load()
            done = [child(memvault_cli(path, "reindex", "-q")) for _ in range(repeat)]
            walls = [wall for wall, _, _ in done]
            row(f"whole `memvault reindex` process, `reindex --watch` running, median / max of {repeat}",
                f"{percentile(walls, 50):.2f} / {max(walls):.2f} s", max(peak for _, peak, _ in done), before)
        finally:
            watcher.send_signal(signal.SIGINT)
            watcher.wait(timeout=120)

    def runs(label: str, count: int, *args: str) -> None:
        before = load()
        done = [child(memvault_cli(path, *args)) for _ in range(count)]
        walls = [wall for wall, _, _ in done]
        row(f"{label}, median / max of {count}", f"{percentile(walls, 50):.2f} / {max(walls):.2f} s",
            max(peak for _, peak, _ in done), before)

    if "cli-add" in rows:
        runs("whole `memvault add --no-llm` process", repeat, "add", "a turn from the shell", "--no-llm", "-c",
             "default")
    if "cold-search" in rows:
        runs("cold `memvault search` process", repeat, "search", "green tea in Lisbon", "-c", "default")
    if "as-of" in rows:
        month_back = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 30 * 86400))
        runs(f"`memvault search --as-of {month_back}` (a month back)", 2, "search", "green tea", "--as-of",
             month_back)
    if "sync" in rows:
        runs("no-change `memvault sync`", repeat, "sync", "-q")
    if "erase" in rows:
        victim = next((path / "entries" / "c1" / "facts").rglob("*.md")).name.rsplit("__", 1)[1][:-3]
        runs("`memvault erase` of one memory", 1, "erase", victim, "--yes", "--reason", "benchmark")
        reset_remote(path)  # erase rewrote every commit: the remote follows, for the next run's sync
    if "gc" in rows:
        before = load()
        wall, peak, _ = child(memvault_cli(path, "gc", "--max-entries", str(10 ** 9)))
        size = sum(f.stat().st_size for f in (path / ".git").rglob("*") if f.is_file()) / 2 ** 20
        row("`.git` after `memvault gc` (its git gc)", f"{size:.0f} MiB (gc took {wall:.0f} s)", peak, before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, help="issue 36's table for a proxy-shaped vault of N memories")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", default=",".join(ROWS), help="with --n: the rows to measure, of " + ", ".join(ROWS))
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a child's one in-process measure
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cli-repeat", type=int, default=5)
    parser.add_argument("--throughput-sample", type=int, default=1000,
                        help="time a real full reindex of a scratch vault of N memories (0: skip)")
    parser.add_argument("--only", default="reindex,search,cli")
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    if args.measure:
        print(measure_in_process(Path(args.path), args.measure, args.repeat))
        return
    if args.n:
        table(args.n, args.repeat, set(args.rows.split(",")))
        return
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
