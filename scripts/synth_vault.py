"""Make a synthetic vault of N memories quickly (files written directly, one bulk commit).

Used by the benchmarks: `python scripts/synth_vault.py PATH N`.

`make_proxy` makes the proxy's shape instead: many conversations of facts, and one huge `default`
holding half of everything as user and assistant turns (a client that sends no conversation id),
committed in dated batches so that `--as-of` has a past to go back to.
"""

from __future__ import annotations

import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import render
from memvault.vault.write.store import Vault

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
                "GIT_COMMITTER_EMAIL": "b@x", "PATH": "/usr/bin:/bin"}

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
    commit_all(vault.root, f"synthetic vault of {count}")
    return vault


def commit_all(root: Path, message: str, when: datetime | None = None) -> None:
    """One commit of everything under entries/ (dated `when`, else now)."""
    env = {**GIT_IDENTITY, **({"GIT_AUTHOR_DATE": when.isoformat(), "GIT_COMMITTER_DATE": when.isoformat()}
                              if when else {})}
    subprocess.run(["git", "add", "-A", "entries"], cwd=root, check=True, env=env)
    # No automatic `git gc` after this huge commit: packing 100k objects takes minutes the benchmark would pay.
    subprocess.run(["git", "-c", "gc.auto=0", "commit", "-qm", message], cwd=root, check=True, env=env)


def make_proxy(path: Path, count: int, conversations: int = 200, batches: int = 10, seed: int = 7,
               days: int = 365) -> Vault:
    """The proxy's shape: half of `count` as turns (user, assistant in turn) of one conversation,
    `default`; the other half as facts of `conversations` others. Spread over `days` up to now and
    committed in `batches` commits, each dated by its newest memory."""
    vault = Vault.init(path)
    rng = random.Random(seed)
    end = datetime.now(timezone.utc).replace(microsecond=0)
    start = end - timedelta(days=days)
    step = (end - start) / max(count, 1)
    per_batch = -(-count // batches)
    for i in range(count):
        created = start + step * i
        if i % 2:
            entry = Entry(sentence(rng, i), conversation_id=f"c{rng.randrange(conversations)}", created_at=created)
        else:
            entry = Entry(sentence(rng, i), role="user" if i % 4 == 0 else "assistant", conversation_id="default",
                          created_at=created)
        target = vault.root / layout.relative_path(entry)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(entry), encoding="utf-8")
        if (i + 1) % per_batch == 0 or i == count - 1:
            commit_all(vault.root, f"synthetic vault: memories up to {i + 1} of {count}", created)
    return vault


if __name__ == "__main__":
    make(Path(sys.argv[1]), int(sys.argv[2]))
