"""An erase under way (docs/architecture.md, "Erasure"): written under .memvault/ before the history
rewrite, removed once every later step is done, so an erase a kill cut short is finished by the next
`memvault erase` or `doctor --fix` (core/erasing.py). It holds what those steps need: the memories' ids,
the paths the rewrite removes or scrubs (read again by the index), the erased blobs' ids, the erasure
record's message (counts, blob ids) and, until the rewrite lands, the criteria the selection is made
from again (a `--matching` text among them: git's objects hold it then too), so an erase killed before
its rewrite is run again rather than forgotten. Once the rewrite has landed the criteria go (`landed`):
from then on it holds nothing of the erased content."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from memvault.vault.git.rewrites import load_json, save_json

FILE_NAME = "erase-intent.json"
TEST_KILL = "MEMVAULT_TEST_KILL_ERASE_AT"  # tests only: the step at which the erase's process is killed


def start(state_dir: Path, ids, blobs, message: str, criteria: dict, paths=()) -> None:
    """`paths`: the files the rewrite removes or scrubs (ids and paths, no content), which the index reads again."""
    save_json(state_dir / FILE_NAME, {"ids": sorted(ids), "blobs": sorted(blobs), "message": message,
                                      "criteria": criteria, "paths": sorted(paths)})


def landed(state_dir: Path) -> None:
    """The rewrite landed: the criteria (maybe an erased text) are no longer needed, nor kept."""
    intent = pending(state_dir)
    if intent is not None and "criteria" in intent:
        save_json(state_dir / FILE_NAME, {k: v for k, v in intent.items() if k != "criteria"})


def pending(state_dir: Path) -> dict | None:
    """The intent of an erase cut short, or None."""
    intent = load_json(state_dir / FILE_NAME)
    fields = (isinstance(intent.get("message"), str), isinstance(intent.get("ids"), list),
              isinstance(intent.get("blobs"), list))
    return intent if all(fields) else None


def done(state_dir: Path) -> None:
    (state_dir / FILE_NAME).unlink(missing_ok=True)


def reached(step: str) -> None:
    """A test's kill -9 at `step` (the environment names it); nothing otherwise."""
    if os.environ.get(TEST_KILL) == step:
        os.kill(os.getpid(), signal.SIGKILL)
