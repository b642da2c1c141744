"""What a door (api, server, mcp, cli, ui) may name of the layers beneath the facade: a memory's shape
and its naming rules (the markdown format a person also edits), and the parsers a door checks its
arguments with before it calls `Memvault`. Values and pure functions only: every operation is the
facade's (memvault.core), so this list is the whole of what a door knows beneath it
(tests/test_architecture.py holds doors to core and this module).

Each name is imported from its home on first use (PEP 562), so `from memvault.shapes import named_scopes`
costs what `memvault.vault.format.layout` costs and no more: `memvault --help` stays quick.
"""

from __future__ import annotations

import importlib

# name -> the module it lives in (tests/test_architecture.py reads this table as this module's imports)
HOMES: dict[str, str] = {
    # a memory: its fields, its file, where it lives
    "Entry": "memvault.vault.format.entry",
    "ROLES": "memvault.vault.format.entry",
    "SCOPE_KEYS": "memvault.vault.format.entry",
    "iso_time": "memvault.vault.format.entry",
    "metadata_with_mem0_fields": "memvault.vault.format.entry",
    "text_hash": "memvault.vault.format.entry",
    "entry_from_fields": "memvault.vault.format.fields",
    "parse": "memvault.vault.format.markdown",
    "check_conversation_id": "memvault.vault.format.layout",
    "conversation_for_scopes": "memvault.vault.format.layout",
    "folder_for": "memvault.vault.format.layout",
    "named_scopes": "memvault.vault.format.layout",
    "kind_files": "memvault.vault.format.listing",  # the entry files of a kind folder, day folders too
    # arguments a door parses before it calls the facade
    "filter_from_json": "memvault.retrieve.filters",  # a mem0 filter given as JSON
    "parse_age": "memvault.vault.forget.eviction",  # `--idle 20m`, `--purge-older-than 30d`
    "CHOICES": "memvault.vault.devices.keptboth",  # `resolve --keep`, `doctor --kept-both`
    "load_prompt": "memvault.curate.extract",  # `add --prompt-file`
    "threshold_for": "memvault.retrieve.scoring",  # what "auto" means, for `config show`
    # what the facade raises that a page answers in its own way
    "BeforeTheVault": "memvault.vault.git.timetravel",
}
MODULES: dict[str, str] = {  # whole modules a door reads names from (`layout.ENTRIES`, `layout.core_path`)
    "layout": "memvault.vault.format.layout",
}
__all__ = sorted([*HOMES, *MODULES])


def __getattr__(name: str):
    if name in MODULES:
        return importlib.import_module(MODULES[name])
    if name in HOMES:
        return getattr(importlib.import_module(HOMES[name]), name)
    raise AttributeError(f"module 'memvault.shapes' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
