"""Where each entry lives in the vault, and the checks that keep names and ids inside it."""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import PurePosixPath

from memvault.errors import UnsafePathError
from memvault.vault.format.entry import Entry
from memvault.vault.format.fields import check_conversation_id  # noqa: F401 - layout.check_conversation_id

GLOBAL = "global"
ENTRIES = "entries"
STATE_DIR = ".memvault"
GITIGNORE_LINE = f"{STATE_DIR}/"  # the one rule of the vault's own .gitignore
SESSION_STATE_DIR = "session"  # .memvault/session/<conversation>/: held candidates, never committed
KIND_DIRS = {"memory": "facts", "user": "turns/user", "assistant": "turns/assistant", "summary": "summaries",
             "rule": "rules", "session": "sessions"}  # session: one episodic summary per finished session
ROLE_OF_KIND_DIR = {folder: role for role, folder in KIND_DIRS.items()}  # 'facts' -> 'memory'
KIND_TOPS = {kind.split("/")[0] for kind in KIND_DIRS.values()}  # facts, turns, summaries, rules, sessions
# The kinds whose files go in day folders, <kind>/<YYYY>/<MM>/<DD>/<stamp>__<id>.md, so that no folder's
# tree object grows with the vault (a commit rewrites the trees on its path: a folder of 25k turns cost
# 0.2 s an add). The summary is one file; rules are capped per conversation: both stay flat. Files in
# the kind folder itself (older vaults, written by hand or by agent-cli) are read as well.
DATED_KINDS = (KIND_DIRS["memory"], KIND_DIRS["user"], KIND_DIRS["assistant"], KIND_DIRS["session"])
DAY_PARTS = (re.compile(r"^\d{4}$"), re.compile(r"^\d{2}$"), re.compile(r"^\d{2}$"))  # YYYY, MM, DD
DELETED = "deleted"
SUMMARY_FILE = "summary.md"
# Workspace files (docs/architecture.md, Vault layout): plain markdown a person writes, beside entries/.
CORE_DIR = "core"
CORE_NAMES = ("USER", "IDENTITY", "SOUL", "MEMORY")
JOURNAL_DIR = "journal"
JOURNAL_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
WORKSPACE_ROLES = {CORE_DIR: "core", JOURNAL_DIR: "journal"}
MAX_NAME = 100
ID_CHARS = re.compile(r"^[0-9a-fA-F-]{1,36}$")
STAMPED_NAME = re.compile(r"^\d{8}T\d{9}Z__")  # '<created>__<id>.md', as file_stamp names files
UUID_SHAPE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# Letters and digits of any script, and . _ - + (no separators, no spaces, no control characters);
# '+' joins the parts of a scope folder such as user-alice+agent-bot.
NAME_CHARS = re.compile(r"^[\w.\-+]+$", re.UNICODE)
WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
# Refused for new folders only (older vaults may hold them): Windows reserves these with any extension.
WINDOWS_DEVICE_NAMES = WINDOWS_RESERVED | {f"{port}{digit}" for port in ("com", "lpt") for digit in "¹²³"}


