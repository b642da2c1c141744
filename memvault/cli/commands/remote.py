"""`memvault push` / `memvault pull`: a vault moves between machines with git."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say

RemoteArg = Annotated[Optional[str], typer.Argument(help="Git remote [default: vault.git_remote, else origin].",
                                                    show_default=False)]


@command("push")
def push(remote: RemoteArg = None,
         force_with_lease: Annotated[bool, typer.Option("--force-with-lease", help="Replace the remote's history "
                                                        "after `memvault erase` (only if it is what this vault "
                                                        "last saw there).")] = False,
         vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Push the vault's commits to a git remote."""
    name = open_memvault(vault, config).push(remote, force_with_lease)
    print_json({"pushed": name}) if json else say(f"Pushed to {name}.")


@command("pull")
def pull(remote: RemoteArg = None, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Pull commits from a git remote (rebasing local ones) and update the index."""
    memvault = open_memvault(vault, config)
    report = memvault.pull(remote)
    if json:
        print_json(report.to_dict())
    else:
        say(f"Pulled: {report.added} added, {report.updated} updated, {report.removed} removed.")
