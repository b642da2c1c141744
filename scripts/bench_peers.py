"""memvault against mem0 and agent-cli on the same machine, in one run, with the same embedding model.

    bash scripts/bench_peers_setup.sh            # once: each peer in its own virtualenv under .bench/peers/
    python scripts/bench_peers.py [--quick] [--systems memvault,memvault-dense,mem0,mem0-chroma,agent-cli]
                                  [--memories 10000] [--questions N] [--queries 1000] [--runs 3]
                                  [--data ../shared/data/locomo/locomo10.json] [--json out.json]

The systems (each run by a runner script with its own virtualenv's Python, speaking JSON: see
scripts/bench_peers_runner.py):
- memvault with its defaults (scripts/bench_peers_memvault.py), and as a control with its lexical lane
  off (`retrieval.lexical_weight 0`: dense candidates only, then its relevance, recency and MMR);
- mem0 (`mem0ai` 2.2.1) as installed by `pip install mem0ai`: its default local vector store (Qdrant on
  a local path), its SQLite history, its own search (semantic; its BM25 lane needs fastembed and its
  entity boost spaCy, neither of which the plain install has), with memvault's MiniLM-L6 int8 embedder
  behind mem0's EmbeddingBase (scripts/bench_peers_mem0.py); and mem0 on its own local Chroma store
  (`vector_store.provider "chroma"`, a path), whose filter runs inside Chroma where Qdrant's local mode
  checks it in a Python loop over every point. mem0's default configuration embeds with OpenAI's
  text-embedding-3-small, which needs the network: its row is printed as not run, with why. Offline,
  mem0 ranks by cosine alone: its rows are titled so;
- agent-cli 0.112.0's memory (the version whose vault memvault reads): its own MemoryClient start-up,
  Chroma store and retrieval (candidates, recency, MMR), the same embedder behind Chroma's embedding
  function (scripts/bench_peers_agentcli.py). Its cross-encoder is downloaded from a model hub at
  start-up, which cannot happen offline: the candidates' own dense similarity stands in for it (its
  rows are titled "offline").

The workload, the same for each system, from one machine state:
- store: every LoCoMo turn (as scripts/bench_locomo.py stores them: "<speaker>: <text>", role user, one
  conversation per sample, its dia_id and time) plus synthetic memories (scripts/synth_vault.py's
  sentences) in a conversation of their own, `--size` memories in all, through each system's path that
  stores text as given (no LLM); then one more memory on its own (a single add into that store);
- every LoCoMo question of categories 1-4 (1,536; `--questions` the first N), asked in its conversation
  with top_k 10: turn-level
  recall@5/@10 as scripts/bench_locomo.py computes it, and search latency in-process (query embedding
  included) over the first `--queries` of them;
- a fresh process that opens the store and searches once: cold start to first search, timed from
  outside (interpreter start and imports included);
- peak RSS of the storing process and of the cold one; disk used by the store folder.
Wall times and CPU times (the process's own and its children's: git) are both given: on a shared
machine the CPU times are the steadier. `--runs N` (3) repeats the whole measure: a cell is the median
of the runs and, when they differ, their range. Ratios are memvault / peer, of the medians (below 1:
memvault takes less time or space; above 1 on recall: it finds more). The load average and
machine_noise's probe are printed beside the figures. `--memories N` below the LoCoMo turns (5,882)
stores only the first conversations whose turns fit (whole ones, at least one). `--quick` is a smoke
run: one conversation, 50 questions, a few hundred memories, one run.
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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import machine_noise
from bench_locomo import DEFAULT_DATA, Sample, Scores, load, percentile
from synth_vault import sentence

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
PEERS = REPO / ".bench" / "peers"


@dataclass(frozen=True)
class System:
    label: str  # the table's column
    python: Path
    runner: Path
    variant: str = ""  # BENCH_PEERS_VARIANT for its runner: another configuration of the same system
    peer: bool = True  # a column memvault is compared with (not memvault's own control)


SYSTEMS = {
    "memvault": System("memvault", Path(sys.executable), SCRIPTS / "bench_peers_memvault.py", peer=False),
    "memvault-dense": System("memvault, lexical lane off (control)", Path(sys.executable),
                             SCRIPTS / "bench_peers_memvault.py", "dense", peer=False),
    "mem0": System("mem0, Qdrant local (offline: cosine only)", PEERS / "mem0" / "bin" / "python",
                   SCRIPTS / "bench_peers_mem0.py"),
    "mem0-chroma": System("mem0, Chroma local (offline: cosine only)", PEERS / "mem0" / "bin" / "python",
                          SCRIPTS / "bench_peers_mem0.py", "chroma"),
    "agent-cli": System("agent-cli (offline: no cross-encoder)", PEERS / "agentcli" / "bin" / "python",
                        SCRIPTS / "bench_peers_agentcli.py"),
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
    """One runner process: its JSON answer (with `process_cpu_s`, the CPU the whole process used, its
    interpreter start and imports included) and its wall time from start to answer."""
    import resource

    system = SYSTEMS[name]
    env = {**os.environ, **OFFLINE_ENV, "HOME": str(home), "PYTHONPATH": str(REPO),
           "BENCH_PEERS_VARIANT": system.variant}
    request = json.dumps({"phase": phase, "store": str(store), "workload": str(workload_file)})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        done = subprocess.run([str(system.python), str(system.runner)], input=request, capture_output=True, text=True,
                              env=env, cwd=str(store.parent), timeout=PHASE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"{phase} took longer than {PHASE_TIMEOUT} s: stopped"}, time.perf_counter() - started
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        answer = {"error": f"runner exited {done.returncode}: {tail[0]}"}
    if "error" in answer:
        (store.parent / f"{name}-{phase}.log").write_text(done.stderr)
    answer["process_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
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
            "add_one_s": built["add_one_s"], "add_one_cpu_s": built.get("add_one_cpu_s"),
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95), "searches": len(latencies),
            "cpu_p50_ms": percentile(built["search_cpu_ms"][:queries], 50),
            "cold_s": cold_wall, "cold_cpu_s": cold["process_cpu_s"], "cold_open_s": cold["open_s"],
            "rss_build_mb": built["peak_rss_mb"],
            "rss_cold_mb": cold["peak_rss_mb"], "disk_mb": disk_mb(folder), "r5": summary.get("r@5"),
            "r10": summary.get("r@10"), "questions": summary.get("n", 0), "notes": built["notes"]}


ROWS = [  # key, label, format
    ("store_s", "store {size:,} memories, no LLM, in-process (s; memvault and agent-cli: one git commit per "
                "conversation)", "{:.1f}"),
    ("store_cpu_s", "  CPU time of that (s)", "{:.1f}"),
    ("per_s", "  memories stored per second", "{:.0f}"),
    ("add_one_s", "single add into that store, in-process (s; memvault and agent-cli: with its git commit; mem0: "
                  "no commit)", "{:.3f}"),
    ("add_one_cpu_s", "  CPU time of that (s)", "{:.3f}"),
    ("p50_ms", "search p50 over {searches:,} queries, in-process, embedding included (ms)", "{:.1f}"),
    ("p95_ms", "search p95 (ms)", "{:.1f}"),
    ("cpu_p50_ms", "  CPU time of a search, p50 (ms)", "{:.1f}"),
    ("cold_s", "cold start to first search, fresh process (s; agent-cli re-embeds every file at each start)",
     "{:.2f}"),
    ("cold_cpu_s", "  CPU time of that process (s)", "{:.2f}"),
    ("rss_build_mb", "peak RSS, storing and searching (MB)", "{:.0f}"),
    ("rss_cold_mb", "peak RSS, cold start to first search (MB)", "{:.0f}"),
    ("disk_mb", "disk used by the store (MB)", "{:.1f}"),
    ("r5", "LoCoMo turn recall@5 ({questions:,} questions)", "{:.3f}"),
    ("r10", "LoCoMo turn recall@10", "{:.3f}"),
]


def ratio(mine: float | None, theirs: float | None) -> str:
    return f"{mine / theirs:.2f}" if mine is not None and theirs else "-"


def median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def combined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs of one system as one row: per figure the median, and `spread` its (min, max)."""
    ok = [run for run in runs if "error" not in run]
    if not ok:
        return {"error": runs[-1]["error"] if runs else "not run"}
    row: dict[str, Any] = {"runs": len(ok), "spread": {}, "notes": ok[0].get("notes", [])}
    for key in {key for run in ok for key, value in run.items() if isinstance(value, (int, float))}:
        values = [run[key] for run in ok if run.get(key) is not None]
        row[key] = median(values)
        if values:
            row["spread"][key] = (min(values), max(values))
    return row


