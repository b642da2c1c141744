"""`memvault doctor`: is the vault, its index and the models in order? `--fix` repairs what is safe."""

# No `from __future__ import annotations` here: typer would eval every annotation string on each start.
import sys
from typing import Annotated, Optional

import typer

from memvault.cli.base import command
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import Styled, print_json, say, table
from memvault.errors import UsageError

STATUS_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "skip": "dim"}


def show(diagnosis, title: str | None = None) -> None:
    table(["check", "status", "detail", "fix"],
          [[c.name, Styled(c.status, STATUS_STYLE[c.status]), c.detail, c.fix] for c in diagnosis.checks],
          title=title)


@command("doctor")
def doctor(
    fix: Annotated[bool, typer.Option("--fix", help="Apply the safe fixes: undo a write a crash cut short, remove "
                                      "git locks no live git holds and temporary files a crash left, commit entry "
                                      "files left uncommitted that parse, reindex or rebuild the index. Never "
                                      "rewrites an entry file.")] = False,
    kept_both: Annotated[Optional[str], typer.Option("--kept-both", help="With --fix: settle the core files where a "
                                                     "sync kept both versions, keeping ours (this device's), theirs, "
                                                     "or both (the headings dropped); one commit.",
                                                     metavar="ours|theirs|both", show_default=False)] = None,
    no_llm_check: Annotated[bool, typer.Option("--no-llm-check", help="Skip the call to the configured LLM "
                                               "(offline).")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Check the vault (git state, files that fail to parse, tombstones), the index and the models.

    Exit code 0 when nothing fails (warnings allowed), 1 when a check fails."""
    from memvault import doctor as checks
    from memvault.cli.commands.index import progress_bar
    from memvault.shapes import CHOICES

    if kept_both is not None and (not fix or kept_both not in CHOICES):
        raise UsageError(f"--kept-both goes with --fix and is one of {', '.join(CHOICES)}")
    settings, loaded = checks.load_settings(config, {"vault.path": str(vault) if vault else None})
    if settings is None:
        diagnosis = checks.Diagnosis([loaded])
    else:
        diagnosis = checks.diagnose(settings, llm_check=not no_llm_check)
        diagnosis.checks.insert(0, loaded)
    fixed: list[str] = []
    if fix and settings is not None and (diagnosis.repairs() or kept_both):
        if not json:
            show(diagnosis, title="before --fix")
        if not json and sys.stderr.isatty():
            callback, bar = progress_bar()
            with bar:
                fixed = checks.repair(settings, diagnosis, on_progress=callback, kept_both=kept_both)
        else:
            fixed = checks.repair(settings, diagnosis, kept_both=kept_both)
        diagnosis = checks.recheck(settings, diagnosis)
    if json:
        print_json({**diagnosis.to_dict(), "fixed": fixed})
    else:
        for line in fixed:
            say(f"fixed: {line}")
        show(diagnosis, title="after --fix" if fixed else None)
        if not fix and diagnosis.repairs():
            say("Run `memvault doctor --fix` to apply the fixes marked as safe.")
    if diagnosis.failed:
        raise typer.Exit(1)
