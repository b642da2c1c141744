"""Time travel: the vault as it was at a past date or commit, read from git's objects.

Nothing here touches the work tree or git's index: a past state is `git ls-tree` of one commit and
`git cat-file --batch` of its entry files. `--as-of` takes a date (`2026-05-01`: the vault at the end
of that day, UTC), an ISO 8601 time (`2026-05-01T12:00:00+02:00`; no zone means UTC) or anything git
names a commit by (`HEAD~3`, a short sha, a tag).
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import PurePosixPath

from memvault.errors import AmbiguousIdError, EntryFormatError, NotFoundError, UsageError, VaultError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import parse
from memvault.vault.git.repository import OWN_CONFIG, VaultGit

DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# A commit name must look like one (a ref, a sha, HEAD~2, v1^): nothing git would read as an option.
COMMIT_NAME = re.compile(r"^[\w][\w./~^@{}+-]*$")
TREE_RECORD = re.compile(r"(\d+) (\w+) (\w+)\t([^\0]*)\0")  # `git ls-tree -z`: mode, kind, object, path


@dataclass(frozen=True)
class PastCommit:
    """The commit a past state is read from, and the moment it stands for (recency is counted from it)."""

    sha: str
    moment: datetime
    asked: str  # what the user wrote, for messages


class BeforeTheVault(UsageError):
    """A moment before the vault's first commit: the vault did not exist then. `first` is that
    commit (None in a repository without commits), for a page that offers the earliest moment."""

    def __init__(self, when: str, first: PastCommit | None) -> None:
        self.when, self.first = when, first
        since = f": its first commit is from {first.moment:%Y-%m-%d %H:%M} UTC" if first else ""
        super().__init__(f"the vault has no commit at or before {when}, it did not exist yet{since}")


def first_commit(git: VaultGit) -> PastCommit | None:
    """The vault's earliest commit (its `init`), None when it has none."""
    if not git.has_commits():
        return None
    # the root commits only (a sync may have joined two histories): not a walk of the whole log
    roots = [line.split() for line in git.run("log", "--max-parents=0", "--format=%H %ct", "HEAD", "--").splitlines()]
    sha, stamp = min(roots, key=lambda root: int(root[1]))
    return PastCommit(sha, datetime.fromtimestamp(int(stamp), UTC), sha[:12])


def resolve(git: VaultGit, when: str) -> PastCommit:
    """The commit that holds the vault as it was at `when` (a date, a time, or a commit name).
    UsageError when `when` names neither, or the vault has no commit that early."""
    when = when.strip() if isinstance(when, str) else ""
    if not when:
        raise UsageError("--as-of needs a date (YYYY-MM-DD), an ISO 8601 time or a commit")
    moment = _moment(when)
    if moment is not None and is_future(when, moment):
        raise UsageError(f"--as-of {when} is in the future: give a moment already past (or leave --as-of out for now)")
    if moment is not None:
        # '@<seconds> +0000' is git's raw date: a bare '@<seconds>' below 1e8 (before March 1973) is
        # read by git's approxidate as something else, today often, so a 1970 date answered with today.
        stamp = int(moment.timestamp())
        sha = git.run("rev-list", "-1", f"--before=@{stamp} +0000", "HEAD", "--").strip() \
            if git.has_commits() and stamp >= 0 else ""
        if not sha:
            raise BeforeTheVault(when, first_commit(git))
        return PastCommit(sha, moment, when)
    if not COMMIT_NAME.match(when):
        raise UsageError(f"--as-of {when!r} is neither a date (YYYY-MM-DD), an ISO 8601 time nor a commit")
    found = _commit_time(git, when)
    if found is None:  # a commit from before an erase rewrote history: its new id (docs/architecture.md, Erasure)
        from memvault.vault.format.layout import STATE_DIR
        from memvault.vault.git.rewrites import mapped_commit

        mapped = mapped_commit(git.root / STATE_DIR, when)
        found = _commit_time(git, mapped) if mapped else None
    if found is None:
        raise UsageError(f"--as-of {when!r} is neither a date (YYYY-MM-DD), an ISO 8601 time nor a commit of the vault")
    sha, stamp = found
    return PastCommit(sha, datetime.fromtimestamp(stamp, UTC), when)


def _commit_time(git: VaultGit, name: str) -> tuple[str, int] | None:
    """(sha, commit time) of the commit `name` names, None when it names none: one git process (every
    page of the web page resolves its moment)."""
    try:
        fields = git.run("show", "-s", "--format=%H %ct", f"{name}^{{commit}}", "--").split()
    except VaultError:
        return None
    return (fields[0], int(fields[1])) if len(fields) == 2 and fields[1].isdigit() else None


