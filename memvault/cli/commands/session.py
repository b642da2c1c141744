"""`memvault session list|end`: the open sessions, and ending them (by hand, or from cron with --idle)."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, group, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import age, print_json, say, table

session_app = group("session", "Episodic sessions: list the open ones, end them.")


@command("list", group=session_app)
def session_list(vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """The open sessions: their user turns, held candidates and last activity."""
    from datetime import datetime, timezone

    records = open_memvault(vault, config).open_sessions()
    rows = [{"conversation": r.conversation, "user_turns": r.user_turns, "held": len(r.held),
             "last_activity": datetime.fromtimestamp(r.last_activity, timezone.utc)} for r in records]
    if json:
        print_json({"results": [{**row, "last_activity": row["last_activity"].isoformat()} for row in rows]})
    elif rows:
        table(["conversation", "user turns", "held", "last activity"],
              [[row["conversation"], row["user_turns"], row["held"], age(row["last_activity"])] for row in rows])
    else:
        say("No open session.")


@command("end", group=session_app)
def session_end(
    conversation: Annotated[Optional[str], typer.Argument(help="The conversation whose session ends [default: "
                                                          "every open session].", show_default=False)] = None,
    idle: Annotated[Optional[str], typer.Option("--idle", help="Only sessions without a turn for this long "
                                                "(e.g. 20m, 2h): fit for cron.", show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """End sessions: held facts are promoted or dropped, sessions of 3+ user turns get a summary; one
    commit per session."""
    from memvault.shapes import parse_age

    memvault = open_memvault(vault, config)
    minutes = parse_age(idle).total_seconds() / 60 if idle else None
    only = {conversation} if conversation else None
    ended = memvault.end_sessions(minutes, only=only)
    if json:
        print_json({"results": [result.to_dict() for result in ended]})
        return
    for result in ended:
        kept = sum(1 for e in result.events if e.event in ("ADD", "UPDATE"))
        dropped = [e for e in result.events if e.event == "DROP"]
        say(f"{result.conversation}: {result.user_turns} user turn(s), {kept} held fact(s) kept, "
            f"{len(dropped)} dropped" + (", summary written" if result.summary else ""))
        for event in dropped:
            say(f"  not remembered: {event.new_memory} ({event.reason})")
    if not ended:
        say("No session to end." if conversation is None else f"No open session in {conversation!r}.")
