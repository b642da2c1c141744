"""What a doctor's report is made of: one `Check` per line, the `Diagnosis` they form, and the --fix
actions a check can name (applied in the order of ACTIONS, by doctor.repairs)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
# --fix actions, in the order they are applied.
UNLOCK, RECOVER, CLEAN, COMMIT, REBUILD, REINDEX = "unlock", "recover", "clean", "commit", "rebuild", "reindex"
REQUEUE = "requeue"
ADOPT = "adopt"  # finish a sync's adoption of an erased history (before COMMIT: its replayed files are its own)
ERASE = "erase"  # finish an erase a kill cut short
TRIPLES = "triples"
RELAYOUT = "relayout"  # move an older vault's entry files into their day folders (after COMMIT: committed files move)
ACTIONS = (UNLOCK, RECOVER, ERASE, CLEAN, ADOPT, COMMIT, RELAYOUT, TRIPLES, REBUILD, REINDEX, REQUEUE)
SHOWN_PATHS = 5


@dataclass
class Check:
    """One line of the report. `repair` names the --fix action that resolves it (None: a person must)."""

    name: str
    status: str
    detail: str
    fix: str = ""
    repair: str | None = None
    paths: list[str] = field(default_factory=list)  # files concerned (for --fix and --json)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Diagnosis:
    checks: list[Check]
    embedder_identity: str | None = None  # None when the embedder did not load

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)

    def repairs(self) -> list[str]:
        wanted = {check.repair for check in self.checks if check.repair}
        if REBUILD in wanted:
            wanted.discard(REINDEX)  # a full rebuild covers it
        return [action for action in ACTIONS if action in wanted]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": not self.failed, "checks": [check.to_dict() for check in self.checks]}


def listed(paths, reasons: dict[str, str] | None = None) -> str:
    paths = list(paths)
    shown = [f"{p} ({reasons[p]})" if reasons and p in reasons else p for p in paths[:SHOWN_PATHS]]
    more = f" and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else ""
    return ", ".join(shown) + more