def check_conversation(name: str) -> str:
    """A conversation name, as it may be used as one folder name; raises UnsafePathError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise UnsafePathError("conversation name is empty")
    name = unicodedata.normalize("NFC", name.strip())
    if len(name) > MAX_NAME:
        raise UnsafePathError(f"conversation name is longer than {MAX_NAME} characters")
    if name.startswith(".") or not NAME_CHARS.match(name):
        raise UnsafePathError(
            f"invalid conversation name {name!r}: use letters, digits, '.', '_' and '-', not starting with '.'"
        )
    if name.lower() in WINDOWS_RESERVED:
        raise UnsafePathError(f"invalid conversation name {name!r}: a reserved device name on Windows")
    return name


def folder_for(conversation: str) -> str:
    """The folder of a conversation id: the id itself when it is a safe folder name (what every
    memvault conversation has been so far); otherwise its safe characters, cut, then "-<hash of the
    id>_". Distinct ids get distinct folders (the hash tail), and the id is kept as sent in each
    entry's front matter: a folder is read back to its id from its files."""
    conversation = check_conversation_id(conversation)
    if NAME_CHARS.match(conversation) and not conversation.startswith(".") and len(conversation) <= MAX_NAME \
            and is_portable_name(conversation):
        return check_conversation(conversation)  # a folder name as it is
    text = re.sub(r"[^\w.\-]+", "_", unicodedata.normalize("NFKC", conversation), flags=re.UNICODE).strip("._")
    text = (text or "_")[:40 - HASH_TAIL]
    if not is_portable_name(text + "-"):
        text = f"_{text}"  # 'con.txt' -> '_con.txt-<hash>_': never a device name, even before its first '.'
    return check_conversation(text + tagged(conversation))


def is_portable_name(name: str) -> bool:
    """Whether every system keeps `name` as a folder: not a Windows device name ('CON', 'con.txt',
    'COM¹'), not ending with '.' (Windows drops it). An id that is not gets a hashed folder."""
    return not name.endswith(".") and name.split(".")[0].lower() not in WINDOWS_DEVICE_NAMES


def check_new_conversation(name: str, existing: Iterable[str]) -> str:
    """A conversation folder about to be created must also be portable: a folder Windows cannot
    open ('con.txt', a trailing dot) or one that macOS and Windows merge with another ('Work' beside
    'work') would break the vault when it is cloned there. Folders that exist already stay usable
    whatever their name: these rules only stop new ones."""
    existing = list(existing)
    if name in existing:
        return name
    if name.endswith("."):
        raise UnsafePathError(f"invalid conversation name {name!r}: Windows drops a trailing '.' from folder names")
    if name.split(".")[0].lower() in WINDOWS_DEVICE_NAMES:
        raise UnsafePathError(f"invalid conversation name {name!r}: a reserved device name on Windows")
    twin = next((other for other in existing if other.casefold() == name.casefold()), None)
    if twin is not None:
        raise UnsafePathError(f"conversation {name!r} differs only in case from the existing {twin!r} (one folder "
                              f"on macOS and Windows): use {twin!r}")
    return name


def check_id_prefix(text: str) -> str:
    """An id or a prefix of one: hex digits and dashes only, so it can never name a path."""
    text = (text or "").strip().lower()
    if not ID_CHARS.match(text):
        raise UnsafePathError(f"invalid memory id {text!r}: ids are UUIDs (hex digits and dashes)")
    return text


MAX_ID = 200


def check_id_text(text: str) -> str:
    """A memory id as a person or client names it: a UUID or a prefix of one (lower-cased), or any
    other id a file's front matter holds (agent-cli's 'default__summary-summary', a hand-made
    'note-1'), matched exactly. Only ever compared with the ids of files read: never a path."""
    text = (text or "").strip()
    if ID_CHARS.match(text):
        return text.lower()
    if not text or len(text) > MAX_ID or not text.isprintable() or any(c in text for c in "/\\"):
        raise UnsafePathError(f"invalid memory id {text[:60]!r}: at most {MAX_ID} printable characters, "
                              "no '/' or '\\' (ids are UUIDs, or the ids files give)")
    return text


def check_full_id(text: str) -> str:
    text = check_id_prefix(text)
    if not UUID_SHAPE.match(text):
        raise UnsafePathError(f"invalid memory id {text!r}: expected a full UUID")
    return text


def conversation_for_scopes(scopes: dict) -> str:
    """`scope_conversation` of a scopes mapping (user_id, agent_id, run_id; missing ones unset)."""
    return scope_conversation(scopes.get("user_id"), scopes.get("agent_id"), scopes.get("run_id"))


