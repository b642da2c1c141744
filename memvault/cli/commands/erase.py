"""`memvault erase`: remove memories from the present and every commit (irreversible)."""

import sys
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say, table
from memvault.errors import UsageError


@command("erase")
def erase(
    ids: Annotated[Optional[list[str]], typer.Argument(help="Ids (or unambiguous prefixes) of memories to erase.",
                                                       show_default=False)] = None,
    conversation: Annotated[Optional[str], typer.Option("--conversation", "-c", help="Erase a whole conversation.",
                                                        show_default=False)] = None,
    user: Annotated[Optional[str], typer.Option("--user", help="Erase everything from or about this user_id "
                                                "(and facts drawn from their turns).", show_default=False)] = None,
    matching: Annotated[Optional[str], typer.Option("--matching", help="Erase memories holding this text, and the "
                                                    "sentences quoting it elsewhere.", show_default=False)] = None,
    regex: Annotated[bool, typer.Option("--regex", help="--matching is a regular expression.")] = False,
    reason: Annotated[str, typer.Option("--reason", help="Why, for the erasure record (no content!).")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List every file, commit and derived store it would "
                                          "touch; change nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Erase memories from the work tree, every commit, every pack and every derived store, leaving an
    erasure record (no content). Irreversible; rewrites history (push with --force-with-lease after)."""
    from memvault.core.erasing import memories

    memvault = open_memvault(vault, config)
    criteria = dict(ids=tuple(ids or ()), conversation=conversation, user=user, matching=matching, regex=regex)
    # The plan is shown or asked about; with --yes it would only repeat the erase's own selection
    # (a walk of every file and of history: a fifth of an erase of one memory at 100k memories).
    plan = memvault.erase(**criteria, dry_run=True) if dry_run or not yes else None
    if plan is not None and not dry_run and plan.files:
        if not sys.stdin.isatty():  # no one to ask: a pipe's "no answer" must not read as a silent abort
            raise UsageError("erase asks for confirmation and standard input is not a terminal: add -y (--yes) "
                             "to erase for good")
        typer.confirm(f"Erase {memories(len(plan.ids))} from {plan.commits} commit(s) for good?", abort=True)
    result = plan if dry_run else memvault.erase(**criteria, reason=reason)
    if json:
        print_json(result.to_dict())
        return
    if result.files or result.scrubbed:
        table(["what", "path or commit"], [["about the user", i] for i in result.about]
              + [["remove", p] for p in result.files]
              + [["scrub", p] for p in result.scrubbed] + [["rewrite", c[:12]] for c in result.commit_ids]
              + [["state", f".memvault/{p}"] for p in result.state_files],
              title="would touch" if dry_run else None)
    if result.finished:
        say(f"Finished first: the erase a crash cut short ({memories(result.finished)}).")
    counts = ", ".join(f"{role}: {n}" for role, n in sorted(result.roles.items())) or "none"
    say(("Dry run: " if dry_run else "Erased: ") + f"{memories(len(result.ids))} ({counts}) in {result.commits} "
        f"commit(s); {len(result.scrubbed)} files scrubbed; index rows {result.index_rows}; past indexes "
        f"{result.past_indexes}; state files {len(result.state_files)}"
        + ("" if dry_run else f"; record {(result.record or '')[:10]} in {result.seconds:.1f} s."))
    if result.resummarised or result.kept_scrubbed:  # an LLM was configured: it re-wrote them, or was refused
        say(f"Summaries re-written by the LLM from what remains: {len(result.resummarised)}; kept with the "
            f"quoting sentences removed: {len(result.kept_scrubbed)}"
            + "".join(f"\n  {line}" for line in result.kept_scrubbed))
