"""`memvault log`: the vault's commits, as a table or JSON, filterable by operation and conversation."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, ConversationOpt, JsonOpt, VaultOpt
from memvault.cli.output import age, print_json, table

OPERATIONS = ("init", "add", "chat", "update", "delete", "gc", "reset")


@command("log")
def log(
    operation: Annotated[Optional[str], typer.Option("--operation", "-o", show_default=False, help=(
        "Only commits of this operation (" + ", ".join(OPERATIONS) + ", ...)."))] = None,
    conversation: ConversationOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="Commits to show, newest first; 0 for all.")] = 20,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """The vault's commits: who changed what, read from git's trailers (Memvault-Operation, -Conversation,
    -Event)."""
    memvault = open_memvault(vault, config)
    commits = memvault.commits(limit, operation, conversation)
    if json:
        print_json([commit.to_dict() for commit in commits])
        return
    table(["commit", "age", "operation", "conversation", "events", "subject"],
          [[c.sha[:8], age(c.time), (c.trailers.get("Operation") or [""])[0],
            (c.trailers.get("Conversation") or [""])[0], str(len(c.trailers.get("Event", []))), c.subject]
           for c in commits])
