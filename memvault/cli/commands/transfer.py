"""`import` and `export`: other systems' conversations and memories in, a vault out as JSONL."""

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import ConfigOpt, ConversationOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, say, warn
from memvault.errors import UsageError

FORMAT_HELP = "auto, chatgpt, claude, mem0, agent-cli or jsonl."


@command("import")
def import_(
    paths: Annotated[list[str], typer.Argument(
        help="What to import: a ChatGPT or Claude export (conversations.json, its folder or .zip), an agent-cli "
             "memory folder, a JSONL file ('-' reads standard input), or a mem0 history.db and/or get_all "
             "dump (JSON).", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"Format of PATH: {FORMAT_HELP}")] = "auto",
    curate: Annotated[bool, typer.Option("--curate", help="Also extract facts from the user turns of chat "
                                         "exports with the configured LLM (in the same commit).")] = False,
    conversation: ConversationOpt = None,
    model: Annotated[Optional[str], typer.Option("--model", help="litellm model string for --curate.",
                                                 show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Import conversations or memories: one commit per conversation; run it again to resume an
    interrupted import (what is already in the vault is never written twice)."""
    from memvault.transfer import import_source

    memvault = open_memvault(vault, config, **{"llm.model": model})
    llm = None
    if curate:
        llm = memvault.llm()
        if llm is None:
            raise UsageError("--curate needs an LLM: set llm.model (memvault config set llm.model ...) or --model")
    prompt = memvault.extraction_prompt() if curate else None
    with progress_bar() as on_progress:
        report = import_source(memvault, paths, fmt.lower(), conversation, llm, prompt, on_progress)
    for note in report.notes:
        warn(note)
    if json:
        print_json(report.to_dict())
        return
    rate = report.imported / report.seconds if report.seconds else 0.0
    say(f"imported {report.imported} of {report.conversations} conversations ({report.entries} entries: "
        f"{report.turns} turns, {report.facts} facts curated) in {report.seconds:.1f} s ({rate:.1f}/s); "
        f"{report.unchanged} unchanged, {report.present} entries already in the vault")
    if report.entries:
        say("the search index catches up at the next search (or run `memvault reindex`)")


class progress_bar:
    """A progress bar on stderr while an import runs (only on a terminal: logs and pipes stay clean)."""

    def __enter__(self):
        from memvault.cli.output import err_console

        self.bar = None
        if not err_console().is_terminal:
            return None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            TextColumn("{task.description}"), console=err_console(), transient=True)
        self.bar.start()
        task = self.bar.add_task("", total=None)

        def on_progress(done: int, total: int, title: str) -> None:
            from memvault.cli.output import for_terminal

            self.bar.update(task, completed=done, total=total, description=for_terminal(title[:40]))

        return on_progress

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


@command("export")
def export(
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output format (jsonl: one entry a line, every "
                                     "front matter field; imported again it gives the same files).")] = "jsonl",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write to FILE instead of standard "
                                                   "output.", show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Export every entry (facts, turns, summaries, tombstones) as JSONL: `memvault export | memvault
    import - --vault OTHER` copies a vault."""
    from memvault.transfer import export_jsonl

    if fmt.lower() != "jsonl":
        raise UsageError(f"unknown export format {fmt!r} (expected jsonl)")
    memvault = open_memvault(vault, config)
    if output is None:
        count, skipped = export_jsonl(memvault, sys.stdout)
        sys.stdout.flush()
    else:
        with open_output(output) as out:
            count, skipped = export_jsonl(memvault, out)
    for problem in skipped:
        warn(f"skipped {problem}")
    say(f"exported {count} files" + (f" to {output}" if output else ""))


def open_output(path: Path):
    try:
        return path.expanduser().open("w", encoding="utf-8", newline="\n")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
