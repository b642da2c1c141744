"""`memvault log`: the vault's commits and the facts it refused, as a table or JSON, filterable by
operation and conversation."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, ConversationOpt, JsonOpt, VaultOpt
from memvault.cli.output import age, print_json, table

OPERATIONS = ("init", "add", "chat", "update", "delete", "gc", "reset")
REFUSED = "refused"  # not a commit: a fact memvault did not store (the refusal log, .memvault/refusals.jsonl)


@command("log")
def log(
    operation: Annotated[Optional[str], typer.Option("--operation", "-o", show_default=False, help=(
        "Only commits of this operation (" + ", ".join(OPERATIONS) + ", ...), or `refused`: only the facts "
        "memvault refused to store, with the reason."))] = None,
    conversation: ConversationOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=0, help="Commits to show, newest first; 0 for all.")] = 20,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """The vault's commits: who changed what, read from git's trailers (Memvault-Operation, -Conversation,
    -Event); and, among them by time, each fact refused (a DROP: never stored, so in no commit) with its
    reason."""
    memvault = open_memvault(vault, config)
    commits = [] if operation == REFUSED else memvault.commits(limit, operation, conversation)
    refused = memvault.refusals(conversation=conversation) if operation in (None, REFUSED) else []
    rows = sorted([(c.time, c) for c in commits] + [(r.at, r) for r in refused], key=lambda row: row[0],
                  reverse=True)
    rows = rows[:limit] if limit else rows
    if json:
        print_json([item.to_dict() for _, item in rows])
        return
    table(["commit", "age", "operation", "conversation", "events", "subject"],
          [line_of(item) for _, item in rows])


def line_of(item) -> list[str]:
    """A commit's row, or a refusal's: no commit, operation `refused`, its reason and text."""
    if hasattr(item, "sha"):
        return [item.sha[:8], age(item.time), (item.trailers.get("Operation") or [""])[0],
                (item.trailers.get("Conversation") or [""])[0], str(len(item.trailers.get("Event", []))), item.subject]
    return ["-", age(item.at), REFUSED, item.conversation or "", "DROP", f"{item.memory} ({item.reason})"]
