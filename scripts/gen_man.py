"""Write man/memvault.1 from the CLI's own command tree and the settings, deterministically.

    python scripts/gen_man.py           # (re)write man/memvault.1
    python scripts/gen_man.py --check   # exit 1 if the committed page is out of date

COMMANDS lists every command, sub-group command and option found in the click tree of
`memvault.cli.app.app`, so commands added later appear with no change here; ENVIRONMENT lists
every setting of memvault/settings.py with its variable, type, default and the comment beside it.
The page carries the version, never a date, so regenerating it changes nothing until the code does.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAN_FILE = "man/memvault.1"
PROG = "memvault"

DESCRIPTION = """\
memvault gives language models a long-term memory that a person can read, edit and audit.
Each memory is a markdown file with YAML front matter in a folder that is a git repository:
every change is one commit, so `memvault history` and `git log` show what was remembered,
changed or forgotten, and when.

A search index (SQLite with sqlite-vec embeddings and FTS5 full text) is derived from the
files and kept under .memvault/; it follows the files and can always be rebuilt from them.
Search combines dense and lexical candidates, an optional cross-encoder reranker, recency and
diversity (MMR).

With an LLM configured (llm.model, any litellm model string), `add` and `chat` extract atomic
facts from what the user says and reconcile them with what is stored (ADD, UPDATE, DELETE);
without one, `add` stores the text as given.

Commands that use a vault take --vault and --config, and most take --json to print JSON for programs.
TEXT arguments read standard input when given as '-'. Memory ids may be shortened to any
unique prefix, as git does with commit hashes."""

EXAMPLES = [
    ("Create the default vault, remember something and find it again:",
     ["memvault init", "memvault add \"Alice prefers green tea\" -c alice",
      "memvault search \"what does Alice drink\""]),
    ("Pipe text in, and print JSON for a program:",
     ["echo \"The deploy key lives in 1Password\" | memvault add - --json"]),
    ("List, show, edit and delete (soft; git keeps everything):",
     ["memvault list -c alice", "memvault show 3f2a", "memvault edit 3f2a", "memvault rm 3f2a",
      "memvault history 3f2a"]),
    ("Use a local LLM for curation and chat:",
     ["memvault config set llm.model ollama/qwen3:4b", "memvault chat -c alice"]),
    ("Keep the index fresh from cron, and check everything:",
     ["memvault reindex --quiet", "memvault doctor --fix --no-llm-check"]),
    ("Install shell completion (bash; zsh and fish scripts are in completions/ too):",
     ["source completions/memvault.bash"]),
]

FILES = [
    ("$XDG_DATA_HOME/memvault/vault", "The default vault (~/.local/share/memvault/vault), a git repository."),
    ("<vault>/entries/<conversation>/facts/<YYYY>/<MM>/<DD>/", "Facts (role memory): <timestamp>__<id>.md."),
    ("<vault>/entries/<conversation>/turns/user/, turns/assistant/", "Chat turns, one file each, in day folders."),
    ("<vault>/entries/<conversation>/summaries/summary.md", "The conversation's rolling summary."),
    ("<vault>/entries/<conversation>/deleted/",
     "Tombstones of deleted and replaced entries (deleted_at, replaced_by)."),
    ("<vault>/entries/global/", "The conversation every search also looks in."),
    ("<vault>/.memvault/", "Derived state, ignored by git: index.sqlite (the search index), the write lock and "
                           "the journal of writes not yet indexed. Safe to delete; `memvault reindex` rebuilds it."),
    ("$XDG_CONFIG_HOME/memvault/config.toml", "The config file (~/.config/memvault/config.toml): TOML sections such as "
                                               "[llm] and [retrieval]; see `memvault config show`."),
]

OTHER_ENVIRONMENT = [
    ("MEMVAULT_CONFIG", "The config file to read instead of the default."),
    ("MEMVAULT_DEBUG", "Set to 1 to print the traceback of an internal error."),
    ("EDITOR, VISUAL", "The editor `memvault edit` opens (VISUAL first, then EDITOR, then vi)."),
    ("XDG_CONFIG_HOME", "Where the config file lives (default ~/.config)."),
    ("XDG_DATA_HOME", "Where the default vault lives (default ~/.local/share)."),
    ("XDG_CACHE_HOME, HOME", "Model libraries keep their caches under these."),
    ("OPENAI_API_KEY, ANTHROPIC_API_KEY, ...",
     "Read by litellm for the provider of llm.model when llm.api_key is empty."),
]

EXIT_STATUS = [
    ("0", "Success."),
    ("1", "An error: a memory not found, a vault or index problem, an LLM failure; "
          "`reindex` when some files could not be read; `doctor` when a check fails."),
    ("2", "A usage error: unknown option, malformed id, name or value."),
    ("130", "Interrupted (Ctrl-C)."),
]


# -- groff helpers -------------------------------------------------------------------------------
def esc(text: str) -> str:
    """Text safe in a groff line: backslashes and dashes escaped (so options copy-paste as ASCII)."""
    return text.replace("\\", "\\e").replace("-", "\\-")


def para(text: str) -> str:
    """Text as one groff line; a line starting with '.' or a quote gets a zero-width guard."""
    line = esc(" ".join(text.split()))
    return "\\&" + line if line.startswith((".", "'")) else line


def paragraphs(text: str) -> list[str]:
    return [p for p in (" ".join(block.split()) for block in re.split(r"\n\s*\n", text or "")) if p]


def bold(text: str) -> str:
    return f"\\fB{esc(text)}\\fR"


def italic(text: str) -> str:
    return f"\\fI{esc(text)}\\fR"


# -- the command tree ----------------------------------------------------------------------------
def command_tree():
    """(root command, root context) of the real CLI."""
    import typer

    from memvault.cli.app import app

    cli = typer.main.get_command(app)
    return cli, cli.make_context(PROG, [], resilient_parsing=True)


def walk(group, ctx, path: tuple[str, ...] = ()):
    """(words, command, context) for every visible command, sub-groups' commands included, in help order."""
    from memvault.cli.lazy import loaded

    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        command = loaded(command)  # with its options: memvault builds a command only when it is used
        sub = command.context_class(command, info_name=name, parent=ctx)
        yield (*path, name), command, sub
        if hasattr(command, "list_commands"):
            yield from walk(command, sub, (*path, name))


