"""Options and arguments shared by several commands, defined once (with their shell completion)."""

import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.completion import (
    complete_conversation,
    complete_deleted_memory_id,
    complete_live_memory_id,
    complete_memory_id,
)

VaultOpt = Annotated[Optional[Path], typer.Option(
    "--vault", help="Vault folder [env: MEMVAULT_VAULT; default: ~/.local/share/memvault/vault].",
    show_default=False, rich_help_panel="Common")]
ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="Config file [env: MEMVAULT_CONFIG; default: ~/.config/memvault/config.toml].",
    show_default=False, rich_help_panel="Common")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for programs.", rich_help_panel="Common")]
ConversationOpt = Annotated[Optional[str], typer.Option(
    "--conversation", "-c", help="Conversation name.", show_default=False, autocompletion=complete_conversation)]
UserOpt = Annotated[Optional[str], typer.Option("--user", help="user_id scope.", show_default=False)]
AgentOpt = Annotated[Optional[str], typer.Option("--agent", help="agent_id scope.", show_default=False)]
RunOpt = Annotated[Optional[str], typer.Option("--run", help="run_id scope.", show_default=False)]

# Memory ids: `show` and `history` take deleted memories too; `edit` and `rm` only live ones.
IdArg = Annotated[str, typer.Argument(help="Memory id, or a unique prefix of one.", show_default=False,
                                      autocompletion=complete_memory_id)]
LiveIdArg = Annotated[str, typer.Argument(help="Memory id, or a unique prefix of one.", show_default=False,
                                          autocompletion=complete_live_memory_id)]
DeletedIdArg = Annotated[str, typer.Argument(help="Id of a deleted memory, or a unique prefix of one.",
                                             show_default=False, autocompletion=complete_deleted_memory_id)]
LiveIdsArg = Annotated[list[str], typer.Argument(help="Memory ids or unique prefixes.", show_default=False,
                                                 autocompletion=complete_live_memory_id)]
HistoryIdArg = Annotated[Optional[str], typer.Argument(
    help="Memory id or prefix; without it, the vault's log.", show_default=False, autocompletion=complete_memory_id)]
AsOfOpt = Annotated[Optional[str], typer.Option(
    "--as-of", help="The vault as it was then: a date (YYYY-MM-DD, end of day UTC), an ISO 8601 time or a commit.",
    show_default=False)]
# The address of `serve` and `ui`.
HostOpt = Annotated[Optional[str], typer.Option("--host", help="Address to bind (default 127.0.0.1; any other "
                                                "needs server.api_key / MEMVAULT_API_KEY).", show_default=False)]
PortOpt = Annotated[Optional[int], typer.Option("--port", "-p", min=0, max=65535, help="Port (default 8765; 0: any "
                                                "free port).", show_default=False)]


def finite(value: Optional[float]) -> Optional[float]:
    """Callback for float options: nan passes every min/max check (its comparisons are all false)."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value

# A write to a team vault (vault.shared): never without this option.
ToOpt = Annotated[Optional[str], typer.Option(
    "--to", help="Write to this shared (team) vault of vault.shared, by name; 'shared': the only one.",
    show_default=False)]
