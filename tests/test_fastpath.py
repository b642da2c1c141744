"""The fast path (memvault/cli/entry.py, quick_complete.py) prints what typer prints, byte for byte:
each case runs the real `memvault` program and the typer application itself (the oracle) as real
processes and compares stdout, stderr and the exit status. Whether the fast path was taken at all is
checked too: a request it answers must not import typer."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.cli import prebuilt
from memvault.core import Memvault

MEMVAULT = str(Path(sys.executable).parent / "memvault")
ORACLE = "import sys; from memvault.cli.app import app; app(sys.argv[1:], prog_name='memvault')"
# The fast program, reporting whether typer was imported (on stderr, after what it printed).
PROBE = """
import atexit, json, os, sys
sys.argv = ["memvault", *sys.argv[1:]]
atexit.register(lambda: os.write(2, ("\\n" + json.dumps("typer" in sys.modules)).encode()))
from memvault.cli.entry import main
main()
"""


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("_MEMVAULT", "COMP_", "_TYPER", "COLUMNS"))}
    return {**env, **extra}


def oracle(args: list[str], env: dict[str, str]) -> tuple[bytes, bytes, int]:
    done = subprocess.run([sys.executable, "-c", ORACLE, *args], env=env, capture_output=True, timeout=60)
    return help_option_in_order(done.stdout), done.stderr, done.returncode


def help_option_in_order(out: bytes) -> bytes:
    """click offers -h and --help in the order of a set (it changes from run to run): put -h first, as
    prebuilt does (the two items differ only in their value)."""
    lines = out.split(b"\n")
    for i in range(len(lines) - 1):
        if lines[i].lstrip(b'"').startswith(b"--help") and lines[i + 1].lstrip(b'"').startswith(b"-h"):
            lines[i], lines[i + 1] = lines[i].replace(b"--help", b"-h", 1), lines[i + 1].replace(b"-h", b"--help", 1)
    return b"\n".join(lines)


def fast(args: list[str], env: dict[str, str]) -> tuple[bytes, bytes, int]:
    done = subprocess.run([MEMVAULT, *args], env=env, capture_output=True, timeout=60)
    return help_option_in_order(done.stdout), done.stderr, done.returncode  # typer answers some requests


def probed(args: list[str], env: dict[str, str]) -> tuple[tuple[bytes, bytes, int], bool]:
    """What the fast program printed (as `fast`), and whether it answered without typer."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, timeout=60)
    stderr, _, typer_loaded = done.stderr.rpartition(b"\n")
    return (help_option_in_order(done.stdout), stderr, done.returncode), json.loads(typer_loaded) is False


def took_fast_path(args: list[str], env: dict[str, str]) -> bool:
    return probed(args, env)[1]


HELP_PATHS = sorted(prebuilt.HELP)


@pytest.mark.parametrize("path", HELP_PATHS, ids=lambda path: " ".join(path) or "memvault")
def test_every_commands_help_is_typers_byte_for_byte(path):
    env = base_env(COLUMNS="100")
    for flag in ("--help", "-h"):
        args = [*path, flag]
        assert fast(args, env) == oracle(args, env), args
    if path in prebuilt.BARE:  # `memvault`, `memvault rules`: the group's help (on stderr, status 2)
        assert fast(list(path), env) == oracle(list(path), env)


@pytest.mark.parametrize("args", [["--help"], ["rules", "add", "-h"], []], ids=" ".join)
def test_help_is_served_without_typer(args):
    assert took_fast_path(args, base_env(COLUMNS="80"))


@pytest.mark.parametrize(("args", "env"), [
    (["--help"], {"COLUMNS": "60"}),  # click wraps to a narrower terminal: typer answers
    (["add", "--help", "x"], {}), (["--vault", "v", "--help"], {}), (["nosuch", "--help"], {}),
    (["--version"], {}), (["add", "--hel"], {}),
], ids=lambda x: " ".join(x) if isinstance(x, list) else json.dumps(x))
def test_anything_else_goes_to_typer_and_prints_the_same(args, env):
    env = base_env(**env)
    assert not took_fast_path(args, env)
    assert fast(args, env) == oracle(args, env)


@pytest.fixture(scope="module")
def vault(tmp_path_factory):
    root = tmp_path_factory.mktemp("fastpath") / "vault"
    memvault = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    ids = [memvault.add_verbatim(text, conversation).id for text, conversation in [
        ("Alice drinks tea", "work"), ("Bob rides a bike", "home"), ("Chen plays the violin", "home"),
        ("Dana reads maps", "work-trips"), ("Eve: 12:30 meetings", "home")]]
    memvault.delete([ids[2]])
    return root, ids