def named_scopes(user_id: str | None = None, agent_id: str | None = None,
                 run_id: str | None = None) -> dict[str, str | None]:
    """The scopes a door names with its three arguments (the CLI's --user/--agent/--run, MCP's
    user_id/agent_id/run_id), as the facade takes them (None: not given; checked by check_scopes; what
    they may see is core.caller's to decide). Here, not in core: the CLI's start-up must not load core."""
    return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}


def scope_conversation(user_id: str | None, agent_id: str | None, run_id: str | None) -> str:
    """The conversation folder for mem0-style scopes: readable, one folder per combination.

    The folder is for people; isolation comes from the scope fields in front matter, which every
    search and listing filters on. Values are slugged so any user id makes a safe folder name.

    Distinct scopes get distinct folders: a value the slug had to change or cut ends with a hash of
    the exact value (see `slug`), and so does a folder cut to MAX_NAME. Folders made before this
    rule stay readable: entries are found by their scope fields, not by their folder.
    """
    named = (("user", user_id), ("agent", agent_id), ("run", run_id))
    parts = [f"{key}-{slug(value)}" for key, value in named if value]
    folder = "+".join(parts)
    if len(folder) > MAX_NAME:
        folder = folder[:MAX_NAME - HASH_TAIL] + tagged("\0".join(str(value or "") for _, value in named))
    return folder or "default"


HASH_TAIL = 14  # "-" + 12 hex digits + "_"


def slug(value: str) -> str:
    """`value` as a folder-name piece: unchanged when it already is a safe one (40 characters at
    most); otherwise its safe characters then "-<hash of value>_". An unchanged slug never ends with
    "_" (it is stripped), so a changed one never equals an unchanged one: the mapping is injective."""
    text = unicodedata.normalize("NFKC", str(value))
    text = re.sub(r"[^\w.\-]+", "_", text, flags=re.UNICODE).strip("._") or "_"
    if text == value and len(text) <= 40:
        return text
    return text[:40 - HASH_TAIL] + tagged(str(value))


def tagged(value: str) -> str:
    import hashlib

    return f"-{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}_"


def file_stamp(entry: Entry) -> str:
    return entry.created_at.strftime("%Y%m%dT%H%M%S") + f"{entry.created_at.microsecond // 1000:03d}Z"


def tombstone_path(live: PurePosixPath, tombstone: Entry) -> PurePosixPath:
    """Where the tombstone of the entry at `live` goes: `deleted/` inside the folder it lives in
    (which may not be the folder its conversation id would make: agent-cli slugs "My Chat" as
    My_Chat), under the file's own name; a summary.md gets a '<created>__<id>.md' name."""
    parts = live.parts
    name = parts[-1]
    if name == SUMMARY_FILE:
        name = f"{file_stamp(tombstone)}__{slug(tombstone.id)}.md"
    return PurePosixPath(parts[0], parts[1], DELETED, *parts[2:-1], name)


def relative_path(entry: Entry) -> PurePosixPath:
    """The path of an entry relative to the vault root, live or soft-deleted."""
    conversation = folder_for(entry.conversation_id)
    check_full_id(entry.id)
    kind = KIND_DIRS[entry.role]
    base = PurePosixPath(ENTRIES, conversation)
    if entry.deleted:
        base = base / "deleted"
    if entry.role == "summary" and not entry.deleted:
        return base / kind / SUMMARY_FILE
    stamp = file_stamp(entry)
    return base / kind / PurePosixPath(*day_folders(kind, stamp)) / f"{stamp}__{entry.id}.md"


def day_folders(kind: str, stamp: str) -> tuple[str, ...]:
    """The day folders ('2026', '11', '29') of a file named '<stamp>__<id>.md' in this kind folder:
    the day of its stamp; none for a kind that stays flat."""
    return (stamp[0:4], stamp[4:6], stamp[6:8]) if kind in DATED_KINDS else ()


