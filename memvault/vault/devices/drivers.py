"""The merge drivers of `memvault sync` installed in a clone: registered in its .git/config (this
machine's interpreter) and routed by a committed .gitattributes (memvault.vault.devices.merge writes both)."""

from __future__ import annotations

import sys

from memvault.vault.devices.merge import driver_config
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.gitattributes import GITATTRIBUTES_FILE, gitattributes_text
from memvault.vault.git.errors import GitFailed
from memvault.vault.git.log import format_message
from memvault.vault.git.repository import VaultGit
from memvault.vault.write.relayout import relayout
from memvault.vault.write.store import Vault


def install_drivers(git: VaultGit, python: str | None = None) -> bool:
    """Register the merge drivers in .git/config (per clone: a copied or moved vault gets this
    machine's interpreter). True when something was written."""
    wanted = driver_config(python or sys.executable)
    try:
        out = git.run("config", "--local", "--get-regexp", r"^merge\.memvault-")
    except GitFailed:
        out = ""  # none yet (git config exits 1)
    have = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    missing = {key: value for key, value in wanted.items() if have.get(key.lower()) != value}
    for key, value in missing.items():
        git.run("config", "--local", key, value)
    return bool(missing)


def ensure_merge_setup(vault: Vault) -> bool:
    """The vault's format migrations, one commit each: drivers in .git/config and .gitattributes
    committed (a vault made before sync existed), entry files moved into day folders (a vault made
    before them, or files a device on the old layout wrote: vault.write.relayout). Call with the
    vault's write lock held; True when a commit was made."""
    install_drivers(vault.git)
    path = vault.root / GITATTRIBUTES_FILE
    text = gitattributes_text(path.read_text(encoding="utf-8") if path.is_file() else None)
    committed = False
    if text is not None:
        atomic_write(path, text.encode("utf-8"))
        committed = vault.git.commit([GITATTRIBUTES_FILE], format_message(
            "memvault: merge drivers for sync (.gitattributes)", "migrate", None, [])) is not None
    return relayout(vault) is not None or committed
