"""How long `memvault erase` takes on a big vault: N memories written over C commits (git fast-import,
so building it takes seconds), indexed, then one memory erased, then one user's memories.

    PYTHONPATH=. python scripts/bench_erase.py [--memories 10000] [--commits 5000] [--users 20] [--no-index]
"""

from __future__ import annotations

import argparse
import random
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import render

SUBJECTS = ["likes", "visited", "is learning", "bought", "wants to try", "cooked", "fixed", "read about"]
OBJECTS = ["green tea", "Lisbon", "the violin", "a red bicycle", "Korean barbecue", "the garden fence", "Rust",
           "sourdough bread", "jazz from the sixties", "a trip to Kyoto", "rock climbing", "a vintage camera"]


def fast_import_stream(memories: int, commits: int, users: int) -> tuple[bytes, list[Entry]]:
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    entries = [Entry(f"User {i % users} {rng.choice(SUBJECTS)} {rng.choice(OBJECTS)} (note {i}).",
                     conversation_id=f"c{i % 10}", user_id=f"u{i % users}",
                     created_at=start + timedelta(minutes=i)) for i in range(memories)]
    out = []
    per_commit = max(1, memories // commits)
    for number in range(commits):
        batch = entries[number * per_commit:(number + 1) * per_commit] if number < commits - 1 \
            else entries[number * per_commit:]
        stamp = int((start + timedelta(minutes=number)).timestamp())
        message = f"memvault add: {len(batch)} memories\n\nMemvault-Operation: add\n" + "".join(
            f"Memvault-Event: ADD {e.id}\n" for e in batch)
        out.append(f"commit refs/heads/main\ncommitter bench <b@x> {stamp} +0000\n"
                   f"data {len(message.encode())}\n{message}")
        if number == 0:
            out.append("M 100644 inline .gitignore\ndata 11\n.memvault/\n")
        for entry in batch:
            data = render(entry).encode()
            out.append(f"M 100644 inline {layout.relative_path(entry)}\ndata {len(data)}\n{data.decode()}\n")
    return "".join(out).encode(), entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=5_000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--no-index", action="store_true", help="Leave the index out (no embedding).")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        started = time.perf_counter()
        subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
        stream, entries = fast_import_stream(args.memories, args.commits, args.users)
        subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=stream, check=True)
        subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
        subprocess.run(["git", "gc", "-q"], cwd=root, check=True)
        count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=root, capture_output=True, text=True,
                               check=True).stdout.strip()
        print(f"vault: {len(entries):,} memories in {count} commits, built in {time.perf_counter() - started:.1f} s")
        memvault = Memvault.open(settings_module.load(None, {"vault.path": str(root)}))
        try:
            if not args.no_index:
                started = time.perf_counter()
                memvault.reindex()
                print(f"indexed in {time.perf_counter() - started:.1f} s")
            one = memvault.erase(ids=[entries[len(entries) // 2].id], reason="bench")
            print(f"erase one memory: {one.seconds:.1f} s ({one.commits} commit held it, "
                  f"{one.rewritten} commits rewritten)")
            user = memvault.erase(user="u7", reason="bench")
            print(f"erase one user (u7): {user.seconds:.1f} s ({len(user.ids)} memories, {user.commits} commits)")
        finally:
            memvault.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
