"""`memvault sync` and `memvault clone`: one memory on many devices, through any git remote."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.commands.remote import RemoteArg
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say

QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing unless something failed (for cron).")]


@command("sync")
def sync(remote: RemoteArg = None, quiet: QuietOpt = False, vault: VaultOpt = None, config: ConfigOpt = None,
         json: JsonOpt = False) -> None:
    """Fetch, merge and push the vault's commits (safe from cron: one sync at a time).

    Files several devices write merge by kind, never with conflict markers; the index follows only
    the files that changed. Exit codes: 0 synced, 1 error, 2 usage, 3 another sync is running,
    4 the remote is unreachable, 5 other devices kept pushing first (run it again), 6 an
    uncommitted edit blocks the merge."""
    report = open_memvault(vault, config).sync(remote)
    if json:
        print_json(report.to_dict())
        return
    if report.recovered:
        say("note: a sync cut short earlier was finished first")
    for line in report.fallbacks:
        say(f"note: {line}")  # conflicts git could not express, settled as said
    if not quiet:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(report.by_kind().items()))
        pushed = ", pushed" if report.pushed and report.outcome != "pushed" else ""
        pushed += f" (after {report.attempts} tries: other devices pushed meanwhile)" if report.attempts > 1 else ""
        say(f"Synced with {report.remote}: {report.outcome}, {len(report.changed)} file(s) changed here{pushed}"
            f"{f' (merges: {kinds})' if kinds else ''}.")


@command("clone")
def clone(
    url: Annotated[str, typer.Argument(help="The git remote holding the vault.", show_default=False)],
    path: Annotated[Optional[Path], typer.Argument(help="Where the vault goes (default: --vault or the default).",
                                                   show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Make a vault from a git remote (another device's); its index is built on first use."""
    from memvault import settings as settings_module
    from memvault.core import Memvault

    settings = settings_module.load(config, {"vault.path": str(path or vault) if (path or vault) else None})
    memvault = Memvault.clone(url, settings)
    root = str(memvault.root)
    print_json({"vault": root, "remote": url}) if json else say(f"Cloned {url} into {root}.")
