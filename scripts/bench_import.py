"""Import throughput: conversations and turns per second for a generated ChatGPT export.

    python scripts/bench_import.py                          # 1,000 conversations of 10 turns
    python scripts/bench_import.py --conversations 200 --turns 20 --json

A real `memvault import` process into a fresh vault (its own HOME, no git identity), then the same
import again (nothing to write: the idempotent run). The machine's load average is printed beside the
figures: on a shared machine, read them with it. Embedding is not included: the index catches up at the
next search (`memvault reindex`), as after any import.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.torture import isolated_environment  # noqa: E402
from tests.support.exports import write_chatgpt_export  # noqa: E402


def run_import(export: Path, vault: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memvault", "import", str(export), "--vault", str(vault), "--json"],
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"import failed: {done.stderr.strip()}")
    return seconds, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10, help="messages per conversation")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-import-") as tmp:
        root = Path(tmp)
        isolated_environment(root / "home")
        export = write_chatgpt_export(root / "conversations.json", args.conversations, args.turns)
        export_mb = round(export.stat().st_size / 1e6, 1)
        vault = root / "vault"
        subprocess.run([sys.executable, "-m", "memvault", "init", "--vault", str(vault)], check=True,
                       capture_output=True)
        load_before = os.getloadavg()
        first, report = run_import(export, vault)
        load_after = os.getloadavg()
        second, again = run_import(export, vault)
    figures = {
        "conversations": report["imported"], "turns": report["turns"], "seconds": round(first, 2),
        "conversations_per_s": round(report["imported"] / first, 1), "turns_per_s": round(report["turns"] / first, 1),
        "second_run_seconds": round(second, 2), "second_run_entries": again["entries"],
        "load_average_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        "export_mb": export_mb,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"first run: {figures['conversations']} conversations, {figures['turns']} turns in {first:.1f} s: "
          f"{figures['conversations_per_s']} conversations/s, {figures['turns_per_s']} turns/s "
          f"(one commit per conversation)")
    print(f"second run: {second:.1f} s, {again['entries']} entries written")
    print(f"load average (1 min) before / after the first run: {load_before[0]:.2f} / {load_after[0]:.2f} "
          f"on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
