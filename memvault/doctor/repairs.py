"""`memvault doctor --fix`: the safe fixes a diagnosis offers, each one call of the facade
(memvault.core.repairing), applied in the order of report.ACTIONS. To add a fix: an action name in
report.py, a function here taking (memvault, the paths the checks named), an entry in FIXES."""

from __future__ import annotations

from collections.abc import Callable

from memvault.doctor.report import (
    ADOPT,
    CLEAN,
    COMMIT,
    ERASE,
    REBUILD,
    RECOVER,
    REINDEX,
    RELAYOUT,
    REQUEUE,
    TRIPLES,
    UNLOCK,
    Diagnosis,
    listed,
)
from memvault.errors import MemvaultError, VaultError
from memvault.settings import Settings


def unlock(memvault, _paths: list[str]) -> str | None:
    removed = memvault.remove_stale_git_locks()
    return f"removed {len(removed)} stale git lock file(s): {listed(map(str, removed))}" if removed else None


def recover(memvault, _paths: list[str]) -> str:
    touched = memvault.finish_interrupted_write()
    return f"finished the write a crash cut short ({len(touched)} file(s))"


def erase(memvault, _paths: list[str]) -> str:
    try:
        count = memvault.finish_interrupted_erase()
    except MemvaultError as exc:
        return f"did not finish the erase a crash cut short: {exc}"
    if not count:
        return ("dropped the intent an older memvault left of an erase killed before its rewrite (history as it was: "
                "erase again)")
    from memvault.core.erasing import memories

    return f"finished the erase a crash cut short ({memories(count)}; git, the index and past indexes purged)"


def clean(memvault, _paths: list[str]) -> str | None:
    removed = memvault.remove_temp_files()
    return f"removed {len(removed)} temporary file(s) left by a crash" if removed else None


def commit(memvault, paths: list[str]) -> str | None:
    try:
        chosen = memvault.commit_left_files(paths)
    except VaultError as exc:
        return f"did not commit: {exc}"
    return f"committed {len(chosen)} entry file(s): {listed(chosen)}" if chosen else None


def adopt(memvault, _paths: list[str]) -> str:
    try:
        done = memvault.finish_adoption()
    except MemvaultError as exc:
        return f"did not finish the sync's adoption of an erased history: {exc}"
    return ("finished the adoption of an erased history a killed sync left" if done else
            "replayed the adoption of an erased history a killed sync left; `memvault sync` pushes it and prunes")


def requeue(memvault, turns: list[str]) -> str:
    memvault.requeue_curations(turns)
    return f"queued {len(turns)} turn(s) for curation again (the next `memvault serve` curates them)"


def triples(memvault, _paths: list[str]) -> str:
    dropped = memvault.drop_wrong_triples()
    if not dropped:
        return "no wrong triple left to drop"
    return f"dropped the triple of {len(dropped)} fact(s) whose text does not say it: {listed(dropped)}"


def reindex(memvault, _paths: list[str], full: bool = False) -> str:
    report = memvault.reindex(full=full)
    return (f"{'rebuilt' if full else 'updated'} the index: {report.added} added, {report.updated} updated, "
            f"{report.moved} moved, {report.removed} removed, {report.embedded} embedded")


def rebuild(memvault, paths: list[str]) -> str:
    return reindex(memvault, paths, full=True)


def relayout(memvault, paths: list[str]) -> str | None:
    moved = memvault.ensure_merge_setup()  # the format migrations, the move into day folders among them
    return f"moved {len(paths)} entry file(s) into their day folders, in one commit of renames" if moved else None


FIXES: dict[str, Callable[..., str | None]] = {
    UNLOCK: unlock, RECOVER: recover, ERASE: erase, CLEAN: clean, ADOPT: adopt, COMMIT: commit, REQUEUE: requeue,
    RELAYOUT: relayout, TRIPLES: triples, REBUILD: rebuild, REINDEX: reindex,
}


def repair(settings: Settings, diagnosis: Diagnosis, on_progress=None, kept_both: str | None = None) -> list[str]:
    """Apply the safe fixes the diagnosis offers, and `kept_both` (ours, theirs, both: a person's
    choice) to the core files where a sync kept both versions; returns one line per action taken."""
    from memvault.core import Memvault

    actions = diagnosis.repairs()
    if not actions and not kept_both:
        return []
    memvault = Memvault.open(settings)  # journals what a recovery puts back, for the index
    memvault.on_progress = on_progress
    done: list[str] = []
    try:
        for action in actions:
            paths = [path for check in diagnosis.checks if check.repair == action for path in check.paths]
            line = FIXES[action](memvault, paths)
            if line:
                done.append(line)
        if kept_both:
            done.append(settle_kept_both(memvault, kept_both))
    finally:
        memvault.close()
    return done


def settle_kept_both(memvault, choice: str) -> str:
    """The sync's kept-both blocks in core files settled as a person chose (core/syncing.py), one commit."""
    try:
        settled = memvault.resolve_kept_both(None, choice)
    except MemvaultError as exc:
        return f"did not settle the kept-both blocks: {exc}"
    return f"kept {choice} in {listed(map(str, settled))}" if settled else "no kept-both block left"