def is_day_parts(parts: Sequence[str]) -> bool:
    """Whether three folder names are a day folder's path: YYYY, MM, DD."""
    return len(parts) == 3 and all(shape.match(part) for shape, part in zip(DAY_PARTS, parts, strict=False))


def both_places(rel: PurePosixPath) -> tuple[PurePosixPath, ...]:
    """The paths an entry file of a dated kind may have: in its day folder and in the kind folder itself
    (a device on the older layout writes there); `rel` alone for other files."""
    parts = rel.parts
    if is_day_parts(parts[-4:-1]) and kind_of_parts(parts) in DATED_KINDS:
        return rel, PurePosixPath(*parts[:-4], parts[-1])
    dated = dated_path(rel)
    return (rel,) if dated is None else (dated, rel)


def dated_path(rel: PurePosixPath) -> PurePosixPath | None:
    """Where the entry file at `rel` goes in the dated layout (the day its name's stamp gives), or None
    when it is there already or stays where it is (a kind that stays flat, a name without a stamp)."""
    parts = rel.parts
    if not is_entry_parts(parts) or kind_of_parts(parts) not in DATED_KINDS or is_day_parts(parts[-4:-1]):
        return None
    name = parts[-1]
    if not STAMPED_NAME.match(name) or time_from_filename(name) is None:
        return None
    return PurePosixPath(*parts[:-1], *day_folders(kind_of_parts(parts), name), name)


def time_from_filename(name: str) -> float | None:
    """The creation time (epoch seconds, to the millisecond) in '<stamp>__<id>.md', or None."""
    if not STAMPED_NAME.match(name):
        return None
    stamp = name[:19]
    try:
        moment = datetime(int(stamp[0:4]), int(stamp[4:6]), int(stamp[6:8]), int(stamp[9:11]), int(stamp[11:13]),
                          int(stamp[13:15]), int(stamp[15:18]) * 1000, tzinfo=timezone.utc)
    except ValueError:
        return None
    return moment.timestamp()


def id_from_filename(name: str) -> str | None:
    """The id in '<stamp>__<id>.md', or None for a file of another shape (summary.md, notes)."""
    if not name.endswith(".md") or "__" not in name:
        return None
    candidate = name[:-3].rsplit("__", 1)[1].lower()
    return candidate if UUID_SHAPE.match(candidate) else None


def is_entry_path(rel: PurePosixPath) -> bool:
    """True for markdown files under entries/ (temporary files and other folders are not entries)."""
    return is_entry_parts(rel.parts)


def is_entry_parts(parts: Sequence[str]) -> bool:
    """is_entry_path of a path's parts (a listing of 10k past files splits strings: making each a
    PurePosixPath cost more than the rest of the page)."""
    return len(parts) >= 3 and parts[0] == ENTRIES and parts[-1].endswith(".md") and not parts[-1].startswith(".")


def is_deleted_path(rel: PurePosixPath) -> bool:
    """A tombstone: under entries/<conversation>/deleted/ (memvault) or entries/deleted/<conversation>/
    (where agent-cli's memory proxy moves the files it deletes)."""
    return is_deleted_parts(rel.parts)


def is_deleted_parts(parts: Sequence[str]) -> bool:
    """is_deleted_path of a path's parts."""
    return len(parts) >= 3 and (parts[2] == DELETED or is_agentcli_parts(parts))


def is_agentcli_parts(parts: Sequence[str]) -> bool:
    """Whether a path's parts are those of an agent-cli tombstone: entries/deleted/<conversation>/<kind>/<file>;
    not entries/deleted/<kind>/..., the live files of a conversation called 'deleted'."""
    return len(parts) >= 5 and parts[1] == DELETED and parts[2] not in KIND_TOPS


def conversation_folder_of(rel: PurePosixPath) -> str:
    """The conversation folder an entry file belongs to."""
    return conversation_folder_of_parts(rel.parts)