def is_future(when: str, moment: datetime) -> bool:
    """Whether `when` has not begun yet (today's date has: it stands for today's end). Past and present
    only: a moment ahead would read today's vault with every memory's recency as good as nothing."""
    now = datetime.now(UTC)
    if DATE_ONLY.match(when):
        return moment.date() > now.date()
    return moment > now + FUTURE_GRACE


FUTURE_GRACE = timedelta(minutes=5)  # clocks disagree a little: "now" from another machine is still now


def _moment(when: str) -> datetime | None:
    """A date is the end of that day (UTC); a time without a zone is UTC; None if `when` is neither."""
    try:
        if DATE_ONLY.match(when):
            day = datetime.strptime(when, "%Y-%m-%d").date()
            return datetime.combine(day, time.max, UTC).replace(microsecond=0)
        if not re.match(r"^\d{4}-\d{2}-\d{2}[T ]\d", when):
            return None
        moment = datetime.fromisoformat(when)
    except ValueError:
        raise UsageError(f"--as-of {when!r} is not a valid date or ISO 8601 time") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def files_at(git: VaultGit, past: PastCommit, include_deleted: bool = False) -> list[tuple[PurePosixPath, bytes]]:
    """The entry files of the vault at `past` (live ones only unless `include_deleted`) and their bytes."""
    wanted = listing_at(git, past, include_deleted)
    contents = _blobs(git, [blob for _, blob in wanted])
    return [(rel, contents[blob]) for rel, blob in wanted]


def listing_at(git: VaultGit, past: PastCommit, include_deleted: bool = False) -> list[tuple[PurePosixPath, str]]:
    """The entry files of the vault at `past` and their blob names, nothing read: a page of a big
    vault's past reads only its own files (`parsed_at`)."""
    return list(_listing(git, past.sha, include_deleted))


def names_at(git: VaultGit, past: PastCommit) -> tuple[tuple[str, str], ...]:
    """listing_at's live files as strings (vault-relative path, blob name), in the same order: for
    a reader of all of them (10k PurePosixPaths cost more to make than a page to read)."""
    return tuple((rel, blob) for rel, blob, gone in _records(git, past.sha) if not gone)


@functools.lru_cache(maxsize=8)
def _listing(git: VaultGit, sha: str, include_deleted: bool) -> tuple[tuple[PurePosixPath, str], ...]:
    """listing_at's answer, kept: a commit never changes, and the web page reads pages of one past
    in a row."""
    return tuple((PurePosixPath(rel), blob) for rel, blob, gone in _records(git, sha) if include_deleted or not gone)


@functools.lru_cache(maxsize=8)
def _records(git: VaultGit, sha: str) -> tuple[tuple[str, str, bool], ...]:
    """(vault-relative path, blob name, whether a tombstone) of every entry file of a commit, from
    one `git ls-tree`, kept (a commit never changes)."""
    listing = git.run("ls-tree", "-r", "-z", sha, "--", git.repo_path(layout.ENTRIES))
    wanted: list[tuple[str, str, bool]] = []
    in_vault = _vault_paths(git)
    for mode, kind, blob, repo_rel in TREE_RECORD.findall(listing):
        rel = in_vault(repo_rel)
        parts = rel.split("/")
        if kind != "blob" or mode == "120000" or not layout.is_entry_parts(parts):
            continue  # a symbolic link is never followed, in the past as today
        wanted.append((rel, blob, layout.is_deleted_parts(parts)))
    return tuple(wanted)


def _vault_paths(git: VaultGit):
    """A function from a path git prints (from the repository's root) to the vault's own, as a
    string. Every path lies under the vault's folder: its prefix is cut (os.path.relpath per file
    costs more than the whole ls-tree on a 10k vault)."""
    folder = git.repo_path(".")
    prefix = "" if folder == "." else folder.rstrip("/") + "/"
    return lambda repo_rel: (repo_rel[len(prefix):] if repo_rel.startswith(prefix)
                             else str(git.vault_path(repo_rel)))


def changed_since(git: VaultGit, past: PastCommit) -> set[str]:
    """The entry files (vault-relative paths) whose bytes in the work tree are not those of `past`
    (changed, added or gone since): one `git diff` of the commit against the work tree, which reads
    only the files whose stat git's index does not vouch for. What is not in it reads today as it
    read then."""
    return _paths_named(git, "diff", "--name-only", "--no-renames", "-z", past.sha)


