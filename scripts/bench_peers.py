"""memvault against mem0 and agent-cli on the same machine, in one run, with the same embedding model.

    bash scripts/bench_peers_setup.sh            # once: each peer in its own virtualenv under .bench/peers/
    python scripts/bench_peers.py [--quick] [--systems memvault,mem0,agent-cli] [--size 10000]
                                  [--queries 1000] [--data ../shared/data/locomo/locomo10.json] [--json out.json]

The systems (each run by a runner script with its own virtualenv's Python, speaking JSON: see
scripts/bench_peers_runner.py):
- memvault with its defaults (scripts/bench_peers_memvault.py);
- mem0 (`mem0ai` 2.2.1) as installed by `pip install mem0ai`: its default local vector store (Qdrant on
  a local path), its SQLite history, its own search (semantic; its BM25 lane needs fastembed and its
  entity boost spaCy, neither of which the plain install has), with memvault's MiniLM-L6 int8 embedder
  behind mem0's EmbeddingBase (scripts/bench_peers_mem0.py). mem0's default configuration embeds with
  OpenAI's text-embedding-3-small, which needs the network: its row is printed as not run, with why;
- agent-cli 0.112.0's memory (the version whose vault memvault reads): its own MemoryClient start-up,
  Chroma store and retrieval (candidates, recency, MMR), the same embedder behind Chroma's embedding
  function (scripts/bench_peers_agentcli.py). Its cross-encoder is downloaded from a model hub at
  start-up, which cannot happen offline: the candidates' own dense similarity stands in for it.

The workload, the same for each system, from one machine state:
- store: every LoCoMo turn (as scripts/bench_locomo.py stores them: "<speaker>: <text>", role user, one
  conversation per sample, its dia_id and time) plus synthetic memories (scripts/synth_vault.py's
  sentences) in a conversation of their own, `--size` memories in all, through each system's path that
  stores text as given (no LLM); then one more memory on its own (a single add into that store);
- every LoCoMo question of categories 1-4 (1,536), asked in its conversation with top_k 10: turn-level
  recall@5/@10 as scripts/bench_locomo.py computes it, and search latency in-process (query embedding
  included) over the first `--queries` of them;
- a fresh process that opens the store and searches once: cold start to first search, timed from
  outside (interpreter start and imports included);
- peak RSS of the storing process and of the cold one; disk used by the store folder.
Ratios are memvault / peer (below 1: memvault takes less time or space; above 1 on recall: it finds
more). The load average and machine_noise's probe are printed beside the figures. `--quick` is a
smoke run: one conversation, 50 questions, a few hundred memories.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import machine_noise
from bench_locomo import DEFAULT_DATA, Sample, Scores, load, percentile
from synth_vault import sentence

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
PEERS = REPO / ".bench" / "peers"
SYSTEMS = {  # name -> (its Python, its runner)
    "memvault": (Path(sys.executable), SCRIPTS / "bench_peers_memvault.py"),
    "mem0": (PEERS / "mem0" / "bin" / "python", SCRIPTS / "bench_peers_mem0.py"),
    "agent-cli": (PEERS / "agentcli" / "bin" / "python", SCRIPTS / "bench_peers_agentcli.py"),
}
FILLER = "filler"  # the synthetic memories' conversation
EXTRA = "The user just switched from green tea to oolong."
TOP_K = 10
PHASE_TIMEOUT = 20 * 60  # a runner that hangs costs its row, not the run
# No telemetry and no model hub: the run is offline, and a library that tried would only wait on it.
OFFLINE_ENV = {"MEM0_TELEMETRY": "False", "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "ORT_DISABLE_TELEMETRY": "1", "OPENAI_API_KEY": "sk-offline-unused"}


def workload(samples: list[Sample], size: int, questions: int | None) -> tuple[dict[str, Any], list[tuple]]:
    """The runners' workload (bench_peers_runner.py's shape) and, per question, what scores it."""
    memories = [{"text": text, "conversation": sample.name, "created_at": created.isoformat(), "dia_id": dia_id,
                 "speaker": speaker} for sample in samples for dia_id, text, created, speaker in sample.turns]
    rng, start = random.Random(7), datetime(2024, 1, 1, tzinfo=UTC)
    memories += [{"text": sentence(rng, i), "conversation": FILLER, "created_at": (start + timedelta(minutes=i))
                  .isoformat(), "dia_id": None, "speaker": None} for i in range(max(0, size - len(memories)))]
    asked = [(sample.name, question) for sample in samples for question in sample.questions][:questions]
    extra = {"text": EXTRA, "conversation": FILLER, "created_at": datetime.now(UTC).isoformat(), "dia_id": None,
             "speaker": None}
    return ({"memories": memories, "extra": extra, "top_k": TOP_K,
             "questions": [{"text": q.text, "conversation": name} for name, q in asked]},
            [(q.category, q.evidence, name) for name, q in asked])


def recall(scoring: list[tuple], found: list[list[str | None]]) -> dict[str, float]:
    """bench_locomo's turn-level recall of each question's hits (dia_ids, best first; a null is a hit
    that is no LoCoMo turn and keeps its place)."""
    scores = Scores()
    for (category, evidence, conversation), hits in zip(scoring, found, strict=True):
        scores.add(category, [hit or "" for hit in hits], evidence, conversation)  # "" credits no turn
    return scores.summary()


def run_phase(name: str, phase: str, store: Path, workload_file: Path, home: Path) -> tuple[dict[str, Any], float]:
    """One runner process: its JSON answer and its wall time from start to answer."""
    python, runner = SYSTEMS[name]
    env = {**os.environ, **OFFLINE_ENV, "HOME": str(home), "PYTHONPATH": str(REPO)}
    request = json.dumps({"phase": phase, "store": str(store), "workload": str(workload_file)})
    started = time.perf_counter()
    try:
        done = subprocess.run([str(python), str(runner)], input=request, capture_output=True, text=True, env=env,
                              cwd=str(store.parent), timeout=PHASE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"{phase} took longer than {PHASE_TIMEOUT} s: stopped"}, time.perf_counter() - started
    wall = time.perf_counter() - started
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        answer = {"error": f"runner exited {done.returncode}: {tail[0]}"}
    if "error" in answer:
        (store.parent / f"{name}-{phase}.log").write_text(done.stderr)
    return answer, wall


def disk_mb(folder: Path) -> float:
    """Space the folder takes on disk (allocated blocks, as `du` counts)."""
    return sum(path.lstat().st_blocks * 512 for path in folder.rglob("*")) / 2**20


def measure(name: str, workdir: Path, workload_file: Path, scoring: list[tuple], queries: int) -> dict[str, Any]:
    """Build the system's store, ask the questions, then start it cold; the row of figures (or its error)."""
    folder, home = workdir / name, workdir / f"{name}-home"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    built, _ = run_phase(name, "build", folder, workload_file, home)
    if "error" in built:
        return {"error": built["error"]}
    cold, cold_wall = run_phase(name, "cold", folder, workload_file, home)
    if "error" in cold:
        return {"error": cold["error"]}
    summary = recall(scoring, built["found"])
    latencies = built["latencies_ms"][:queries]
    memories = json.loads(workload_file.read_text())["memories"]
    return {"store_s": built["bulk_s"], "store_cpu_s": built["bulk_cpu_s"], "per_s": len(memories) / built["bulk_s"],
            "add_one_s": built["add_one_s"],
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95), "searches": len(latencies),
            "cpu_p50_ms": percentile(built["search_cpu_ms"][:queries], 50),
            "cold_s": cold_wall, "cold_open_s": cold["open_s"], "rss_build_mb": built["peak_rss_mb"],
            "rss_cold_mb": cold["peak_rss_mb"], "disk_mb": disk_mb(folder), "r5": summary.get("r@5"),
            "r10": summary.get("r@10"), "questions": summary.get("n", 0), "notes": built["notes"]}


