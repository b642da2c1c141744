"""The configuration reference (docs/configuration.md) lists every setting, and the README's test command is CI's."""

from pathlib import Path

from memvault.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_every_setting_is_documented():
    documented = CONFIGURATION.replace("` / `", "`\n`")
    missing = [key for key in Settings().keys() if f"`{key}`" not in documented]
    assert not missing, f"add these settings to docs/configuration.md's table: {missing}"


def test_the_readme_test_command_is_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/test" in README and "scripts/test" in ci
