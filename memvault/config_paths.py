"""Where the config file and the default vault are (memvault.settings starts from these), and the vault
a TAB completes from when no setting could change or refuse it: without importing the settings, whose
18 dataclasses cost a shell completion more than the rest of its work."""

import os
from pathlib import Path

VAULT_VARIABLES = ("MEMVAULT_VAULT", "MEMVAULT_VAULT_PATH")  # settings' alias, then its systematic name


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memvault" / "config.toml"


def default_vault_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memvault" / "vault"


def config_path(config_file: str | Path | None = None) -> Path:
    return Path(config_file) if config_file else Path(os.environ.get("MEMVAULT_CONFIG") or default_config_path())


def plain_vault_path(config_file: str | None, vault_flag: str | None) -> str | None:
    """The vault settings.load would name, when no config file is named or found and no other MEMVAULT_
    variable is set (nothing else could choose the vault or make the settings refuse to load): --vault,
    else MEMVAULT_VAULT, else MEMVAULT_VAULT_PATH, else the default. None otherwise: ask the settings."""
    if config_file or os.environ.get("MEMVAULT_CONFIG") or config_path().exists():
        return None
    if any(name.startswith("MEMVAULT_") and name not in VAULT_VARIABLES for name in os.environ):
        return None
    named = [vault_flag, *(os.environ.get(name) for name in VAULT_VARIABLES)]
    return next((path for path in named if path), None) or str(default_vault_path())