ROWS = [  # key, label, format
    ("store_s", "store {size:,} memories, no LLM (s)", "{:.1f}"),
    ("store_cpu_s", "  CPU time of that (s)", "{:.1f}"),
    ("per_s", "  memories stored per second", "{:.0f}"),
    ("add_one_s", "single add into that store (s)", "{:.3f}"),
    ("p50_ms", "search p50 over {searches:,} queries, in-process, embedding included (ms)", "{:.1f}"),
    ("p95_ms", "search p95 (ms)", "{:.1f}"),
    ("cpu_p50_ms", "  CPU time of a search, p50 (ms)", "{:.1f}"),
    ("cold_s", "cold start to first search, fresh process (s)", "{:.2f}"),
    ("rss_build_mb", "peak RSS, storing and searching (MB)", "{:.0f}"),
    ("rss_cold_mb", "peak RSS, cold start to first search (MB)", "{:.0f}"),
    ("disk_mb", "disk used by the store (MB)", "{:.1f}"),
    ("r5", "LoCoMo turn recall@5 ({questions:,} questions)", "{:.3f}"),
    ("r10", "LoCoMo turn recall@10", "{:.3f}"),
]


def ratio(mine: float | None, theirs: float | None) -> str:
    return f"{mine / theirs:.2f}" if mine is not None and theirs else "-"