@functools.lru_cache(maxsize=8)
def changed_between(git: VaultGit, past: PastCommit) -> tuple[dict[str, str], dict[str, str]]:
    """The entry files (vault-relative paths) whose bytes at HEAD are not those of `past`, each with
    git's letter for how (A: added since, so `past` lacks it; M, D, T: `past` holds it), and apart the
    files only moved since, bytes unchanged (HEAD's path -> `past`'s: `relayout` moves every file): one
    tree-to-tree `git diff`, which reads only the trees that differ and never the work tree (0.3 s at 1M
    files for 100k added; 1.4 s at 100k for 90k moved, busy machine), where `changed_since` stats every file."""
    out = git.run("diff", "--name-status", "--find-renames=100%", "-z", past.sha, "HEAD", "--",
                  git.repo_path(layout.ENTRIES)).split("\0")
    in_vault = _vault_paths(git)
    changed: dict[str, str] = {}
    moved: dict[str, str] = {}
    at = 0
    while at < len(out) - 1:
        status = out[at]
        if status.startswith(("R", "C")):  # a copy's source stays where it was: only its new path changed
            old, new = in_vault(out[at + 1]), in_vault(out[at + 2])
            if status.startswith("R"):
                moved[new] = old
            else:
                changed[new] = "A"
            at += 3
        else:
            changed[in_vault(out[at + 1])] = status[:1]
            at += 2
    return changed, moved


def uncommitted(git: VaultGit, staged: bool) -> set[str]:
    """The entry files (vault-relative paths) held otherwise than HEAD holds them: in the work tree
    (`git diff-files`: each tracked file whose stat git's index does not vouch for; a hand edit), or with
    `staged` in git's index (`git diff-index --cached`: a write between `git add` and its commit). Files
    git does not track are in neither."""
    if staged:
        return _paths_named(git, "diff-index", "--cached", "--name-only", "-z", "HEAD")
    return _paths_named(git, "diff-files", "--name-only", "-z")


def _paths_named(git: VaultGit, *args: str) -> set[str]:
    """The vault-relative entry paths a git command that lists paths (-z) names."""
    out = git.run(*args, "--", git.repo_path(layout.ENTRIES))
    in_vault = _vault_paths(git)
    return {in_vault(repo_rel) for repo_rel in out.split("\0") if repo_rel}


def _by_name(git: VaultGit, sha: str) -> dict[str | None, list[tuple[str, str]]]:
    """The files of a commit (tombstones too) by the id their name gives (None: named otherwise,
    summary.md), kept as the listing is: the web page opens one past memory after another, and
    reading 10k names for each cost more than the rest of the page."""
    grouped: dict[str | None, list[tuple[str, str]]] = {}
    for rel, blob, _ in _records(git, sha):
        grouped.setdefault(layout.id_from_filename(rel.rpartition("/")[2]), []).append((rel, blob))
    return grouped


def live_files_at(git: VaultGit, past: PastCommit, rels: list[str]
                  ) -> list[tuple[PurePosixPath, Entry | EntryFormatError]]:
    """Those of these vault-relative paths that were live entry files at `past`, parsed as
    `entries_at` parses them (one `git cat-file --batch`; a path `past` did not hold is left out)."""
    wanted = [rel for rel in rels if layout.is_entry_parts(rel.split("/")) and not layout.is_deleted_parts(
        rel.split("/"))]
    names = [f"{past.sha}:{git.repo_path(rel)}" for rel in wanted]
    contents = read_objects(git, names)
    return [(PurePosixPath(rel), _parsed(PurePosixPath(rel), contents[name], past))
            for rel, name in zip(wanted, names, strict=True) if contents[name] is not None]


def parsed_at(git: VaultGit, past: PastCommit, wanted: list[tuple[PurePosixPath, str]]
              ) -> list[tuple[PurePosixPath, Entry | EntryFormatError]]:
    """These files of `listing_at`, parsed as `entries_at` parses them."""
    contents = _blobs(git, [blob for _, blob in wanted])
    return [(rel, _parsed(rel, contents[blob], past)) for rel, blob in wanted]


def entries_at(git: VaultGit, past: PastCommit, include_deleted: bool = False
               ) -> list[tuple[PurePosixPath, Entry | EntryFormatError]]:
    """Every entry file of the vault at `past`, parsed (or the error that says why it could not be)."""
    return [(rel, _parsed(rel, content, past)) for rel, content in files_at(git, past, include_deleted)]