def conversation_folder_of_parts(parts: Sequence[str]) -> str:
    """conversation_folder_of a path's parts."""
    return parts[2] if is_agentcli_parts(parts) else parts[1]


def kind_of(rel: PurePosixPath) -> str:
    """The kind folder of an entry file ('facts', 'turns/user'...), whichever its tombstone layout."""
    return kind_of_parts(rel.parts)


def kind_of_parts(parts: Sequence[str]) -> str:
    """kind_of a path's parts."""
    start = 3 if is_agentcli_parts(parts) or parts[2] == DELETED else 2
    if len(parts) - start >= 5 and is_day_parts(parts[-4:-1]) and "/".join(parts[start:-4]) in DATED_KINDS:
        return "/".join(parts[start:-4])  # a day folder's file
    return "/".join(parts[start:-1])


def entry_defaults(rel: PurePosixPath, created_at: datetime | None) -> dict:
    """The front matter fields an entry file may leave out, from its place and name (today's files
    and past ones alike): its conversation and role from its folders, its id from its name (else one
    derived from its path), and for a tombstone agent-cli moved (no deleted_at) its time as deleted."""
    defaults: dict = {
        "conversation_id": conversation_folder_of(rel),
        "role": ROLE_OF_KIND_DIR.get(kind_of(rel)),
        "id": id_from_filename(rel.name) or path_id(rel),
    }
    if created_at is not None:
        defaults["created_at"] = created_at
        if is_deleted_path(rel):
            defaults["deleted_at"] = created_at  # agent-cli's tombstones: their place says they are deleted
    return defaults


def agentcli_slug(value: str) -> str:
    """The folder agent-cli's memory proxy makes of a conversation id (its `_slugify`): every
    character but letters, digits and '-._' becomes '_'."""
    return "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in value) or "default"


def core_path(name: str) -> PurePosixPath:
    """core/<NAME>.md for a core file's name ('USER', 'user' or 'USER.md'); any other name is an
    UnsafePathError, so no name reaches another path."""
    stem = str(name or "").strip().removesuffix(".md").upper()
    if stem not in CORE_NAMES:
        raise UnsafePathError(f"unknown core file {str(name)[:40]!r} (expected one of {', '.join(CORE_NAMES)})")
    return PurePosixPath(CORE_DIR, f"{stem}.md")


def journal_path(day: str) -> PurePosixPath:
    """journal/<YYYY-MM-DD>.md for a real calendar day."""
    from datetime import date

    try:
        checked = date.fromisoformat(str(day).strip())
    except ValueError:
        raise UnsafePathError(f"invalid date {str(day)[:40]!r}: expected YYYY-MM-DD") from None
    return PurePosixPath(JOURNAL_DIR, f"{checked.isoformat()}.md")


def is_workspace_path(rel: PurePosixPath) -> bool:
    """True for the workspace files memvault writes and indexes: core/<NAME>.md, journal/<date>.md."""
    parts = rel.parts
    if len(parts) != 2:
        return False
    if parts[0] == CORE_DIR:
        return parts[1] in {f"{name}.md" for name in CORE_NAMES}
    return parts[0] == JOURNAL_DIR and bool(JOURNAL_NAME.match(parts[1]))


def path_id(rel: PurePosixPath) -> str:
    """An id derived from a file's path, so it never changes: a workspace file's, or an entry file's
    whose name carries none."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memvault:{rel}"))


def indexed_id(rel: PurePosixPath) -> str | None:
    """The id the index knows the file at `rel` by (an entry's, a workspace file's), or None."""
    return path_id(rel) if is_workspace_path(rel) else id_from_filename(rel.name)


HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def workspace_text(content: str) -> str:
    """What a workspace file says: its markdown without HTML comments (a new core file is only a
    comment explaining it, so it adds nothing to a prompt or the index until a person writes in it)."""
    return HTML_COMMENT.sub("", content).strip()
