"""The side of scripts/bench_peers.py that runs inside each system's own virtualenv (standard library only).

A runner script (bench_peers_memvault.py, bench_peers_mem0.py, bench_peers_agentcli.py) defines how its
system opens a store, adds memories and searches, and hands that to `serve`. bench_peers.py starts it
with the system's Python, writes one JSON request to its stdin and reads one JSON answer from its stdout:

    request: {"phase": "build" | "cold", "store": DIR, "workload": FILE}
    environment: BENCH_PEERS_VARIANT, another configuration of the system ("" for its defaults)
    workload (FILE): {"memories": [MEMORY...], "extra": MEMORY, "questions": [{"text", "conversation"}...],
                      "top_k": 10}
    MEMORY: {"text", "conversation", "created_at" (ISO 8601), "dia_id" (or null), "speaker" (or null)}

- build: open a new store in DIR, store every memory (grouped by conversation, in order), then `extra`
  alone, then ask every question; answers the seconds of each step, per question its latency and the
  dia_ids of its hits (best first; null for a hit that is no LoCoMo turn), and the peak RSS. Times
  come as wall and CPU (this process's threads and the children it waited for).
- cold: open the store DIR as it was left and ask the first question; answers the seconds to open and
  to search, and the peak RSS. bench_peers.py times the whole process from outside as well.

Libraries print to stdout (mem0 prints notices): while the runner works, stdout is sent to stderr, so
the one JSON answer is all that reaches the reader.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parent.parent
STARTED = time.perf_counter()  # as early as this module loads: the runner's own start


class Store(Protocol):
    """What a system must do for the benchmark; `notes` says where it departs from its defaults."""

    notes: list[str]

    def add_bulk(self, conversation: str, memories: list[dict[str, Any]]) -> None:
        """Store these memories of one conversation as the system's verbatim bulk path does."""

    def add_one(self, memory: dict[str, Any]) -> None:
        """Store one memory as a single add into the existing store."""

    def search(self, question: dict[str, Any], top_k: int) -> list[str | None]:
        """The dia_ids of the system's own search hits for the question, best first."""


Opener = Callable[[Path, bool], Store]  # (store folder, fresh) -> the opened store


def variant() -> str:
    """The configuration bench_peers.py asked for ("": the system's defaults; see each runner)."""
    return os.environ.get("BENCH_PEERS_VARIANT", "")


def minilm():
    """memvault's default embedder (MiniLM-L6 int8 ONNX), imported from this checkout: only
    memvault.models is loaded, which needs onnxruntime, tokenizers, numpy and the two weight packages."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from memvault.models.embedders import OnnxMiniLM

    return OnnxMiniLM()


def by_conversation(memories: list[dict[str, Any]]) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for conversation, group in groupby(memories, key=lambda m: m["conversation"]):
        yield conversation, list(group)


def dia_ids_by_text(memories: list[dict[str, Any]]) -> dict[tuple[str, str], str | None]:
    """(conversation, text) -> dia_id, for systems whose hits carry their text but no metadata of ours."""
    found: dict[tuple[str, str], str | None] = {}
    for memory in memories:
        found.setdefault((memory["conversation"], memory["text"]), memory["dia_id"])
    return found


def workload_of(folder: Path) -> dict[str, Any]:
    """The workload bench_peers.py wrote beside the store folders."""
    return json.loads((folder.parent / "workload.json").read_text(encoding="utf-8"))


def cpu_s() -> float:
    """CPU seconds of this process and the children it waited for (git): steadier than wall time on a
    busy machine."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def build(open_store: Opener, folder: Path, workload: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    store = open_store(folder, True)
    opened = time.perf_counter() - started
    started, cpu = time.perf_counter(), cpu_s()
    for conversation, memories in by_conversation(workload["memories"]):
        store.add_bulk(conversation, memories)
    bulk, bulk_cpu = time.perf_counter() - started, cpu_s() - cpu
    started, cpu = time.perf_counter(), cpu_s()
    store.add_one(workload["extra"])
    one, one_cpu = time.perf_counter() - started, cpu_s() - cpu
    latencies, cpus, found = [], [], []
    for question in workload["questions"]:
        started, cpu = time.perf_counter(), time.process_time()
        hits = store.search(question, workload["top_k"])
        latencies.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        found.append(hits)
    return {"open_s": opened, "bulk_s": bulk, "bulk_cpu_s": bulk_cpu, "add_one_s": one, "add_one_cpu_s": one_cpu,
            "latencies_ms": latencies,
            "search_cpu_ms": cpus, "found": found,
            "peak_rss_mb": peak_rss_mb(), "notes": store.notes}


def cold(open_store: Opener, folder: Path, workload: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    store = open_store(folder, False)
    opened = time.perf_counter() - started
    started = time.perf_counter()
    hits = store.search(workload["questions"][0], workload["top_k"])
    searched = time.perf_counter() - started
    return {"open_s": opened, "first_search_s": searched, "since_runner_start_s": time.perf_counter() - STARTED,
            "hits": hits, "peak_rss_mb": peak_rss_mb()}


PHASES = {"build": build, "cold": cold}


def serve(open_store: Opener, phases: dict[str, Callable[..., dict[str, Any]]] | None = None) -> None:
    """Answer the one request on stdin (see the module's docstring); a failure is a JSON error, exit 1.
    `phases`: a runner's own phases beside build and cold, called like them."""
    request = json.loads(sys.stdin.read())
    answer_to = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever the libraries print goes to stderr
    try:
        workload = json.loads(Path(request["workload"]).read_text(encoding="utf-8"))
        answer = {**PHASES, **(phases or {})}[request["phase"]](open_store, Path(request["store"]), workload)
        code = 0
    except Exception as error:  # noqa: BLE001 - the driver reports it as this system's row
        traceback.print_exc()
        answer, code = {"error": f"{type(error).__name__}: {error}".splitlines()[0]}, 1
    answer_to.write(json.dumps(answer))
    answer_to.close()
    sys.stdout.flush()
    os._exit(code)  # skip the libraries' exit hooks (telemetry flushes, thread joins): they are not timed
