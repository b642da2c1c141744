"""Options shared by several commands, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

VaultOpt = Annotated[Optional[Path], typer.Option(
    "--vault", help="Vault folder [env: MEMVAULT_VAULT; default: ~/.local/share/memvault/vault].",
    show_default=False, rich_help_panel="Common")]
ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", help="Config file [env: MEMVAULT_CONFIG; default: ~/.config/memvault/config.toml].",
    show_default=False, rich_help_panel="Common")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for programs.", rich_help_panel="Common")]
ConversationOpt = Annotated[Optional[str], typer.Option(
    "--conversation", "-c", help="Conversation name.", show_default=False)]
UserOpt = Annotated[Optional[str], typer.Option("--user", help="user_id scope.", show_default=False)]
AgentOpt = Annotated[Optional[str], typer.Option("--agent", help="agent_id scope.", show_default=False)]
RunOpt = Annotated[Optional[str], typer.Option("--run", help="run_id scope.", show_default=False)]