def entry_at(git: VaultGit, past: PastCommit, prefix: str) -> tuple[PurePosixPath, Entry, str]:
    """The memory whose id is (or starts with) `prefix` as it read at `past`, with its file's text; a
    tombstone if it had been deleted by then. NotFoundError if it did not exist yet (or was purged)."""
    prefix = layout.check_id_text(prefix)  # a UUID or its prefix, or any id a file gives (matched exactly)
    by_prefix = bool(layout.ID_CHARS.match(prefix))
    found: dict[str, tuple[PurePosixPath, Entry, str]] = {}
    wanted = prefix.lower() if by_prefix else prefix
    # As today's vault.resolve: a file named '<created>__<id>.md' is that id's, so only the files whose
    # name can hold it (and those named otherwise, summary.md) are read: a page, not the whole past.
    named = _by_name(git, past.sha)
    ids = [i for i in named if i is not None and i.startswith(wanted)] if by_prefix else [wanted]
    candidates = [(PurePosixPath(rel), blob) for i in (*ids, None) for rel, blob in named.get(i, ())]
    contents = _blobs(git, [blob for _, blob in candidates])
    for rel, content in ((rel, contents[blob]) for rel, blob in candidates):
        entry = _parsed(rel, content, past)
        if isinstance(entry, Entry) and (entry.id.startswith(prefix) if by_prefix else entry.id == prefix):
            # a live file wins over a tombstone of the same id (a restore leaves both in history)
            if entry.id not in found or not layout.is_deleted_path(rel):
                found[entry.id] = (rel, entry, content.decode("utf-8"))
    if prefix in found:
        return found[prefix]
    if not found:
        raise NotFoundError(f"no memory with id {prefix} in the vault as of {past.asked} (commit {past.sha[:12]})")
    if len(found) > 1:
        raise AmbiguousIdError(f"id prefix {prefix} is ambiguous as of {past.asked}: {len(found)} memories match")
    return next(iter(found.values()))


def _parsed(rel: PurePosixPath, content: bytes, past: PastCommit) -> Entry | EntryFormatError:
    """The entry of one past file; fields it leaves out come from its place and name, as today's
    files' do (the creation time from the name, else the commit's)."""
    stamp = layout.time_from_filename(rel.name)
    defaults = layout.entry_defaults(rel, datetime.fromtimestamp(stamp, UTC) if stamp is not None else past.moment)
    try:
        return parse(content.decode("utf-8"), str(rel), {k: v for k, v in defaults.items() if v is not None})
    except UnicodeDecodeError:
        return EntryFormatError(rel, "not UTF-8 text")
    except EntryFormatError as exc:
        return exc


def _blobs(git: VaultGit, shas: list[str]) -> dict[str, bytes]:
    """The bytes of these blobs, through one `git cat-file --batch` process."""
    found: dict[str, bytes] = {}
    for sha, content in read_objects(git, shas).items():
        if content is None:
            raise VaultError(f"git cat-file could not read blob {sha[:12]}")
        found[sha] = content
    return found


def read_objects(git: VaultGit, names: list[str]) -> dict[str, bytes | None]:
    """The bytes of these objects (blob names, or `<commit>:<path>` with a path from the repository's
    root), None for each one that does not exist, through one `git cat-file --batch` process: a
    page that shows many past texts costs one git process, not one per text."""
    if not names:
        return {}
    unique = list(dict.fromkeys(names))
    out = _run(git, ("cat-file", "--batch"), ("\n".join(unique) + "\n").encode())
    found: dict[str, bytes | None] = {}
    position = 0
    for name in unique:
        end = out.index(b"\n", position)
        header = out[position:end].split(b" ")
        if len(header) != 3 or not header[2].isdigit():  # "<name> missing" (a name may hold spaces)
            found[name] = None
            position = end + 1
            continue
        size = int(header[2])
        found[name] = out[end + 1:end + 1 + size]
        position = end + 1 + size + 1  # the content, then a newline
    return found


def _run(git: VaultGit, args: tuple[str, ...], stdin: bytes | None = None) -> bytes:
    """Read-only git in the vault's repository, bytes out (blob sizes count bytes), one-line errors."""
    try:
        done = subprocess.run(["git", "--literal-pathspecs", *OWN_CONFIG, *args], cwd=git.work_dir, input=stdin,
                              capture_output=True)
    except OSError as exc:
        raise VaultError(f"cannot run git: {exc.strerror or exc}") from None
    if done.returncode != 0:
        raise VaultError(f"git {args[0]} failed: {git.explain(done.stderr.decode('utf-8', 'replace'))}")
    return done.stdout

