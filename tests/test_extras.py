"""The core install and its extras: what pyproject.toml installs for each extra brings the modules
memvault checks for (memvault/extras.py), a command run without its extra says in one line which one to
install, and the core commands run with no extra at all. A missing package is simulated in a real
subprocess: its name set to None in sys.modules, as if it was never installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from memvault.extras import EXTRAS
from tests.support.cli import initialised

ROOT = Path(__file__).resolve().parent.parent
# Runs the CLI with the modules named in argv[1] (comma-separated) made unimportable.
WITHOUT = ("import sys; [sys.modules.__setitem__(m, None) for m in sys.argv[1].split(',') if m]; "
           "sys.argv = ['memvault', *sys.argv[2:]]; from memvault.cli.app import main; main()")
# Every module an extra brings, and what they stand on, that memvault would import.
EVERY_EXTRA = sorted({m for modules in EXTRAS.values() for m in modules} | {"starlette", "pydantic"})


def without(modules, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT, ",".join(modules), *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def name_of(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;,]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def extra_distributions(extra: str) -> set[str]:
    """The distributions `pip install memvault[extra]` asks for, memvault's own extras followed."""
    found = set()
    for requirement in project()["optional-dependencies"][extra]:
        if name_of(requirement) == "memvault":
            for inner in re.search(r"\[(.*)\]", requirement).group(1).split(","):
                found |= extra_distributions(inner.strip())
        else:
            found.add(name_of(requirement))
    return found


@cache  # reads every installed distribution's file list: half a second, the same answer each time
def distributions() -> dict[str, list[str]]:
    return packages_distributions()


def distribution_of(module: str) -> str:
    return distributions()[module][0].lower().replace("_", "-")


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_installs_the_modules_memvault_checks_for(extra):
    wanted = {distribution_of(module) for module in EXTRAS[extra]}
    assert wanted <= extra_distributions(extra), f"[{extra}] lacks {wanted - extra_distributions(extra)}"


def test_the_core_needs_no_extra_and_all_brings_every_one():
    core = {name_of(requirement) for requirement in project()["dependencies"]}
    assert not core & {distribution_of(module) for module in EVERY_EXTRA if module != "pydantic"}
    assert extra_distributions("all") >= set().union(*(extra_distributions(extra) for extra in EXTRAS))
    assert "memvault[all]" in project()["optional-dependencies"]["dev"]  # the suite tests every door


@pytest.mark.parametrize("args,missing,extra,env", [
    (("serve", "--port", "0"), "fastapi", "server", {}),
    (("serve", "--port", "0"), "litellm", "server", {}),
    (("ui", "--port", "0", "--no-browser"), "jinja2", "ui", {}),
    (("mcp",), "mcp", "mcp", {}),
    (("chat", "-m", "hello"), "prompt_toolkit", "chat", {}),
    (("add", "Ana's birthday is on May 3."), "litellm", "llm", {"MEMVAULT_LLM_MODEL": "openai/gpt-4o-mini"}),
], ids=["serve", "serve-llm", "ui", "mcp", "chat", "add-with-llm"])
def test_a_command_without_its_extra_names_it_in_one_line(tmp_path, args, missing, extra, env):
    vault = tmp_path / "vault"
    initialised(vault)  # in this process: only the command under test needs the missing module
    done = without([missing], *args, "--vault", str(vault), env=env)
    command = "memvault " + args[0]
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"memvault: error: {command} needs the {extra} extra: pip install 'memvault[{extra}]'\n"


def test_the_core_commands_run_without_any_extra(tmp_path):
    """The README's tour on a core install: init, add, search, list, rm, restore, history, reindex,
    doctor, with every extra's modules (and fastapi's starlette and pydantic) unimportable."""
    vault = str(tmp_path / "vault")

    def ok(*args: str) -> str:
        done = without(EVERY_EXTRA, *args, "--vault", vault)
        assert done.returncode == 0, f"{args}: {done.stderr}"
        return done.stdout

    ok("init")
    memory_id = ok("add", "Ana's birthday is on May 3.").split("\t")[1]
    assert "May 3" in ok("search", "when is Ana's birthday")
    ok("rm", memory_id)
    ok("restore", memory_id)
    assert "May 3" in ok("search", "when is Ana's birthday")
    assert "RESTORE" in ok("history", memory_id)
    ok("reindex")
    ok("doctor")
