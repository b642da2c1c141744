"""`memvault init`: create a vault (idempotent)."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.app import command, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say


@command("init")
def init(
    path: Annotated[Optional[Path], typer.Argument(help="Where to create the vault (default: --vault or the default).",
                                                   show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Create a vault: a folder of markdown files in a git repository (an existing repository is used as is)."""
    memvault = open_memvault(path or vault, config, create=True)
    root = str(memvault.vault.root)
    if json:
        print_json({"vault": root})
    else:
        say(f"Vault ready at {root}")