def arguments_of(command) -> list:
    return [p for p in command.params if p.param_type_name == "argument"]


def options_of(command) -> list:
    return [p for p in command.params if p.param_type_name == "option" and not p.hidden]


def argument_usage(param) -> str:
    name = param.name.upper() + ("..." if param.nargs == -1 else "")
    return name if param.required else f"[{name}]"


def synopsis_of(words: tuple[str, ...], command) -> str:
    parts = [bold(" ".join((PROG, *words)))]
    if hasattr(command, "list_commands"):
        parts.append(italic("COMMAND"))
    else:
        if options_of(command):
            parts.append("[" + italic("OPTIONS") + "]")
        parts += [italic(argument_usage(p)) for p in arguments_of(command)]
    return " ".join(parts)


def option_item(param, ctx) -> str:
    """A .TP item: the option's spellings in bold, its value in italics, then its help (with defaults)."""
    record = param.get_help_record(ctx)
    if record is None:
        return ""
    spelled, help_text = record  # ("-c, --conversation TEXT", "Conversation name."); newer click: "<str>"
    names = [name.strip() for name in spelled.split(",")]
    last, _, value = names[-1].partition(" ")  # the value's name follows the last spelling
    head = ", ".join(bold(name) for name in [*names[:-1], last])
    if value:
        head += " " + italic(value)
    return f".TP\n{head}\n{para(help_text or '')}"


def argument_item(param, ctx) -> str:
    record = param.get_help_record(ctx)
    help_text = record[1] if record else ""
    return f".TP\n{italic(argument_usage(param))}\n{para(help_text or '')}"


def render_command(words: tuple[str, ...], command, ctx) -> list[str]:
    out = [f".SS \"{esc(' '.join(words))}\"", synopsis_of(words, command)]
    for text in paragraphs(command.help or command.short_help or ""):
        out += [".PP", para(text)]
    if hasattr(command, "list_commands"):
        out += [".PP", para("Commands: " + ", ".join(" ".join((*words, n)) for n in command.list_commands(ctx)) + ".")]
        return out
    items = [argument_item(p, ctx) for p in arguments_of(command)] + [option_item(p, ctx) for p in options_of(command)]
    items = [item for item in items if item]
    if items:
        out += [".RS", *items, ".RE"]
    return out


