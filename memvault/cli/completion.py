"""Dynamic shell completion: memory ids and conversation names, from the vault's file names.

The shell re-runs memvault on every TAB, so these callbacks stay cheap: they list folders with
os.scandir and read nothing else (no index, no model, no git, no YAML). Entry files are named
`<timestamp>__<id>.md`, which is all an id completion needs. The vault is the one the command
would use: --vault, else MEMVAULT_VAULT or the config file, else the default.
"""

import os
from collections.abc import Iterator
from datetime import datetime

# More matches than this and the shell gets the distinct next characters instead of full ids:
# they keep bash's common-prefix insertion correct and never flood the terminal.
MAX_CANDIDATES = 100
# How each of layout.KIND_DIRS is described beside an id (a folder added there later shows by its name).
KIND_LABEL = {"facts": "fact", "turns/user": "user turn", "turns/assistant": "assistant turn", "summaries": "summary",
              "rules": "rule", "sessions": "session summary"}
DELETED_NOTE = ", deleted"  # how a soft-deleted memory is described beside its id


def vault_root(ctx) -> str | None:
    """The vault folder the command being completed would open, or None if settings are broken."""
    from memvault import settings as settings_module
    from memvault.errors import MemvaultError

    params = getattr(ctx, "params", None) or {}
    vault = params.get("vault")
    try:
        settings = settings_module.load(params.get("config"), {"vault.path": str(vault) if vault else None})
    except (MemvaultError, OSError):
        return None  # a TAB must never print a traceback into the command line
    return os.path.expanduser(settings.vault.path)


def _subdirs(path: str) -> Iterator[os.DirEntry]:
    try:
        with os.scandir(path) as found:
            yield from (d for d in found if not d.name.startswith(".") and d.is_dir())
    except OSError:
        return


def conversation_names(root: str) -> list[str]:
    """Conversation folders under entries/, sorted."""
    from memvault.shapes import layout

    return sorted(d.name for d in _subdirs(os.path.join(root, layout.ENTRIES)))


def memory_files(root: str, include_deleted: bool, id_prefix: str = "") -> dict[str, tuple[str, str, str]]:
    """id -> (conversation, kind, file name) for each entry file named by an id starting with `id_prefix`;
    a live file wins over its tombstone (kind ends in ', deleted' for tombstones)."""
    from memvault.shapes import kind_files, layout

    found: dict[str, tuple[str, str, str]] = {}
    for conversation in _subdirs(os.path.join(root, layout.ENTRIES)):
        homes = [(conversation.path, "")]
        if include_deleted:
            homes.append((os.path.join(conversation.path, "deleted"), DELETED_NOTE))
        for home, note in homes:
            for kind in layout.KIND_DIRS.values():
                for _, name in kind_files(home, kind):
                    if not name.rpartition("__")[2].lower().startswith(id_prefix):
                        continue  # a TAB after a few characters parses a sixteenth of a large vault's names
                    memory_id = layout.id_from_filename(name)
                    if memory_id and (memory_id not in found or not note):
                        found[memory_id] = (conversation.name, KIND_LABEL.get(kind, kind) + note, name)
    return found


def describe(conversation: str, kind: str, name: str) -> str:
    """'work, fact, 2024-01-01 12:00' from where a file is and its name '20240101T120000123Z__<id>.md'
    (only for the few candidates shown: strptime is too slow for 10k names)."""
    try:
        when = datetime.strptime(name[:15], "%Y%m%dT%H%M%S").strftime(", %Y-%m-%d %H:%M")
    except ValueError:
        when = ""
    return f"{conversation}, {kind}{when}"


def narrow(values: list[str], incomplete: str) -> list[str]:
    """The values starting with `incomplete`; above MAX_CANDIDATES, their distinct prefixes at the
    longest length that still gives at most MAX_CANDIDATES (at least one character more)."""
    matches = sorted(v for v in values if v.startswith(incomplete))
    if len(matches) <= MAX_CANDIDATES:
        return matches
    width = len(incomplete) + 1
    groups = sorted({m[:width] for m in matches})
    while True:
        wider = sorted({m[: width + 1] for m in matches})
        if len(wider) > MAX_CANDIDATES:
            return groups
        width, groups = width + 1, wider


def complete_ids(ctx, incomplete: str, include_deleted: bool,
                 only_deleted: bool = False) -> list[tuple[str, str] | str]:
    root = vault_root(ctx)
    if root is None:
        return []
    prefix = (incomplete or "").lower()
    files = memory_files(root, include_deleted, prefix)
    if only_deleted:  # a memory live again is listed as live (memory_files prefers its live file)
        files = {memory_id: found for memory_id, found in files.items() if found[1].endswith(DELETED_NOTE)}
    shown = narrow(list(files), prefix)
    return [(value, describe(*files[value])) if value in files else value for value in shown]


def complete_memory_id(ctx, incomplete: str) -> list[tuple[str, str] | str]:
    """Ids of live and deleted memories (show, history)."""
    return complete_ids(ctx, incomplete, include_deleted=True)


def complete_live_memory_id(ctx, incomplete: str) -> list[tuple[str, str] | str]:
    """Ids of live memories only (edit, rm)."""
    return complete_ids(ctx, incomplete, include_deleted=False)


def complete_deleted_memory_id(ctx, incomplete: str) -> list[tuple[str, str] | str]:
    """Ids of soft-deleted memories only (restore)."""
    return complete_ids(ctx, incomplete, include_deleted=True, only_deleted=True)


def complete_conversation(ctx, incomplete: str) -> list[str]:
    """Conversation names in the vault."""
    root = vault_root(ctx)
    return [] if root is None else [name for name in conversation_names(root) if name.startswith(incomplete or "")]
