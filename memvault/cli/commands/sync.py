"""`memvault sync` and `memvault clone`: one memory on many devices, through any git remote."""

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.commands.remote import RemoteArg
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say, warn

QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing unless something failed (for cron).")]


NoSharedOpt = Annotated[bool, typer.Option("--no-shared", help="Sync the personal vault only, not the team vaults "
                                           "of vault.shared.")]


@command("sync")
def sync(remote: RemoteArg = None, quiet: QuietOpt = False, no_shared: NoSharedOpt = False, vault: VaultOpt = None,
         config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Fetch, merge and push the vault's commits (safe from cron: one sync at a time), then each team
    vault of vault.shared with its own remote.

    Files several devices write merge by kind, never with conflict markers; the index follows only
    the files that changed. Exit codes: 0 synced, 1 error, 2 usage, 3 another sync is running,
    4 the remote is unreachable, 5 other devices kept pushing first (run it again), 6 an
    uncommitted edit blocks the merge; a team vault's failure is a warning line and its exit code,
    after the others are synced."""
    memvault = open_memvault(vault, config)
    team_only = bool(memvault.settings.vault.shared) and not no_shared and not remote and not memvault.has_remote()
    with stop_on_sigterm():
        report = None if team_only else memvault.sync(remote)  # a local-only personal vault beside team vaults
        team = [] if no_shared else memvault.sync_shared()
    if json:
        print_json({**(report.to_dict() if report else {"skipped": "it has no git remote"}),
                    **({"shared": [one.to_dict() for one in team]} if team else {})})
    else:
        if report is None and not quiet:
            say("Personal vault not synced: it has no git remote.")
        if report is not None:
            show_report(report, quiet)
        for one in team:
            if one.report is not None:
                show_report(one.report, quiet, f"shared vault {one.name!r}")
            elif one.skipped and not quiet:
                say(f"Shared vault {one.name!r} not synced: {one.skipped}.")
    failed = [one for one in team if one.error is not None]
    for one in failed:
        warn(f"shared vault {one.name!r} not synced: {one.error}")
    if failed:
        raise typer.Exit(failed[0].error.exit_code)


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM (a service manager's stop, `timeout`) stops a sync as Ctrl-C does: a fetch or push is
    killed with its ssh, a local git step is let finish, a killed sync's leftovers are mended next time."""
    import threading

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def show_report(report, quiet: bool, what: str = "") -> None:
    if report.recovered:
        say("note: a sync cut short earlier was finished first")
    for line in report.fallbacks:
        say(f"note: {line}")  # conflicts git could not express, settled as said
    if not quiet:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(report.by_kind().items()))
        pushed = ", pushed" if report.pushed and report.outcome != "pushed" else ""
        pushed += f" (after {report.attempts} tries: other devices pushed meanwhile)" if report.attempts > 1 else ""
        say(f"Synced {what + ' ' if what else ''}with {report.remote}: {report.outcome}, {len(report.changed)} "
            f"file(s) changed here{pushed}{f' (merges: {kinds})' if kinds else ''}.")


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


@command("resolve")
def resolve(
    files: Annotated[Optional[list[str]], typer.Argument(
        help="Core files (USER, core/USER.md...); default: every one where a sync kept both versions.",
        show_default=False)] = None,
    keep: Annotated[str, typer.Option("--keep", help="ours: this device's version; theirs: the other device's; "
                                      "both: both, the headings dropped; 1 or 2: that version as the file shows it.",
                                      metavar="ours|theirs|both|1|2", show_default=False)] = ...,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Settle the lines two devices changed in a core file, which a sync kept both versions of under
    a heading (`memvault doctor` lists them): one commit."""
    resolved = open_memvault(vault, config).resolve_kept_both(files or None, keep)
    if json:
        print_json({"keep": keep, "resolved": [str(rel) for rel in resolved]})
    elif not resolved:
        say("No core file holds lines a sync kept both versions of.")
    for rel in [] if json else resolved:
        say(f"Resolved {rel}: kept {keep} (committed).")
