"""`core show`, `core edit`, `journal`: the core memory files and the daily log."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, group, open_memvault, read_text_argument
from memvault.cli.commands.entries import edit_in_editor
from memvault.cli.options import ConfigOpt, JsonOpt, VaultOpt
from memvault.cli.output import print_json, print_text, say, warn
from memvault.errors import UsageError

core_app = group("core", "The core memory files (core/USER.md, IDENTITY.md, SOUL.md, MEMORY.md): always first in "
                 "chat and proxy prompts.")

NAMES = "USER, IDENTITY, SOUL or MEMORY"
NameArg = Annotated[str, typer.Argument(help=f"Which core file: {NAMES}.", show_default=False)]


@command("show", group=core_app)
def core_show(
    name: Annotated[Optional[str], typer.Argument(help=f"One core file ({NAMES}); default: all of them.",
                                                  show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Print the core files as a prompt gets them (comments left out, each cut to core.max_chars)."""
    from memvault.shapes import layout

    memvault = open_memvault(vault, config)
    memvault.ensure_core()
    names = [layout.core_path(name).stem] if name else list(layout.CORE_NAMES)
    shown = {found.name: found for found in memvault.core_context()}
    files = []
    for stem in names:
        rel, raw = memvault.read_core(stem)
        found = shown.get(rel.name)
        files.append({"name": rel.name, "path": str(rel), "text": found.text if found else "",
                      "chars": found.chars if found else 0, "cut": bool(found and found.cut), "raw": raw})
    if json:
        print_json({"core": files, "max_chars": memvault.settings.core.max_chars})
        return
    for item in files:
        say(f"== {item['path']} ({item['chars']:,} characters{', cut to core.max_chars' if item['cut'] else ''})")
        if item["text"]:
            print_text(item["text"] + "\n")
        else:
            say(f"(empty: `memvault core edit {item['name'][:-3]}` to write it)")


@command("edit", group=core_app)
def core_edit(
    name: NameArg,
    text: Annotated[Optional[str], typer.Option("--text", "-m", help="The file's new text, without opening an "
                                                "editor ('-' reads standard input).", show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Edit a core file in $EDITOR (or set it with --text); committed on save."""
    memvault = open_memvault(vault, config)
    rel, original = memvault.read_core(name)
    edited = read_text_argument(text) if text is not None else edit_in_editor(original, rel.stem)
    try:
        rel, changed = memvault.update_core(rel.stem, edited)
    except UsageError as exc:
        raise UsageError(f"{exc}; nothing changed") from None
    if json:
        print_json({"path": str(rel), "changed": changed})
    elif changed:
        say(f"Saved {rel} (committed)")
        found = next((f for f in memvault.core_context() if f.name == rel.name), None)
        if found and found.cut:
            warn(f"{rel} has {found.chars:,} characters: prompts get only the first "
                 f"{memvault.settings.core.max_chars:,} (core.max_chars)")
    else:
        say("No change.")



@command("journal")
def journal(
    day: Annotated[Optional[str], typer.Argument(help="The day, YYYY-MM-DD (default: today, UTC).",
                                                 show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Print a day's log: what that day's sessions learned (facts added, updated, deleted)."""
    memvault = open_memvault(vault, config)
    rel, text = memvault.journal(day)
    if json:
        print_json({"path": str(rel), "text": text})
    elif text is None:
        say(f"Nothing logged on {rel.stem}.")
    else:
        print_text(text)
