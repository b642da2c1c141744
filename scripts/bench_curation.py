"""Where `add` and `chat` spend their time outside the LLM, against a real local model server.

    python scripts/bench_curation.py [--repeat 5]

Starts SmolLM2 (xllamacpp) on loopback, then for curated `add` and a `chat` turn measures wall time
and the time spent inside LLM calls (a timing wrapper around the client): the difference is
memvault's own cost (retrieval, files, git, index). Also times `memvault add --no-llm` as a real
process, start to finish.
"""

from __future__ import annotations

import argparse
import os
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
from tests.support.local_llm import local_llm_server  # noqa: E402

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
    args = parser.parse_args()
    with local_llm_server() as base_url, tempfile.TemporaryDirectory() as tmp:
        config = {"vault.path": f"{tmp}/vault", "llm.model": "openai/smollm2", "llm.api_base": base_url,
                  "llm.api_key": "none", "llm.timeout": 300,
                  "llm.max_tokens": 200}  # answer length is not what is measured here
        memvault = Memvault.open(settings.load(None, config), create=True)
        llm = TimedLLM(memvault.llm())
        memvault.add("warm-up: I like tea", llm=llm)  # loads the model, litellm and the index once
        rows = []
        for i in range(args.repeat):
            llm.seconds = 0.0
            start = time.perf_counter()
            memvault.add(SENTENCES[i % len(SENTENCES)], llm=llm)
            wall = time.perf_counter() - start
            rows.append(("add", wall, llm.seconds))
        chat = MemoryChat(memvault)
        for i in range(args.repeat):
            llm.seconds = 0.0
            history = [{"role": "user", "content": f"What do you know about me? ({i})"}]
            start = time.perf_counter()
            turn = chat.prepare(history)
            answer = "".join(llm.stream(turn.messages))
            chat.persist(turn, history[0]["content"], answer)
            wall = time.perf_counter() - start  # what the user waits for; curation runs after
            rows.append(("chat turn", wall, llm.seconds))
            chat.curate(turn, history, llm, background=False)
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@x"}
        cli = []
        for i in range(args.repeat):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "memvault", "add", "--no-llm", f"verbatim {i}", "--vault",
                            f"{tmp}/vault"], check=True, capture_output=True, env=env)
            cli.append(time.perf_counter() - start)
    print(f"{'operation':<12} {'wall p50':>9} {'LLM p50':>9} {'outside LLM p50':>16}")
    for name in ("add", "chat turn"):
        picked = [r for r in rows if r[0] == name]
        print(f"{name:<12} {median([r[1] for r in picked]):>8.2f}s {median([r[2] for r in picked]):>8.2f}s "
              f"{median([r[1] - r[2] for r in picked]):>15.3f}s")
    print(f"{'add --no-llm':<12} {median(cli):>8.2f}s {'-':>9} {median(cli):>15.3f}s  (a whole process)")


if __name__ == "__main__":
    main()
