"""`memvault doctor` as library code: health checks of the vault, its index and the models, and the
fixes that are safe to apply without asking.

Checks only look (vault_checks.py, index_checks.py, model_checks.py): the index is opened read-only,
files are read, nothing is written. `repair` (repairs.py) applies only what cannot lose anything,
through the facade (memvault.core.repairing):
- remove git lock files no running git holds (a killed git left them), and atomic-write temporary
  files a crash left; undo what a transaction cut short by a crash left uncommitted;
- reindex, or rebuild the index in full (it is derived from the files and disposable);
- drop a fact's triple (subject, predicate, object) that its text does not say (text.wording), in
  one commit: the text, the truth, is kept; the graph never held the triple;
- commit entry files a crash or a hand edit left uncommitted, but only files that parse, and a
  deleted file only when its memory lives on in another file (moved, or tombstoned in deleted/).
  A broken file is never rewritten or committed, a plain deletion is left for the person to
  restore or commit, and git states such as a detached HEAD or a merge are left to them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memvault.doctor.index_checks import check_index
from memvault.doctor.model_checks import check_embedder, check_llm, check_reranker
from memvault.doctor.refusal_checks import check_refusals
from memvault.doctor.repairs import repair
from memvault.doctor.report import FAIL, OK, Check, Diagnosis
from memvault.doctor.sync_checks import check_erasure_records
from memvault.doctor.vault_checks import (
    check_curation_queue,
    check_entry_files,
    check_git_locks,
    check_git_state,
    check_interrupted_erase,
    check_interrupted_write,
    check_layout,
    check_stray_files,
    check_sync,
    check_temp_files,
    check_triples,
    check_uncommitted,
    open_vault,
)
from memvault.errors import MemvaultError
from memvault.settings import Settings


def load_settings(config: str | Path | None, flags: dict[str, Any]) -> tuple[Settings | None, Check]:
    """The effective settings and a 'config' line saying where they came from (or why they failed)."""
    from memvault import settings as settings_module

    path = settings_module.config_path(config)
    try:
        settings = settings_module.load(config, flags)
    except MemvaultError as exc:
        return None, Check("config", FAIL, str(exc), fix=f"correct {path} (`memvault config show` explains each key)")
    where = f"{path}" if path.is_file() else f"defaults and environment ({path} does not exist)"
    return settings, Check("config", OK, f"from {where}; vault {settings.vault.path}")


def check_files(settings: Settings, embedder_identity: str | None) -> list[Check]:
    """Checks of the vault and its index (what --fix can change)."""
    vault, opened = open_vault(settings)
    if vault is None:
        return [opened]
    files, tombstones = check_entry_files(vault)
    return [opened, check_git_state(vault), check_git_locks(vault), check_interrupted_write(vault),
            check_interrupted_erase(vault), check_uncommitted(vault), check_temp_files(vault),
            check_curation_queue(vault), check_refusals(vault), check_sync(vault), check_erasure_records(vault),
            files, tombstones, check_triples(vault), check_layout(vault), check_stray_files(vault),
            *check_index(vault, embedder_identity)]


def diagnose(settings: Settings, llm_check: bool = True) -> Diagnosis:
    """Every check, in the order a person reads them: vault, index, models."""
    embedder, identity = check_embedder(settings)
    checks = [*check_files(settings, identity), embedder, check_reranker(settings), check_llm(settings, llm_check)]
    return Diagnosis(checks, identity)


def recheck(settings: Settings, before: Diagnosis) -> Diagnosis:
    """The vault and index checks again after repairs; model checks are kept from `before`."""
    models = [c for c in before.checks if c.name in ("embedder", "reranker", "llm")]
    head = [c for c in before.checks if c.name == "config"]
    return Diagnosis([*head, *check_files(settings, before.embedder_identity), *models], before.embedder_identity)




__all__ = ["Check", "Diagnosis", "check_embedder", "check_llm", "check_reranker", "diagnose", "load_settings",
           "recheck", "repair"]