def requests(ids: list[str]) -> list[str]:
    """Command lines as typed, the last word being completed (a trailing space: an empty word)."""
    a, c = ids[0], ids[2]
    return [
        "memvault ", "memvault s", "memvault se", "memvault x", "memvault rules ", "memvault rules a",
        "memvault config s", "memvault session ", "memvault add", "memvault -", "memvault --v", "memvault .",
        "memvault add -", "memvault search --to", "memvault list --c", "memvault show -", "memvault rules add --",
        f"memvault show {a[:1]}", f"memvault show {a[:4]}", f"memvault show {a[:4].upper()}", "memvault show ",
        f"memvault history {c[:3]}", f"memvault edit {c[:3]}", f"memvault rm {a[:2]}", f"memvault restore {c[:2]}",
        "memvault restore ", "memvault list -c ", "memvault list -c w", "memvault list --conversation h",
        "memvault search -c wo", "memvault add hello ", "memvault list --json ", "memvault init ",
        "memvault show --vault /nowhere ", "memvault --vault /nowhere show ", "memvault list -c=w",
        "memvault search -- -", "memvault list -c work -", "memvault export -o ", "memvault nosuch ",
    ]


def bash_env(line: str, **extra: str) -> dict[str, str]:
    words = line.split(" ")
    return base_env(_MEMVAULT_COMPLETE="complete_bash", COMP_WORDS=line, COMP_CWORD=str(len(words) - 1), **extra)


def typer_env(shell: str, line: str, **extra: str) -> dict[str, str]:
    return base_env(_MEMVAULT_COMPLETE=f"complete_{shell}", _TYPER_COMPLETE_ARGS=line, **extra)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish get-args", "fish is-args"])
def test_completion_prints_what_typer_prints_for_each_shell(vault, shell):
    root, ids = vault
    fish_action = {"_TYPER_COMPLETE_FISH_ACTION": shell.split()[1]} if shell.startswith("fish") else {}
    served = 0
    for line in requests(ids):
        env = bash_env(line) if shell == "bash" else typer_env(shell.split()[0], line, **fish_action)
        env["MEMVAULT_VAULT"] = str(root)
        printed, quick = probed([], env)
        assert printed == oracle([], env), (shell, line)
        served += quick
    assert served >= 20, f"only {served} of {len(requests(ids))} requests took the fast path"


def test_the_common_tabs_take_the_fast_path(vault):
    root, ids = vault
    for line in ("memvault s", f"memvault show {ids[0][:2]}", "memvault list -c w", "memvault rules a"):
        fish = typer_env("fish", line, _TYPER_COMPLETE_FISH_ACTION="get-args")
        for env in (bash_env(line), typer_env("zsh", line), fish):
            env["MEMVAULT_VAULT"] = str(root)
            assert took_fast_path([], env), line
    # Option names too; zsh and fish show their help, which rich would wrap here (so typer answers there).
    assert took_fast_path([], bash_env("memvault search --", MEMVAULT_VAULT=str(root)))


def test_zsh_help_that_rich_would_wrap_goes_to_typer(vault):
    """typer renders zsh's and fish's help with rich at the terminal's width: a narrow one wraps it."""
    root, _ = vault
    env = typer_env("zsh", "memvault ", COLUMNS="30", MEMVAULT_VAULT=str(root))
    assert not took_fast_path([], env)
    assert fast([], env) == oracle([], env)


@pytest.mark.parametrize("setting", ["default vault", "MEMVAULT_VAULT_PATH", "both variables", "config file",
                                     "broken config file", "missing config file", "another variable"])
def test_completion_finds_the_vault_the_settings_name(vault, tmp_path, setting):
    """Where the vault is: the fast path skips loading the settings only when they could not differ."""
    root, ids = vault
    data = tmp_path / "data"
    (data / "memvault").mkdir(parents=True)
    (data / "memvault" / "vault").symlink_to(root)
    config = tmp_path / "config.toml"
    env = {"XDG_DATA_HOME": str(data), "XDG_CONFIG_HOME": str(tmp_path / "nothing"), "HOME": str(tmp_path)}
    env.update({"default vault": {}, "MEMVAULT_VAULT_PATH": {"MEMVAULT_VAULT_PATH": str(root)},
                "both variables": {"MEMVAULT_VAULT": str(root), "MEMVAULT_VAULT_PATH": "/nowhere"},
                "config file": {"MEMVAULT_CONFIG": str(config)}, "broken config file": {"MEMVAULT_CONFIG": str(config)},
                "missing config file": {"MEMVAULT_CONFIG": str(tmp_path / "none.toml")},
                "another variable": {"MEMVAULT_VAULT_MAX_ENTRIES": "zero"}}[setting])
    config.write_text(f'[vault]\npath = "{root}"\n' if setting == "config file" else "[vault]\nno_such = 1\n")
    for line in (f"memvault show {ids[0][:2]}", "memvault list -c "):
        base = bash_env(line, **env)
        if setting != "both variables":
            base.pop("MEMVAULT_VAULT", None)
        printed, _ = probed([], base)
        assert printed == oracle([], base), (setting, line)
        assert (printed[0].strip() != b"") == (setting not in ("broken config file", "missing config file",
                                                                "another variable")), (setting, printed)


def test_python_m_memvault_keeps_its_own_program_name():
    """click calls the program `python -m memvault` there: the prebuilt texts (`memvault`) must not answer."""
    done = subprocess.run([sys.executable, "-m", "memvault", "--help"], env=base_env(COLUMNS="100"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("Usage: python -m memvault [OPTIONS]")
