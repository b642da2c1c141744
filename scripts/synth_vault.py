"""Make a synthetic vault of N memories quickly (files written directly, one bulk commit).

Used by the benchmarks: `python scripts/synth_vault.py PATH N`.
"""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memvault.vault import layout
from memvault.vault.entry import Entry
from memvault.vault.markdown import render
from memvault.vault.store import Vault

SUBJECTS = ["Alice", "Bob", "The user", "Priya", "Tomás", "Chen", "The team", "Grandma", "Noor", "Olek"]
VERBS = ["likes", "visited", "is learning", "bought", "wants to try", "cooked", "fixed", "read about", "hates", "plans"]
OBJECTS = ["green tea", "Lisbon", "the violin", "a red bicycle", "Korean barbecue", "the garden fence", "Rust",
           "sourdough bread", "jazz from the sixties", "a trip to Kyoto", "the quarterly report", "rock climbing",
           "a vintage camera", "Spanish lessons", "the old piano", "marathon training", "board games", "tomatoes"]


def sentence(rng: random.Random, i: int) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} (note {i})."


def make(path: Path, count: int, conversations: int = 10, seed: int = 7) -> Vault:
    vault = Vault.init(path)
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for i in range(count):
        entry = Entry(sentence(rng, i), conversation_id=f"c{i % conversations}",
                      created_at=start + timedelta(minutes=i, milliseconds=rng.randrange(1000)))
        target = vault.root / layout.relative_path(entry)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(entry), encoding="utf-8")
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "add", "-A", "entries"], cwd=vault.root, check=True, env=env)
    # No automatic `git gc` after this huge commit: packing 100k objects takes minutes the benchmark would pay.
    subprocess.run(["git", "-c", "gc.auto=0", "commit", "-qm", f"synthetic vault of {count}"], cwd=vault.root,
                   check=True, env=env)
    return vault


if __name__ == "__main__":
    make(Path(sys.argv[1]), int(sys.argv[2]))