def cell(result: dict[str, Any], key: str, fmt: str) -> str:
    """A figure, with the range of the runs beside it when they differ in what is printed."""
    if result.get(key) is None:
        return "-"
    shown = fmt.format(result[key])
    low, high = result.get("spread", {}).get(key, (result[key], result[key]))
    if fmt.format(low) == fmt.format(high):
        return shown
    return f"{shown} ({fmt.format(low)}-{fmt.format(high)})"


def table(results: dict[str, dict[str, Any]], size: int, questions: int) -> str:
    """The README's table: a column per system, then memvault / peer for each peer that ran."""
    names = list(results)
    peers = [n for n in names if n in SYSTEMS and SYSTEMS[n].peer and "error" not in results[n]
             and "memvault" in results and "error" not in results["memvault"]]
    label = {name: SYSTEMS[name].label if name in SYSTEMS else name for name in names}
    lines = ["| | " + " | ".join(label[n] for n in names) + "".join(f" | memvault / {label[p]}" for p in peers) + " |",
             "|---" * (1 + len(names) + len(peers)) + "|"]
    searches = int(max((r.get("searches") or 0 for r in results.values()), default=0))  # a median may be a float
    for key, text, fmt in ROWS:
        cells = [cell(results[n], key, fmt) for n in names]
        ratios = [ratio(results["memvault"].get(key), results[p].get(key)) for p in peers]
        lines.append(f"| {text.format(size=size, questions=questions, searches=searches)} | " + " | ".join(cells)
                     + "".join(f" | {r}" for r in ratios) + " |")
    return "\n".join(lines)


