"""`add`, `list`, `show`, `edit`, `rm`, `restore`: one memory at a time, as files."""

import functools
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault, read_text_argument
from memvault.cli.options import (
    AgentOpt,
    AsOfOpt,
    ConfigOpt,
    ConversationOpt,
    DeletedIdArg,
    IdArg,
    JsonOpt,
    LiveIdArg,
    LiveIdsArg,
    RunOpt,
    ToOpt,
    UserOpt,
    VaultOpt,
)
from memvault.cli.output import age, for_terminal, print_json, result_line, say, table, warn
from memvault.errors import EntryFormatError, UsageError


def parse_meta(pairs: list[str] | None) -> dict[str, str]:
    meta: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--meta takes key=value, got {pair!r}")
        meta[key.strip()] = value
    return meta


@command("add")
def add(
    texts: Annotated[Optional[list[str]], typer.Argument(help="What to remember (several: one memory each); '-' "
                                                         "reads standard input.", show_default=False)] = None,
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    meta: Annotated[Optional[list[str]], typer.Option("--meta", help="Metadata key=value (repeatable).",
                                                      show_default=False)] = None,
    lines: Annotated[bool, typer.Option("--lines", help="Standard input holds one memory per line.")] = False,
    jsonl: Annotated[bool, typer.Option("--jsonl", help="Standard input holds one JSON object per line: text and "
                                        "front matter fields (role, conversation_id, created_at, user_id, agent_id, "
                                        "run_id, metadata, source); stored as given, in one commit.")] = False,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Store the text verbatim, even with an LLM "
                                         "configured.")] = False,
    model: Annotated[Optional[str], typer.Option("--model", help="litellm model string for this add.",
                                                 show_default=False)] = None,
    prompt_file: Annotated[Optional[Path], typer.Option("--prompt-file", help="A custom fact extraction prompt.",
                                                        show_default=False)] = None,
    policy: Annotated[bool, typer.Option("--policy", help="Apply chat's write policy: a fact may be held until "
                                         "the session ends, or dropped (HOLD/DROP events).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the ids of the memories stored "
                                        "(for `id=$(memvault add -q ...)`).")] = False,
    to: ToOpt = None, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Remember TEXT: with an LLM, extract and reconcile facts (ADD/UPDATE/DELETE/NONE), one commit per
    text; without one, store each text verbatim, all in one commit. `--to NAME`: in that team vault."""
    from memvault.shapes import load_prompt, named_scopes

    items = given_items(texts or [], lines, jsonl)
    memvault = open_memvault(vault, config, **{"llm.model": model}).target(to)
    if jsonl or (len(items) > 1 and (no_llm or not memvault.settings.llm.model)):
        defaults = {"conversation_id": conversation, "metadata": parse_meta(meta) or None,
                    **named_scopes(user, agent, run)}
        given = {key: value for key, value in defaults.items() if value}
        events = add_verbatim(memvault, [{**given, **item} for item in items])
        show_added({"results": [e.to_dict() for e in events], "notes": [], "turn_id": None, "curated": False},
                   events, json, quiet)
        return
    prompt = memvault.extraction_prompt(load_prompt(str(prompt_file)) if prompt_file else None)
    for item in items:  # validated before the first is stored
        memvault.clean_text(item["text"])
    write = memvault.policy_add if policy and not no_llm else functools.partial(memvault.add, infer=not no_llm)
    results = [write(item["text"], conversation or "default", named_scopes(user, agent, run), parse_meta(meta),
                     prompt=prompt) for item in items]
    shown = results[0].to_dict() if len(results) == 1 else {
        "results": [e.to_dict() for r in results for e in r.events], "notes": [n for r in results for n in r.notes],
        "turn_id": None, "curated": any(r.curated for r in results)}
    show_added(shown, [e for r in results for e in r.events], json, quiet)


def given_items(texts: list[str], lines: bool, jsonl: bool) -> list[dict]:
    """What `add` was given, as field dicts: TEXT arguments, or standard input whole, by line, or as JSONL."""
    if lines and jsonl:
        raise UsageError("--lines and --jsonl exclude each other")
    if (lines or jsonl) and texts not in ([], ["-"]):
        raise UsageError("--lines and --jsonl read standard input: give no TEXT, or '-'")
    if jsonl:
        return jsonl_items(read_text_argument("-"))
    if lines:
        found = [{"text": line} for line in read_text_argument("-").splitlines() if line.strip()]
        if not found:
            raise UsageError("standard input holds no line to remember")
        return found
    if len(texts) > 1 and "-" in texts:
        raise UsageError("'-' (standard input) cannot be mixed with other TEXT arguments")
    return [{"text": read_text_argument(text)} for text in (texts or [None])]


def jsonl_items(data: str) -> list[dict]:
    from memvault.transfer.jsonl import read_records

    items = [record for _, record in read_records(data, "standard input")]
    if not items:
        raise UsageError("standard input holds no JSON object to remember")
    return items


def add_verbatim(memvault, items: list[dict]) -> list:
    """Every item as an entry, all checked before any is written, then one commit (the guards of
    every add hold: a secret is a DROP event)."""
    from memvault.shapes import entry_from_fields

    entries = []
    for number, item in enumerate(items, start=1):
        try:
            entries.append(entry_from_fields(item, memvault.settings.limits.max_text_chars))
        except UsageError as exc:
            raise UsageError(f"memory {number}: {exc}; nothing stored") from None
    return memvault.add_as_given(entries).events


def show_added(shown: dict, events: list, json: bool, quiet: bool = False) -> None:
    for note in dict.fromkeys(shown["notes"]):  # the same note from each text: said once
        warn(note)
    if json:
        print_json(shown)
        return
    if not events:
        say("Nothing to remember in that.")
    for event in events:
        if quiet:
            if event.id and event.event in ("ADD", "UPDATE", "NONE"):
                sys.stdout.write(event.id + "\n")
            continue
        result_line(event.event, event.id, (f"{event.old_memory} -> {event.new_memory}" if event.event == "UPDATE"
                                            else event.new_memory or event.old_memory or "")
                    + (f" ({event.reason})" if event.reason else ""))


@command("list")
def list_(
    conversation: ConversationOpt = None,
    role: Annotated[Optional[str], typer.Option("--role", help="memory, user, assistant or summary.",
                                                show_default=False)] = None,
    user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    deleted: Annotated[bool, typer.Option("--deleted", help="Include soft-deleted entries.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="Show at most N (newest), 0 for all; picks the files "
                                       "by the creation time in their names, so it reads only those.")] = 0,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """List memories, turns and summaries, oldest first (files that fail to parse are reported)."""
    from memvault.shapes import ROLES, named_scopes

    if role and role not in ROLES:
        raise UsageError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
    memvault = open_memvault(vault, config)
    listing = memvault.list(conversation, role, named_scopes(user, agent, run), include_deleted=deleted, limit=limit)
    for problem in listing.broken:
        warn(f"skipped {problem}")
    entries = listing.entries
    if json:
        print_json([{**entry.to_dict(), "path": str(rel)} for rel, entry in entries])
        return
    rows = [[entry.id[:8], entry.role + (" (deleted)" if entry.deleted else ""), entry.conversation_id,
             age(entry.created_at), entry.text] for _, entry in entries]
    table(["id", "role", "conversation", "age", "text"], rows)


@command("show")
def show(memory_id: IdArg, as_of: AsOfOpt = None, vault: VaultOpt = None, config: ConfigOpt = None,
         json: JsonOpt = False) -> None:
    """Print a memory's file (front matter and text), today's or as it was `--as-of` a date or commit."""
    memvault = open_memvault(vault, config)
    if as_of is not None:
        rel, entry, content, past = memvault.entry_as_of(memory_id, as_of)
        extra = {"as_of": past.moment.isoformat(), "commit": past.sha}
    else:
        where, holder = memvault.holder(memory_id)  # a team vault's memory is shown too (read, never written)
        rel, entry, content = holder.entry_file(memory_id)
        extra = {"vault": where} if holder is not memvault else {}
    if json:
        print_json({**entry.to_dict(), "path": str(rel), **extra})
    else:  # a memory's text is anyone's: its escapes never reach the terminal, as with list and search
        sys.stdout.write(for_terminal(content))


def edit_in_editor(original: str, stem: str) -> str:
    """The text after $EDITOR. Its draft (a temporary file) is removed whatever the outcome: it may
    hold what the vault would never keep (a secret, which the vault redacts), and /tmp is shared."""
    import tempfile

    handle, name = tempfile.mkstemp(prefix=f"memvault-{stem}-", suffix=".md")
    draft = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(original)
        run_editor(draft)
        return draft.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError("the editor removed the draft; nothing changed") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the edited draft: {exc}; nothing changed") from None
    finally:
        draft.unlink(missing_ok=True)


def run_editor(path: Path) -> None:
    import shlex
    import subprocess

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        status = subprocess.call([*shlex.split(editor), str(path)])
    except OSError as exc:
        raise UsageError(f"cannot start editor {editor!r}: {exc.strerror} (set $EDITOR)") from None
    if status != 0:
        raise UsageError(f"editor {editor!r} exited with status {status}; nothing changed")


@command("edit")
def edit(
    memory_id: LiveIdArg,
    text: Annotated[Optional[str], typer.Option("--text", "-m", help="New text, without opening an editor "
                                                "('-' reads standard input).", show_default=False)] = None,
    to: ToOpt = None, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Edit a memory in $EDITOR (or set its text with --text); validated on save, then committed.
    A memory of a team vault needs `--to NAME`."""
    from memvault.shapes import parse

    memvault = open_memvault(vault, config).target(to, [memory_id])
    rel, entry = memvault.get_live(memory_id)
    if text is not None:
        updated = memvault.update(entry.id, text=read_text_argument(text))
    else:
        _, _, original = memvault.entry_file(entry.id)
        edited = edit_in_editor(original, entry.id[:8])
        if edited == original:
            say("No change.")
            return
        try:
            updated = memvault.update(entry.id, replacement=parse(edited, f"the edit of {entry.id[:8]}"))
        except (EntryFormatError, UsageError) as exc:
            raise UsageError(f"{exc}; nothing changed (the draft is removed)") from None
    if updated == entry:  # the facade made no commit
        print_json({"results": []}) if json else say("No change.")
        return
    if json:
        print_json({"results": [{"event": "UPDATE", "id": updated.id, "old_memory": entry.text,
                                 "memory": updated.text}]})
    else:
        result_line("UPDATE", updated.id, updated.text)


@command("rm")
def rm(
    memory_ids: LiveIdsArg,
    to: ToOpt = None, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Delete memories (soft: each moves to deleted/ and stays in git history). A memory of a team
    vault needs `--to NAME`."""
    memvault = open_memvault(vault, config).target(to, memory_ids)
    removed = memvault.delete(memory_ids)
    if json:
        print_json({"results": [{"event": "DELETE", "id": e.id, "memory": e.text} for e in removed]})
    else:
        for entry in removed:
            result_line("DELETE", entry.id, entry.text)


@command("restore")
def restore(memory_id: DeletedIdArg, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Bring back a memory deleted with `rm` (soft deleted): one commit, and it is searched again."""
    restored = open_memvault(vault, config).restore(memory_id)
    if json:
        print_json({"results": [{"event": "RESTORE", "id": restored.id, "memory": restored.text}]})
    else:
        result_line("RESTORE", restored.id, restored.text)
