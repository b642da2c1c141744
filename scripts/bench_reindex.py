"""Full reindex throughput on LoCoMo-length text: texts/s of `reindex --full`, and where the time goes.

    python scripts/bench_reindex.py [--turns 5882] [--repeat 1] [--profile 0]
                                    [--save-vectors before.npz] [--compare-vectors before.npz]

A vault of the first `--turns` LoCoMo turns (as scripts/bench_locomo.py writes them: "<speaker>: <text>"
plus " [image: <caption>]", one conversation per sample) is written once through Memvault.add_entries
and cached under .bench/reindex/. Each run then times `Memvault.reindex(full=True)` in this process,
the call `memvault reindex --full` makes, with the model loaded beforehand (a cold process adds a
fraction of a second for that). Printed: texts/s, wall and CPU seconds (CPU of every thread of the
process, the fairer figure on a shared machine) per 1000 texts, the load average around the run, and
the split between the model (tokenising and ONNX) and the rest (reading, parsing, hashing, SQLite,
FTS): the rest is timed alone first, by a full reindex whose model answers every text with one fixed
vector. `--profile N` prints the N costliest functions by own time (cProfile: it slows Python code,
not the model). `--save-vectors` / `--compare-vectors` keep every stored vector by id, and compare
them with an earlier run's: the lowest cosine must stay >= 0.9999.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_locomo import DEFAULT_DATA, GIT_ENV, load, turn_entries  # noqa: E402

from memvault import settings  # noqa: E402
from memvault.core import Memvault  # noqa: E402
from memvault.vault.format.entry import Entry  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".bench" / "reindex"


def load_average() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def first_turns(data: Path, count: int) -> list[list[Entry]]:
    """The first `count` LoCoMo turns as entries, one list per conversation."""
    conversations, left = [], count
    for sample in load(data):
        entries = turn_entries(sample)[:left]
        if entries:
            conversations.append(entries)
        left -= len(entries)
    return conversations


def open_vault(path: Path, create: bool = False) -> Memvault:
    return Memvault.open(settings.load(None, {"vault.path": str(path)}), create=create)


def cached_vault(data: Path, count: int) -> Path:
    """The vault of the first `count` turns, written once (git commits, no embedding) and reused."""
    digest = f"{hashlib.md5(data.read_bytes()).hexdigest()}:{count}"
    path, stamp = CACHE / f"vault-{count}", CACHE / f"vault-{count}.stamp"
    if stamp.exists() and stamp.read_text() == digest:
        return path
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    # Its own repository: .bench/ sits inside the project's, which Vault.init would otherwise adopt.
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    memvault = open_vault(path, create=True)
    for entries in first_turns(data, count):
        memvault.add_entries(entries, f"locomo {entries[0].conversation_id}: {len(entries)} turns")
    memvault.close()
    stamp.write_text(digest)
    return path


@contextlib.contextmanager
def without_the_model(embedder):
    """The embedder answers every text with one fixed unit vector: what is left is the rest of the work."""
    import numpy as np

    fixed = np.full(embedder.dims, embedder.dims ** -0.5, dtype=np.float32)
    embedder.embed = lambda texts, kind="passage": np.tile(fixed, (len(texts), 1))
    try:
        yield
    finally:
        del embedder.embed  # the class's method again


def timed_reindex(memvault: Memvault) -> tuple[int, float, float]:
    """(texts embedded, wall s, CPU s of every thread of this process) of a full reindex."""
    wall, cpu = time.perf_counter(), time.process_time()
    report = memvault.reindex(full=True)
    return report.embedded, time.perf_counter() - wall, time.process_time() - cpu


def full_reindex(path: Path, profile: int) -> dict:
    """A full reindex without the model (the rest of the work, alone), then a real one; the model's
    share is their difference (the sync overlaps the two, so timing inside `embed` would mix them)."""
    memvault = open_vault(path)
    embedder = memvault.embedder()
    embedder.embed(["warm up the model"], kind="passage")  # loading it is not throughput
    with without_the_model(embedder):
        _, rest_wall, rest_cpu = timed_reindex(memvault)
    load_before = load_average()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    texts, wall, cpu = timed_reindex(memvault)
    if profiler:
        import pstats

        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(profile)
    memvault.close()
    return {"texts": texts, "texts_per_s": texts / wall, "wall_s": wall, "cpu_s": cpu,
            "cpu_s_per_1000": 1000 * cpu / texts, "model_cpu_s": cpu - rest_cpu, "rest_wall_s": rest_wall,
            "rest_cpu_s": rest_cpu, "load": f"{load_before} -> {load_average()}"}


def stored_vectors(path: Path) -> dict[str, object]:
    """id -> the vector the index holds for it."""
    memvault = open_vault(path)
    index = memvault.open_index()
    rows = index.select()
    vectors = index.vectors(row["rowid"] for row in rows)
    memvault.close()
    return {row["id"]: vectors[row["rowid"]] for row in rows}


def save_vectors(vectors: dict, out: Path) -> None:
    import numpy as np

    ids = sorted(vectors)
    np.savez(out, ids=np.asarray(ids), vectors=np.stack([vectors[i] for i in ids]))


def compare_vectors(vectors: dict, earlier: Path) -> str:
    import numpy as np

    saved = np.load(earlier)
    before = dict(zip(saved["ids"].tolist(), saved["vectors"], strict=True))
    common = sorted(set(before) & set(vectors))
    if not common:
        return "no ids in common with the saved vectors"
    cosines = np.asarray([float(np.dot(before[i], vectors[i])) for i in common])
    missing, low = len(set(before) ^ set(vectors)), int((cosines < 0.9999).sum())
    return (f"{len(common)} vectors compared ({missing} ids in one run only): cosine min {cosines.min():.7f} "
            f"(1 - min = {1 - cosines.min():.1e}), mean {cosines.mean():.7f}, below 0.9999: {low}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--turns", type=int, default=5882, help="how many LoCoMo turns the vault holds")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    parser.add_argument("--save-vectors", type=Path)
    parser.add_argument("--compare-vectors", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON object per run instead of a table row")
    args = parser.parse_args()
    os.environ.update(GIT_ENV)
    path = cached_vault(args.data, args.turns)
    if not args.json:
        print("| texts | texts/s | wall s | CPU s | CPU s / 1000 texts | model CPU s | rest alone: wall / CPU s "
              "| load (1 min, 2 cores) |\n|---|---|---|---|---|---|---|---|")
    for _ in range(args.repeat):
        run = full_reindex(path, args.profile)
        if args.json:
            print(json.dumps(run), flush=True)
        else:
            print(f"| {run['texts']} | {run['texts_per_s']:.0f} | {run['wall_s']:.1f} | {run['cpu_s']:.1f} | "
                  f"{run['cpu_s_per_1000']:.2f} | {run['model_cpu_s']:.1f} | "
                  f"{run['rest_wall_s']:.1f} / {run['rest_cpu_s']:.1f} | {run['load']} |", flush=True)
    if args.save_vectors or args.compare_vectors:
        vectors = stored_vectors(path)
        if args.save_vectors:
            save_vectors(vectors, args.save_vectors)
        if args.compare_vectors:
            print(compare_vectors(vectors, args.compare_vectors))


if __name__ == "__main__":
    main()