def mem0_defaults(workdir: Path, workload_file: Path) -> str:
    """Why mem0's default configuration gets no row offline, as its installed code says (or why not asked)."""
    if not SYSTEMS["mem0"].python.exists():
        return "not run: mem0's virtualenv is missing"
    answer, _ = run_phase("mem0", "defaults", workdir / "mem0-defaults", workload_file, workdir)
    return answer.get("error") or answer["why"]


def fitting(samples: list[Sample], size: int) -> list[Sample]:
    """The leading conversations whose turns fit in `size` memories (whole ones; at least one)."""
    chosen, count = [], 0
    for sample in samples:
        if chosen and count + len(sample.turns) > size:
            break
        chosen.append(sample)
        count += len(sample.turns)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: one conversation, 50 questions, one run")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated, of: " + ", ".join(SYSTEMS))
    parser.add_argument("--memories", "--size", dest="size", type=int, default=None,
                        help="memories to store (10,000; --quick 500)")
    parser.add_argument("--questions", type=int, default=None, help="ask only the first N questions (all: 1,536)")
    parser.add_argument("--queries", type=int, default=1000, help="searches timed for p50/p95")
    parser.add_argument("--runs", type=int, default=None, help="repeat the whole measure N times (3; --quick 1)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown system {unknown[0]!r} (known: {', '.join(SYSTEMS)})")
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo data not found: {args.data} (pass --data)")
    runs = args.runs or (1 if args.quick else 3)
    if runs < 1 or (args.size is not None and args.size < 1) or (args.questions is not None and args.questions < 1):
        raise SystemExit("--runs, --memories and --questions must be at least 1")
    size = args.size or (500 if args.quick else 10_000)
    samples = load(args.data)[:1] if args.quick else fitting(load(args.data), size)
    work, scoring = workload(samples, size, 50 if args.quick else args.questions)
    workdir = PEERS / ("run-quick" if args.quick else "run")
    workdir.mkdir(parents=True, exist_ok=True)
    workload_file = workdir / "workload.json"
    workload_file.write_text(json.dumps(work))
    started, before = time.perf_counter(), os.getloadavg()
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for run in range(1, runs + 1):  # the systems take turns, so a burst of load does not fall on one alone
        for name in names:
            if not SYSTEMS[name].python.exists():
                measured[name].append({"error": f"no virtualenv at {SYSTEMS[name].python.parent.parent}: "
                                                "run bash scripts/bench_peers_setup.sh"})
            else:
                measured[name].append(measure(name, workdir, workload_file, scoring, args.queries))
            print(f"run {run}/{runs}, {name}: {measured[name][-1].get('error') or 'done'} "
                  f"({time.perf_counter() - started:.0f} s so far)", file=sys.stderr, flush=True)
    results = {name: combined(rows) for name, rows in measured.items()}
    defaults = mem0_defaults(workdir, workload_file) if "mem0" in names else None
    after = os.getloadavg()
    ran = {n: r for n, r in results.items() if "error" not in r}
    print(f"{len(work['memories']):,} memories ({len(samples)} LoCoMo conversations), {len(scoring):,} questions, "
          f"{runs} run(s), {time.perf_counter() - started:.0f} s; load average {before[0]:.2f} at start, "
          f"{after[0]:.2f} at end (1-min, {os.cpu_count()} cores); machine noise (a fixed ~10 ms workload, "
          f"p50 / p95 / max): {machine_noise.probe()}\n")
    print(table(ran, len(work["memories"]), len(scoring)) if ran else "no system ran")
    for name, result in results.items():
        for note in result.get("notes", []):
            print(f"- {SYSTEMS[name].label}: {note}")
        if "error" in result:
            print(f"- {SYSTEMS[name].label}: not run: {result['error']}")
    if defaults:
        print(f"- mem0 with its default configuration: {defaults}")
    if args.json:
        args.json.write_text(json.dumps({"load_average": [before[0], after[0]], "memories": len(work["memories"]),
                                         "questions": len(scoring), "runs": measured, "systems": results,
                                         "mem0_defaults": defaults}, indent=2))


if __name__ == "__main__":
    main()
