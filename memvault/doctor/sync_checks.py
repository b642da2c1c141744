"""Checks of what other devices sent (docs/architecture.md, Sync, "Trust"): each only looks."""

from __future__ import annotations

from memvault.doctor.report import OK, Check


def check_erasure_records(vault) -> Check:
    """The erasure records in HEAD's history: how many are proven (acted on), and which commits merely
    claim an erasure their history does not show (refused: nothing was removed for them)."""
    from memvault.vault.forget import record as erasure_record

    if vault.git.head_sha() is None:
        return Check("erasure records", OK, "none")
    found = erasure_record.records(vault.root, "HEAD")
    good = erasure_record.proven(vault.root, found)
    refused = [record.commit[:12] for record in found if record not in good]
    detail = f"{len(good)} proven"
    if refused:
        detail += (f"; {len(refused)} refused, never acted on (a commit claims an erasure its own history does not "
                   f"show; someone who can push to the remote wrote it): {', '.join(refused)}")
    return Check("erasure records", OK, detail)
