"""`memvault --help`, `memvault CMD --help` and every TAB completion must start fast: nothing beneath the CLI
is imported on the way (no library, no model, no vault code), only typer and the command modules. Their
time is measured by scripts/bench_startup.py, not here; this guards what makes it."""

import json
import os
import subprocess
import sys

import pytest

HEAVY = ["onnxruntime", "litellm", "sqlite_vec", "apsw", "torch", "numpy", "fastapi", "uvicorn", "tokenizers",
         "git", "frontmatter", "openai", "watchdog", "mcp", "httpx",
         "rich", "markdown_it", "yaml"]  # rich's help alone (markdown-it) costs more than the 0.1 s budget
# The memvault modules a help or a completion of names may load: the package, its errors, the CLI itself.
# The REPL's modules, the vault, retrieval, the index, curation and core all wait for a command to run.
LIGHT = {"memvault", "memvault.errors", "memvault.extras"}
NOT_YET = {"memvault.cli.chat_repl", "memvault.cli.line_input"}

PROBE = """
import json, sys
from memvault.cli.app import app
try:
    app(prog_name="memvault")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded(args: list[str], **env: str) -> tuple[str, set[str]]:
    """(stdout, modules loaded) of one real `memvault ARGS` process."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env})
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


def beneath_the_cli(modules: set[str]) -> list[str]:
    mine = {m for m in modules if m == "memvault" or m.startswith("memvault.")}
    return sorted(m for m in mine - LIGHT if not m.startswith("memvault.cli") or m in NOT_YET)


def heavy(modules: set[str]) -> list[str]:
    return [m for m in HEAVY if m in modules]


@pytest.mark.parametrize("args", [["--help"], ["add", "--help"], ["search", "--help"], ["chat", "--help"],
                                  ["rules", "add", "--help"], ["--version"]], ids=" ".join)
def test_help_loads_nothing_beneath_the_cli(args):
    out, modules = loaded(args)
    assert "Usage" in out or out.startswith("memvault ")
    assert heavy(modules) == []
    assert beneath_the_cli(modules) == []


@pytest.mark.parametrize(("words", "expected"), [("memvault se", "search"), ("memvault search --to", "--top-k"),
                                                 ("memvault rules ", "add")])
def test_completing_names_loads_nothing_beneath_the_cli(words, expected):
    out, modules = loaded([], _MEMVAULT_COMPLETE="complete_bash", COMP_WORDS=words,
                          COMP_CWORD=str(len(words.split(" ")) - 1))
    assert expected in out.split()
    assert heavy(modules) == []
    assert beneath_the_cli(modules) == []


# The real program's entry (memvault/cli/entry.py): help and the common TABs answered from prebuilt tables.
ENTRY_PROBE = """
import json, sys
sys.argv = ["memvault", *sys.argv[1:]]
from memvault.cli.entry import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
WITHOUT_TYPER = ["typer", "click", "rich", "shutil"]  # typer and click alone are most of the 0.1 s budget


def entry_loaded(args: list[str], **env: str) -> tuple[str, set[str]]:
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "100", **env}
    done = subprocess.run([sys.executable, "-c", ENTRY_PROBE, *args], capture_output=True, text=True, timeout=60,
                          env=env)
    return done.stdout, set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--help"], ["-h"], [], ["rules"], ["add", "--help"], ["rules", "add", "-h"]],
                         ids=lambda args: " ".join(args) or "memvault")
def test_help_loads_neither_typer_nor_click(args):
    _, modules = entry_loaded(args)
    assert [m for m in WITHOUT_TYPER if m in modules] == []
    assert heavy(modules) == []
    assert beneath_the_cli(modules) == []


@pytest.mark.parametrize(("words", "expected"), [("memvault se", "search"), ("memvault search --to", "--top-k"),
                                                 ("memvault rules ", "add"), ("memvault list -c ", ""),
                                                 ("memvault show 0", "")])
def test_completing_loads_neither_typer_nor_click(tmp_path, words, expected):
    out, modules = entry_loaded([], _MEMVAULT_COMPLETE="complete_bash", COMP_WORDS=words,
                                COMP_CWORD=str(len(words.split(" ")) - 1), MEMVAULT_VAULT=str(tmp_path))
    assert expected in out.split() + [""]
    assert [m for m in WITHOUT_TYPER if m in modules] == []
    assert heavy(modules) == []
    if expected:  # names: nothing beneath the CLI; ids and conversations read the settings and list the vault
        assert beneath_the_cli(modules) == []


def test_the_entry_guard_sees_typer_when_typer_answers():
    _, modules = entry_loaded(["--version"])
    assert "typer" in modules and "click" in modules


def test_the_guard_sees_what_a_command_loads():
    """The probe is not blind: running a command does load what --help must not."""
    _, modules = loaded(["config", "path"])
    assert "memvault.settings" in beneath_the_cli(modules)


def test_an_add_without_the_llm_loads_no_model_library(tmp_path):
    """`memvault add --no-llm` (a shell pipeline's write) commits a file: no embedding, so no numpy, no
    model runtime and no litellm on the way (numpy alone was a quarter of the process, issue 36)."""
    vault = str(tmp_path / "vault")
    loaded(["init", "--vault", vault])
    out, modules = loaded(["add", "--no-llm", "--vault", vault, "The tram pass renews in May"])
    assert "Added" in out or "ADD" in out, out
    assert [m for m in ("numpy", "onnxruntime", "litellm", "tokenizers", "torch") if m in modules] == []
    # nor the curation's guards and prompts, nor filelock (asyncio and more): a verbatim add needs none of them
    assert [m for m in ("memvault.curate.ingest", "memvault.curate.grounding", "filelock", "asyncio", "git")
            if m in modules] == []


def command_tree():
    import typer

    from memvault.cli.app import app

    return typer.main.get_command(app)


def built(group) -> list[str]:
    """The commands typer has built so far (cli/lazy.py), sub-groups' commands included."""
    from memvault.cli.lazy import LazyCommand

    names = []
    for name, command in group.commands.items():
        if isinstance(command, LazyCommand):
            names += [name] if command.built is not None else []
        else:
            names += [f"{name} {sub}" for sub in built(command)]
    return names


def run(cli, args: list[str], **env: str) -> None:
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        try:
            cli.main(args, prog_name="memvault")
        except SystemExit:
            pass


def test_help_and_completing_a_command_name_build_no_command(capsys):
    cli = command_tree()
    run(cli, ["--help"])
    run(cli, ["rules", "--help"])
    run(cli, [], _MEMVAULT_COMPLETE="complete_bash", COMP_WORDS="memvault s", COMP_CWORD="1")
    assert "search" in capsys.readouterr().out.split()
    assert built(cli) == []
    run(cli, ["add", "--help"])
    run(cli, ["rules", "rm", "--help"])
    assert built(cli) == ["add", "rules rm"]


def test_the_listing_reads_as_when_every_command_is_built():
    """`memvault --help` lists each command from its docstring before typer builds it: the same lines."""
    import click

    from memvault.cli.lazy import loaded

    cli = command_tree()
    groups = [cli, *(c for c in cli.commands.values() if isinstance(c, click.Group))]
    before = {group.name: group.get_help(click.Context(group, info_name=group.name)) for group in groups}
    for group in groups:
        group.commands = {name: loaded(command) for name, command in group.commands.items()}
    after = {group.name: group.get_help(click.Context(group, info_name=group.name)) for group in groups}
    assert sorted(before) == ["config", "core", "llm", "memvault", "rules", "session"]
    assert all(f"  {name}  " in before[group.name] for group in groups for name in group.commands)
    assert before == after
