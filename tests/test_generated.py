"""Generated files are up to date with the code, and every command and option has help to generate from."""

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def script(name: str):
    """A module from scripts/ (not a package), loaded by path."""
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_completions = script("gen_completions")
gen_man = script("gen_man")
gen_prebuilt = script("gen_prebuilt")


@pytest.mark.parametrize("shell", sorted(gen_completions.FILES))
def test_completion_script_is_up_to_date(shell):
    committed = (ROOT / gen_completions.FILES[shell]).read_text(encoding="utf-8")
    assert committed == gen_completions.render(shell), (
        f"{gen_completions.FILES[shell]} is out of date: run `python scripts/gen_completions.py`")


def test_man_page_is_up_to_date():
    committed = (ROOT / gen_man.MAN_FILE).read_text(encoding="utf-8")
    assert committed == gen_man.render(), f"{gen_man.MAN_FILE} is out of date: run `python scripts/gen_man.py`"


def test_prebuilt_help_and_completion_tables_are_up_to_date():
    """The fast path's help texts and completion tables (memvault/cli/prebuilt.py) are the CLI's own."""
    committed = (ROOT / gen_prebuilt.OUT).read_text(encoding="utf-8")
    assert committed == gen_prebuilt.render(), f"{gen_prebuilt.OUT} is out of date: run scripts/gen_prebuilt.py"


def test_man_page_is_deterministic():
    assert gen_man.render() == gen_man.render()


def all_commands():
    cli, ctx = gen_man.command_tree()
    return list(gen_man.walk(cli, ctx)), cli, ctx


def test_every_command_and_option_has_help_text():
    commands, cli, ctx = all_commands()
    missing = [" ".join(words) for words, command, _ in commands if not (command.help or "").strip()]
    missing += [f"{' '.join(words)} {param.name}" for words, command, _ in commands for param in command.params
                if not param.hidden and not (getattr(param, "help", None) or "").strip()]
    missing += [f"memvault {p.name}" for p in cli.params if not (p.help or "").strip()]
    assert missing == [], f"commands or options without help: {missing}"


def test_man_page_documents_every_command_option_and_setting():
    from memvault import settings

    page = gen_man.render()
    sections = dict(re.findall(r'^\.SS "([^"]+)"\n(.*?)(?=^\.S[SH] |\Z)', page, flags=re.MULTILINE | re.DOTALL))
    commands, _, _ = all_commands()
    assert {gen_man.esc(" ".join(words)) for words, _, _ in commands} == set(sections)
    for words, command, _ in commands:
        body = sections[gen_man.esc(" ".join(words))]
        for param in gen_man.options_of(command):
            for flag in param.opts:
                assert gen_man.bold(flag) in body, f"{' '.join(words)}: {flag} missing from the man page"
    for key in settings.Settings().keys():
        assert gen_man.bold(settings.env_name(key)) in page
    for name in ("MEMVAULT_VAULT", "MEMVAULT_CONFIG", "MEMVAULT_LLM_MODEL", "MEMVAULT_API_KEY", "EDITOR", "VISUAL",
                 "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        assert gen_man.bold(name) in page
    for heading in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXAMPLES", "FILES", "ENVIRONMENT", "EXIT STATUS"):
        assert f"\n.SH {heading}\n" in page


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings():
    done = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(ROOT / gen_man.MAN_FILE)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