# -- settings ------------------------------------------------------------------------------------
def setting_comments() -> dict[str, str]:
    """'section.name' -> the comment written beside the field in memvault/settings.py."""
    from memvault import settings

    comments: dict[str, str] = {}
    sections = {f.default_factory.__name__: f.name for f in dataclasses.fields(settings.Settings)
                if f.name != "sources"}
    for class_name, section in sections.items():
        source = inspect.getsource(getattr(settings, class_name))
        for match in re.finditer(r"^\s+(\w+):[^=\n]+=[^#\n]*#\s*(.+)$", source, flags=re.MULTILINE):
            comments[f"{section}.{match.group(1)}"] = match.group(2).strip()
    return comments


def environment_items() -> list[str]:
    from memvault import settings

    defaults = settings.Settings()
    comments = setting_comments()
    items = []
    for key in defaults.keys():
        value = defaults.get(key)
        alias = settings.ENV_ALIASES.get(key)
        names = [settings.env_name(key)] + ([alias] if alias and alias != settings.env_name(key) else [])
        kind, optional = settings.setting_type(key)
        shown = (settings.AUTO if value is None else repr(value) if isinstance(value, str)
                 else str(value).lower() if isinstance(value, bool) else value)
        text = f"The setting {key} ({kind.__name__}{' or ' + settings.AUTO if optional else ''}, default {shown})"
        text += f": {comments[key]}." if key in comments else "."
        if len(names) > 1:
            text += f" {alias} is a shorter name for it."
        items.append(f".TP\n{', '.join(bold(n) for n in names)}\n{para(text)}")
    return items


# -- the page ------------------------------------------------------------------------------------
def render() -> str:
    from memvault import __version__

    cli, ctx = command_tree()
    summary = paragraphs(cli.help or "")[0].rstrip(".")
    out = [
        f".\\\" Generated by scripts/gen_man.py from the CLI of memvault {__version__}: do not edit.",
        f".TH MEMVAULT 1 \"\" \"memvault {esc(__version__)}\" \"User Commands\"",
        ".SH NAME", f"memvault \\- {para(summary[0].lower() + summary[1:])}",
        ".SH SYNOPSIS",
        f"{bold(PROG)} {italic('COMMAND')} [{italic('OPTIONS')}] [{italic('ARGUMENTS')}]",
        ".br", f"{bold(PROG)} [{bold('--version')}] [{bold('-h')} | {bold('--help')}]",
        ".SH DESCRIPTION",
    ]
    for text in paragraphs(DESCRIPTION):
        out += [".PP", para(text)]
    out += [".SH OPTIONS", ".TP", f"{bold('-h')}, {bold('--help')}",
            para("Show the help of memvault or of the command it follows, and exit.")]
    out += [option_item(p, ctx) for p in options_of(cli)]
    out += [".SH COMMANDS"]
    for words, command, sub in walk(cli, ctx):
        out += render_command(words, command, sub)
    out += [".SH EXAMPLES"]
    for caption, lines in EXAMPLES:
        out += [".PP", para(caption), ".PP", ".RS", ".nf", *[para(line) for line in lines], ".fi", ".RE"]
    out += [".SH FILES"]
    for name, text in FILES:
        out += [".TP", italic(name), para(text)]
    out += [".SH ENVIRONMENT", ".PP", para(
        "Settings come from defaults, then the config file, then the environment, then flags; each setting "
        "section.name has a variable MEMVAULT_<SECTION>_<NAME>. `memvault config show` prints every effective "
        "value and where it came from."), *environment_items()]
    for name, text in OTHER_ENVIRONMENT:
        out += [".TP", ", ".join(bold(n.strip()) for n in name.split(",")), para(text)]
    out += [".SH EXIT STATUS"]
    for code, text in EXIT_STATUS:
        out += [".TP", bold(code), para(text)]
    out += [".SH SEE ALSO", f"{bold('git')}(1), {bold('sqlite3')}(1)", ""]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if out of date")
    args = parser.parse_args()
    path = ROOT / MAN_FILE
    text = render()
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"out of date: {MAN_FILE} (run: python scripts/gen_man.py)", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {MAN_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
