"""Server time of the web page's pages on a vault of 10k memories (in-process, the real app).

    python scripts/bench_ui.py [--size 10000] [--repeat 15]

The vault is bench_scale's cached synthetic vault (.bench/scale/, built on first use), copied to a
scratch folder where one memory is edited three times (so it has a history). Each page is fetched
through FastAPI's TestClient (ASGI in-process: no socket), `--repeat` times after one warm-up (the
first as-of page builds the past's index, memvault.index.past: once per commit, then cached), and
the page's own Server-Timing (the handler's time, template included) is reported as median and p95,
and the first visit's beside them, with the load average: other work on the shared machine skews
the figures. Target: every page under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import cached_vault, open_memvault, percentile  # noqa: E402

TARGET_MS = 200.0


def pages(memory_id: str, day: str) -> dict[str, str]:
    return {
        "overview": "/ui/",
        "list": "/ui/memories",
        "list, page 100": "/ui/memories?offset=5000",
        "conversation timeline": "/ui/c/c3",
        "memory (with its history)": f"/ui/m/{memory_id}",
        "search": "/ui/search?q=who+likes+green+tea",
        "log": "/ui/log",
        "graph": "/ui/graph?entity=Alice",
        "as-of overview": f"/ui/?at={day}",
        "as-of list": f"/ui/memories?at={day}",
        "as-of timeline": f"/ui/c/c3?at={day}",
        "as-of memory": f"/ui/m/{memory_id}?at={day}",
        "as-of graph": f"/ui/graph?entity=Alice&at={day}",
        "as-of log": f"/ui/log?at={day}",
        "changes since then": f"/ui/changes?start={day}",
    }


def server_time(client, path: str) -> float:
    """The page's own time (its Server-Timing header), in ms."""
    answer = client.get(path)
    assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
    return float(re.search(r"dur=([\d.]+)", answer.headers["server-timing"]).group(1))


def main() -> None:
    from fastapi.testclient import TestClient

    from memvault import settings
    from memvault.ui.app import create_app

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    source, _ = cached_vault(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        shutil.copytree(source, root, symlinks=True)
        core = open_memvault(root)
        [row] = core.rows_page(limit=1).items
        for text in ("edited once", "edited twice", "edited three times"):
            core.update(row["id"], text=f"{row['text']} ({text})")
        core.close()
        day = "HEAD~3"  # the synthetic commit: the vault before the edits
        app = create_app(settings.load(None, {"vault.path": str(root)}))
        print(f"{args.size:,} memories, {args.repeat} runs per page after a warm-up, load {os.getloadavg()[0]:.1f}")
        print(f"{'page':<28} {'first ms':>9} {'median ms':>10} {'p95 ms':>8}  under {TARGET_MS:.0f} ms")
        with TestClient(app, base_url="http://127.0.0.1") as client:
            for name, path in pages(row["id"], day).items():
                # warm-up: the model for search, git's caches, the past's index (the first as-of page builds it)
                first = server_time(client, path)
                times = [server_time(client, path) for _ in range(args.repeat)]
                median, p95 = statistics.median(times), percentile(times, 95)
                print(f"{name:<28} {first:>9.0f} {median:>10.1f} {p95:>8.1f}  {'yes' if p95 < TARGET_MS else 'NO'}",
                      flush=True)
        print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
