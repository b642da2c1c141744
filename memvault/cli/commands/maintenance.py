"""`memvault gc`: eviction, tombstone purge, git gc and index vacuum."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say, table


@command("gc")
def gc(
    max_entries: Annotated[Optional[int], typer.Option("--max-entries", help="Facts and turns kept per "
                                                       "conversation [default: vault.max_entries, 500].",
                                                       show_default=False, min=1)] = None,
    purge_deleted: Annotated[Optional[str], typer.Option("--purge-deleted", help="Remove tombstones deleted "
                                                         "longer ago than this (e.g. 90d); git keeps them.",
                                                         show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would go; change nothing.")] = False,
    no_git_gc: Annotated[bool, typer.Option("--no-git-gc", help="Skip `git gc`.")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Evict the oldest facts and turns above the per-conversation limit (summaries exempt) and tidy up."""
    memvault = open_memvault(vault, config)
    plan = memvault.gc(max_entries, purge_deleted, dry_run=dry_run, git_gc=not no_git_gc)
    gone = [("EVICT", e) for e in plan.evict] + [("PURGE", e) for _, e in plan.purge]
    if json:
        print_json({"dry_run": dry_run, "results": [
            {"event": event, "id": e.id, "conversation": e.conversation_id, "role": e.role, "memory": e.text}
            for event, e in gone]})
        return
    if gone:
        table(["event", "id", "conversation", "role", "text"],
              [[event, e.id[:8], e.conversation_id, e.role, e.text] for event, e in gone],
              title="would go" if dry_run else None)
    say(("Dry run: " if dry_run else "") + f"{len(plan.evict)} evicted, {len(plan.purge)} purged.")