def table(results: dict[str, dict[str, Any]], size: int, questions: int) -> str:
    """The README's table: a column per system, then memvault / peer for each peer that ran."""
    names = list(results)
    peers = [n for n in names if n != "memvault" and "error" not in results[n] and "memvault" in results
             and "error" not in results["memvault"]]
    lines = ["| | " + " | ".join(names) + "".join(f" | memvault / {p}" for p in peers) + " |",
             "|---" * (1 + len(names) + len(peers)) + "|"]
    for key, label, fmt in ROWS:
        cells = [fmt.format(results[n][key]) if results[n].get(key) is not None else "-" for n in names]
        ratios = [ratio(results["memvault"].get(key), results[p].get(key)) for p in peers]
        searches = max((r.get("searches", 0) for r in results.values()), default=0)
        lines.append(f"| {label.format(size=size, questions=questions, searches=searches)} | " + " | ".join(cells)
                     + "".join(f" | {r}" for r in ratios) + " |")
    return "\n".join(lines)


def mem0_defaults(workdir: Path, workload_file: Path) -> str:
    """Why mem0's default configuration gets no row offline, as its installed code says (or why not asked)."""
    if not SYSTEMS["mem0"][0].exists():
        return "not run: mem0's virtualenv is missing"
    answer, _ = run_phase("mem0", "defaults", workdir / "mem0-defaults", workload_file, workdir)
    return answer.get("error") or answer["why"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: one conversation, 50 questions")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, of: " + ", ".join(SYSTEMS))
    parser.add_argument("--size", type=int, default=None, help="memories to store (10,000; --quick 500)")
    parser.add_argument("--queries", type=int, default=1000, help="searches timed for p50/p95")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown system {unknown[0]!r} (known: {', '.join(SYSTEMS)})")
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo data not found: {args.data} (pass --data)")
    samples = load(args.data)[:1] if args.quick else load(args.data)
    size = args.size or (500 if args.quick else 10_000)
    work, scoring = workload(samples, size, 50 if args.quick else None)
    workdir = PEERS / ("run-quick" if args.quick else "run")
    workdir.mkdir(parents=True, exist_ok=True)
    workload_file = workdir / "workload.json"
    workload_file.write_text(json.dumps(work))
    started, before = time.perf_counter(), os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        if not SYSTEMS[name][0].exists():
            results[name] = {"error": f"no virtualenv at {SYSTEMS[name][0].parent.parent}: "
                                      "run bash scripts/bench_peers_setup.sh"}
        else:
            results[name] = measure(name, workdir, workload_file, scoring, args.queries)
        print(f"{name}: {results[name].get('error') or 'done'} ({time.perf_counter() - started:.0f} s so far)",
              file=sys.stderr, flush=True)
    defaults = mem0_defaults(workdir, workload_file) if "mem0" in names else None
    after = os.getloadavg()
    ran = {n: r for n, r in results.items() if "error" not in r}
    print(f"{len(work['memories']):,} memories, {len(scoring):,} questions, {time.perf_counter() - started:.0f} s; "
          f"load average {before[0]:.2f} at start, {after[0]:.2f} at end (1-min, {os.cpu_count()} cores); "
          f"machine noise (a fixed ~10 ms workload, p50 / p95 / max): {machine_noise.probe()}\n")
    print(table(ran, len(work["memories"]), len(scoring)) if ran else "no system ran")
    for name, result in results.items():
        for note in result.get("notes", []):
            print(f"- {name}: {note}")
        if "error" in result:
            print(f"- {name}: not run: {result['error']}")
    if defaults:
        print(f"- mem0 with its default configuration: {defaults}")
    if args.json:
        args.json.write_text(json.dumps({"load_average": [before[0], after[0]], "memories": len(work["memories"]),
                                         "questions": len(scoring), "systems": results,
                                         "mem0_defaults": defaults}, indent=2))


if __name__ == "__main__":
    main()
