"""The README's configuration reference lists every setting, and the quickstart commands exist."""

from pathlib import Path

from memvault.settings import Settings

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_setting_is_documented():
    documented = README.replace("` / `", "`\n`")
    missing = [key for key in Settings().keys() if f"`{key}`" not in documented]
    assert not missing, f"add these settings to README.md's configuration table: {missing}"


def test_the_readme_test_command_is_what_ci_runs():
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text()
    assert "scripts/test" in README and "scripts/test" in ci
