"""What `memvault sync` costs: one that brings 1,000 new memories (fetch, merge, index) to a device
holding a 10k vault, and one with nothing to do.

    python scripts/bench_sync.py [--size 10000] [--new 1000]

A synthetic vault (scripts/synth_vault.py) is pushed to a bare remote on disk and cloned as a second
device; both are indexed first (not timed). The first device adds `--new` memories (one commit) and
syncs; the second device's `memvault sync` is timed as a real process (interpreter start and the
embedding model's load included), then again with nothing new. Printed: seconds for each, the files
the sync changed, and how long the model alone takes to embed the new texts (the index's share).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synth_vault import make, sentence  # noqa: E402

from memvault import settings  # noqa: E402
from memvault.core import Memvault  # noqa: E402
from memvault.vault.format.entry import Entry  # noqa: E402


def memvault(*args: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memvault", *args], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memvault {' '.join(args)} failed: {done.stderr}")
    return took, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--new", type=int, default=1_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memvault-bench-sync-") as tmp:
        base = Path(tmp)
        os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
        remote = base / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        make(base / "laptop", args.size)
        subprocess.run(["git", "-C", str(base / "laptop"), "remote", "add", "origin", str(remote)], check=True)
        memvault("sync", "-q", "--vault", str(base / "laptop"))
        memvault("clone", str(remote), str(base / "desktop"))
        memvault("reindex", "--vault", str(base / "desktop"))  # the desktop's index of the 10k (not timed)

        laptop = Memvault.open(settings.load(None, {"vault.path": str(base / "laptop")}))
        rng = random.Random(27)
        laptop.add_entries([Entry(sentence(rng, args.size + i), conversation_id=f"c{i % 10}") for i in range(args.new)],
                           f"memvault add: {args.new} memories")
        laptop.close()
        memvault("sync", "-q", "--vault", str(base / "laptop"))
        memvault("add", "A memory of the desktop's own", "--vault", str(base / "desktop"))  # a merge, not a ff

        took_new, out = memvault("sync", "--json", "--vault", str(base / "desktop"))
        report = json.loads(out)
        took_none, out_none = memvault("sync", "--json", "--vault", str(base / "desktop"))
        # How much of the first figure is the embedding model (the same 1,000 texts, model loaded first).
        from memvault.models.embedders import load_embedder

        embedder = load_embedder(settings.Settings().embedder.model, 64, "")
        embedder.embed(["warm up"])
        rng = random.Random(27)
        texts = [sentence(rng, args.size + i) for i in range(args.new)]
        start = time.perf_counter()
        for i in range(0, len(texts), 64):
            embedder.embed(texts[i:i + 64])
        took_embed = time.perf_counter() - start
        print(f"vault {args.size:,} memories on both devices, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        print(f"sync bringing {args.new:,} new memories (fetch, merge, index): {took_new:.2f} s, "
              f"{len(report['changed']):,} files changed, outcome {report['outcome']}")
        print(f"  of which embedding the {args.new:,} texts alone (model loaded): {took_embed:.2f} s")
        print(f"no-change sync: {took_none:.2f} s, outcome {json.loads(out_none)['outcome']}")


if __name__ == "__main__":
    main()
