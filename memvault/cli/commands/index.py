"""`memvault reindex`: bring the index in step with the files (from cron too), or `--watch` them."""

import sys
from typing import Annotated

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say, warn


def progress_bar():
    """A rich progress bar for a terminal, as a (callback, context manager) pair."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    bar = Progress("embedding", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), transient=True,
                   console=None)
    task = bar.add_task("embedding", total=None)
    return (lambda done, total: bar.update(task, completed=done, total=total)), bar


def describe(report) -> str:
    text = (f"{report.added} added, {report.updated} updated, {report.moved} moved, {report.removed} removed, "
            f"{report.unchanged} unchanged; {report.embedded} embedded in {report.seconds:.2f} s")
    return text + (f" (rebuilt: {report.rebuild_reason})" if report.rebuilt else "")


@command("reindex")
def reindex(
    full: Annotated[bool, typer.Option("--full", help="Rebuild from scratch (re-embed everything).")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Keep following edits until Ctrl-C.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing unless something is wrong "
                                        "(for cron).")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Update the search index from the files: embeds only new or changed files (by content hash).

    Exit code 0 when the index matches the files, 1 when some files could not be read (they are listed)."""
    memvault = open_memvault(vault, config)
    interactive = sys.stderr.isatty() and not quiet and not json
    if interactive:
        callback, bar = progress_bar()
        memvault.on_progress = callback
        with bar:
            report = memvault.reindex(full=full)
    else:
        report = memvault.reindex(full=full)
    for path, reason in report.broken:
        warn(f"skipped {path}: {reason}")
    for path in memvault.stray_files():
        warn(f"ignored {path}: not in a folder memvault reads entries from (a fact goes in "
             f"entries/<conversation>/facts/)")
    if json:
        print_json(report.to_dict())
    elif not quiet:
        say(describe(report))
    if watch:
        follow(memvault, quiet)
    if report.broken:
        raise typer.Exit(1)


def follow(memvault, quiet: bool) -> None:
    """Re-sync after each burst of edits until Ctrl-C. The watcher vouches for the vault meanwhile: a
    reindex it vouches for stats no file (memvault.index.vouch)."""
    import threading

    def resync(_paths=None) -> bool:
        report = memvault.reindex()
        if not quiet and (report.added or report.updated or report.removed or report.moved):
            say(describe(report))
        return not report.broken  # a reindex must go on reporting a broken file

    ready = threading.Event()

    def announce() -> None:
        ready.wait()
        if not quiet:
            say(f"Watching {memvault.root} (Ctrl-C to stop)")

    threading.Thread(target=announce, daemon=True).start()
    try:
        memvault.watch(resync, ready=ready, vouch=sys.platform.startswith("linux"))  # vouching reads inotify
    except KeyboardInterrupt:
        if not quiet:
            say("Stopped.")
