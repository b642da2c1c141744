"""Server time of the web page's pages on a vault of 10k memories (in-process, the real app).

    python scripts/bench_ui.py [--size 10000] [--repeat 15]

The vault is bench_scale's cached synthetic vault (.bench/scale/, built on first use), copied to a
scratch folder where one memory is edited six times (so it has a history, and six commits). Each
page is fetched through FastAPI's TestClient (ASGI in-process: no socket), `--repeat` times after
its first visit, and the page's own Server-Timing (the handler's time, template included) is
reported as median and p95, and the first visit's beside them, with the load average: other work on
the shared machine skews the figures. Each as-of page reads a commit no page read before it, so its
first visit is a real one (the past's rows or files read from git, nothing kept yet); an as-of
search would build the past's full index (memvault.index.past), and is not measured here.
Target: every page under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import cached_vault, open_memvault, percentile  # noqa: E402

TARGET_MS = 200.0


AS_OF = ("overview", "list", "timeline", "memory", "graph", "log")  # each reads its own commit: a first visit


def pages(memory_id: str, day: str) -> dict[str, str]:
    at = {name: f"HEAD~{len(AS_OF) - i}" for i, name in enumerate(AS_OF)}  # HEAD~6 .. HEAD~1
    return {
        "overview": "/ui/",
        "list": "/ui/memories",
        "list, page 100": "/ui/memories?offset=5000",
        "conversation timeline": "/ui/c/c3",
        "memory (with its history)": f"/ui/m/{memory_id}",
        "search": "/ui/search?q=who+likes+green+tea",
        "log": "/ui/log",
        "graph": "/ui/graph?entity=Alice",
        "as-of overview": f"/ui/?at={at['overview']}",
        "as-of list": f"/ui/memories?at={at['list']}",
        "as-of timeline": f"/ui/c/c3?at={at['timeline']}",
        "as-of memory": f"/ui/m/{memory_id}?at={at['memory']}",
        "as-of graph": f"/ui/graph?entity=Alice&at={at['graph']}",
        "as-of log": f"/ui/log?at={at['log']}",
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
        for count in range(1, len(AS_OF) + 1):  # a commit per as-of page, each visited first by that page
            core.update(row["id"], text=f"{row['text']} (edited {count} times)")
        core.close()
        # The copy gave every file a new inode and ctime, which git's index records: refreshed, as
        # in a vault that was never copied (else the first `git diff` re-reads all 10k files).
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=root, check=False)
        day = f"HEAD~{len(AS_OF)}"  # the synthetic commit: the vault before the edits
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
