"""The CLI as people use it in a shell: results on stdout for `$(...)` and pipes, messages on stderr,
one suggestion for a typo, nothing wrapped at 80 columns when piped (issue: the house III)."""

from __future__ import annotations

import re

import pytest

from tests.support.cli import run_memvault


@pytest.fixture
def vault(tmp_path):
    path = tmp_path / "vault"
    assert run_memvault("--vault", str(path), "init").returncode == 0
    return path


def test_add_and_rm_print_their_results_on_stdout_so_a_shell_can_capture_the_id(vault):
    text = "Quentin keeps the spare key under the third flowerpot from the left by the door"
    added = run_memvault("--vault", str(vault), "add", "-q", text)
    assert added.returncode == 0, added.stderr
    memory_id = added.stdout.decode().strip()
    assert len(memory_id) == 36 and "\n" not in memory_id  # `id=$(memvault add -q ...)`
    assert b"warning" in added.stderr  # the no-LLM notice stays on stderr
    shown = run_memvault("--vault", str(vault), "show", memory_id)
    assert text.encode() in shown.stdout
    line = run_memvault("--vault", str(vault), "add", "Quentin's bicycle is orange").stdout.decode()
    event, second_id, said = line.rstrip("\n").split("\t")
    assert (event, said) == ("ADD", "Quentin's bicycle is orange") and len(second_id) == 36
    removed = run_memvault("--vault", str(vault), "rm", memory_id)
    assert removed.stdout.decode().split("\t")[:2] == ["DELETE", memory_id]


def test_a_mistyped_command_gets_one_suggestion_and_a_mistyped_setting_its_near_miss(vault):
    typo = run_memvault("serch", "x").stderr.decode()
    assert typo.count("Did you mean") == 1 and "search" in typo
    setting = run_memvault("--vault", str(vault), "config", "set", "llm.modle", "x")
    assert setting.returncode != 0
    assert "did you mean 'llm.model'?" in setting.stderr.decode()


def test_lines_said_into_a_pipe_are_not_wrapped_at_80_columns(capsys, monkeypatch):
    from memvault.cli import output

    monkeypatch.setattr(output, "_console", None)
    monkeypatch.setattr(output, "_err_console", None)
    long_line = "Rosa's sourdough starter is called Clint Yeastwood and it lives on the top shelf " * 3
    output.say(long_line.strip())
    output.console().print(long_line.strip(), markup=False)
    captured = capsys.readouterr()
    assert captured.err == long_line.strip() + "\n" and captured.out == long_line.strip() + "\n"


def test_mcp_help_lists_every_tool_the_server_offers(tmp_path):
    from memvault.mcp.server import build_server
    from memvault.settings import Settings

    words = set(re.findall(r"\w+", run_memvault("mcp", "--help").stdout.decode()))
    settings = Settings()
    settings.vault.path = str(tmp_path / "vault")  # the default would make a vault in the current folder
    offered = [tool.name for tool in build_server(settings, warm=False)._tool_manager.list_tools()]
    assert len(offered) == 14
    assert [name for name in offered if name not in words] == []


def test_erase_in_a_pipe_without_yes_says_that_yes_is_needed(vault):
    added = run_memvault("--vault", str(vault), "add", "-q", "Quentin's PIN is not stored here")
    memory_id = added.stdout.decode().strip()
    refused = run_memvault("--vault", str(vault), "erase", memory_id, input=b"")  # stdin: a pipe
    assert refused.returncode == 2 and refused.stdout == b""
    said = refused.stderr.decode()
    assert said.count("\n") == 1 and "-y (--yes)" in said and "not a terminal" in said, said
    assert run_memvault("--vault", str(vault), "show", memory_id).returncode == 0  # nothing erased
    done = run_memvault("--vault", str(vault), "erase", "-y", memory_id, input=b"")
    assert done.returncode == 0, done.stderr
    assert run_memvault("--vault", str(vault), "show", memory_id).returncode != 0
