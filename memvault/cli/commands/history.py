"""`memvault history [ID]`: a memory's events, or the vault's recent log, from git."""

from typing import Annotated

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, HistoryIdArg, JsonOpt, VaultOpt
from memvault.cli.output import age, print_json, table


@command("history")
def history(
    memory_id: HistoryIdArg = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Commits to show without an id.")] = 20,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Show a memory's ADD/UPDATE/DELETE events with old and new text, read back from git."""
    memvault = open_memvault(vault, config)
    if memory_id:
        events = memvault.history(memory_id)
        if json:
            print_json([event.to_dict() for event in events])
            return
        table(["when", "event", "old", "new", "commit"],
              [[event.time.strftime("%Y-%m-%d %H:%M:%S"), event.event, event.old_memory, event.new_memory,
                event.commit[:8]] for event in events])
        return
    commits = memvault.log(limit)
    if json:
        print_json([commit.to_dict() for commit in commits])
        return
    table(["commit", "age", "operation", "subject"],
          [[c.sha[:8], age(c.time), (c.trailers.get("Operation") or [""])[0], c.subject] for c in commits])
