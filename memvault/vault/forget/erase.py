"""Erasing for real (docs/architecture.md, "Erasure"): memories removed from the work tree, from every
commit and every pack, and from memvault's own state files, ending in one erasure record.

- `select` reads every version of every entry file in history, at every path it had (one `log --raw`,
  one `cat-file --batch`) and says which memories go (their paths in every commit) and which texts other
  files must stop quoting (`vault/forget/scrub.py` takes those sentences out).
- `rewrite` rewrites every ref's history from the oldest commit the erase changes: in this process where
  it is linear (`vault/forget/tree_rewrite.py`), by git-filter-repo otherwise
  (`vault/forget/history_filter.py`); `clean_git` then drops what still holds the old objects (stashes,
  ORIG_HEAD, reflogs, filter-repo's own notes) and repacks and prunes, so no object of the old history is left.
- The old commit ids map to the new ones (`vault/git/rewrites.py`); the state files are purged by
  `vault/forget/state_purge.py`; the erasure record is written by `core/erasing.py` and read by
  `vault/forget/record.py`.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memvault.errors import EntryFormatError, UsageError, VaultError
from memvault.vault.forget.scrub import Scrubber
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import parse
from memvault.vault.git import rewrites

# A removed memory's text is scrubbed from other files only when it is this long: a two-word turn
# ("sounds good") would otherwise take every sentence that says the same out of every summary.
MIN_QUOTE = 16
REMOVED_ROLES = ("memory", "user", "assistant", "rule")  # --matching removes these; summaries are scrubbed


@dataclass
class Criteria:
    """What to erase: any of ids, a conversation, a user (user_id or actor_id), a text (literal or regex)."""

    ids: tuple[str, ...] = ()
    conversation: str | None = None
    user: str | None = None
    matching: str | None = None
    regex: bool = False

    @property
    def kind(self) -> str:
        return next(k for k, v in (("id", self.ids), ("conversation", self.conversation), ("user", self.user),
                                   ("matching", self.matching)) if v)

    def scrubber_parts(self) -> tuple[list[str], list[str]]:
        if not self.matching:
            return [], []
        return ([], [self.matching]) if self.regex else ([self.matching], [])


@dataclass
class Selection:
    """What an erase removes (memory ids, their paths in every commit) and scrubs (texts, patterns)."""

    ids: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)
    patterns: list[str] = field(default_factory=list)
    roles: dict[str, int] = field(default_factory=dict)  # how many memories of each role
    scrubbed: set[str] = field(default_factory=set)  # paths (in some commit) whose text quotes an erased one
    about: set[str] = field(default_factory=set)  # ids erased as facts about the --user, not from them
    blobs: set[str] = field(default_factory=set)  # ids of the blobs removed or scrubbed (the record lists them)
    quoting: dict[str, bytes] = field(default_factory=dict)  # blob id -> bytes of each blob to scrub
    removed: set[str] = field(default_factory=set)  # ids of the blobs at the removed paths
    removed_at: set[str] = field(default_factory=set)  # every path those blobs had (a copy elsewhere too)
    commits: int = 0  # commits that touch a removed or scrubbed path
    commit_ids: list[str] = field(default_factory=list)

    def scrubber(self) -> Scrubber:
        return Scrubber(self.texts, self.patterns)


def git_bytes(root: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True)
    if done.returncode != 0:
        raise VaultError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def reachable_objects(root: Path, *revisions: str) -> set[str]:
    """The ids of every commit, tree and blob reachable from `revisions` ("--all", a commit)."""
    listed = git_bytes(root, "rev-list", "--objects", *revisions).decode("utf-8", "surrogateescape")
    return {line.split(" ", 1)[0] for line in listed.splitlines() if line}


def present_objects(root: Path, shas: Iterable[str]) -> set[str]:
    """Those of `shas` the repository holds (reachable or not), by one `cat-file --batch-check`."""
    shas = sorted(shas)
    if not shas:
        return set()
    listed = git_bytes(root, "cat-file", "--batch-check=%(objectname)", data="".join(f"{s}\n" for s in shas).encode())
    return {line for line in listed.decode().split("\n") if line and not line.endswith(" missing")}


@dataclass
class Versions:
    """Every version of every markdown file in history: the blobs' bytes in git's own output, one buffer,
    so a needle is found by one scan of it rather than in a million slices (`holding`)."""

    buffer: bytes
    shas: list[str]
    starts: list[int]  # where each blob's bytes start in `buffer`, ascending
    ends: list[int]
    paths: list[list[str]]  # each blob's paths in any commit

    def data(self, blob: int) -> bytes:
        return self.buffer[self.starts[blob]:self.ends[blob]]

    def files(self, blobs: Iterable[int] | None = None) -> list[tuple[str, str, bytes]]:
        """(sha, path, bytes) at every path of these blobs (all when None)."""
        chosen = range(len(self.shas)) if blobs is None else sorted(blobs)
        return [(self.shas[b], path, self.data(b)) for b in chosen for path in self.paths[b]]

    def holding(self, needles: Iterable[bytes]) -> set[int]:
        """The blobs whose bytes hold any of `needles`."""
        found: set[int] = set()
        for needle in filter(None, needles):
            at = self.buffer.find(needle)
            while at != -1:
                blob = bisect.bisect_right(self.starts, at) - 1
                if blob >= 0 and at + len(needle) <= self.ends[blob]:
                    found.add(blob)
                    at = self.buffer.find(needle, self.ends[blob])  # one hit a blob is enough
                else:  # between two blobs (git's headers): only the next blob can hold it
                    at = self.buffer.find(needle, at + 1)
        return found


def read_versions(root: Path, revision: str = "--all", only: Iterable[str] | None = None) -> Versions:
    """Every version of every markdown file in every commit of every ref (or of one revision's history;
    or only the blobs `only` lists), with every path it had: a file moved keeps its bytes, one blob at
    two paths (`rev-list --objects` names it once)."""
    keep = None if only is None else set(only)
    paths: dict[str, list[str]] = {}
    for sha, path in blob_paths(root, revision):
        if keep is None or sha in keep:
            paths.setdefault(sha, []).append(path)
    shas = list(paths)
    if not shas:
        return Versions(b"", [], [], [], [])
    asked = "".join(f"{sha}\n" for sha in shas).encode()
    # Sizes first, then the bytes without headers (each blob as "\n<bytes>\n"): where each blob starts
    # is a running sum, not a million headers parsed one by one.
    sizes = [int(size) for size in git_bytes(root, "cat-file", "--batch-check=%(objectsize)", data=asked).split()]
    out = git_bytes(root, "cat-file", "--batch=", data=asked)
    if len(sizes) != len(shas) or len(out) != sum(sizes) + 2 * len(sizes):
        raise VaultError("git cat-file did not return every version of the history's files")
    starts = [1 + offset for offset in itertools.accumulate((size + 2 for size in sizes[:-1]), initial=0)]
    return Versions(out, shas, starts, [start + size for start, size in zip(starts, sizes, strict=True)],
                    [paths[sha] for sha in shas])


def history_files(root: Path, revision: str = "--all",
                  only: Iterable[str] | None = None) -> list[tuple[str, str, bytes]]:
    """(blob sha, path, bytes) of every version of every markdown file (`read_versions`), at every path."""
    return read_versions(root, revision, only).files()


# One change of `log --raw -z`: ":<old mode> <new mode> <old sha> <new sha> <status>\0<path>\0".
RAW_CHANGE = re.compile(rb":[0-7]+ ([0-7]+) [0-9a-f]+ ([0-9a-f]+) [A-Z]\d*\x00([^\x00]*\.md)\x00")


def blob_paths(root: Path, revision: str = "--all") -> list[tuple[str, str]]:
    """Each (blob sha, path) pair of a markdown file that some commit of `revision` holds, once: every
    blob a commit's tree holds is new against a parent of it (`-m`) or of an ancestor, or is in a root
    commit, so the commits' changes name each pair."""
    listed = git_bytes(root, "log", revision, "-m", "--root", "--raw", "--no-renames", "--no-abbrev", "--format=", "-z")
    pairs = dict.fromkeys((sha, path) for mode, sha, path in RAW_CHANGE.findall(listed)
                          if mode != b"160000" and sha.strip(b"0"))  # newest commit first, as git lists them
    return [(sha.decode(), path.decode("utf-8", "surrogateescape")) for sha, path in pairs]


def history_ids(root: Path) -> set[str]:
    """The ids of the memories any commit of any ref holds (by their '<stamp>__<id>.md' names)."""
    listed = git_bytes(root, "rev-list", "--all", "--objects").decode("utf-8", "surrogateescape")
    names = (PurePosixPath(line.partition(" ")[2]).name for line in listed.splitlines())
    return {memory_id for name in names if (memory_id := layout.id_from_filename(name))}


def resolve_in(ids: set[str], prefix: str) -> str:
    """The one id of `ids` that is `prefix` or starts with it; the errors `vault.resolve` gives."""
    from memvault.errors import AmbiguousIdError, NotFoundError

    matches = sorted({prefix} & ids or (i for i in ids if layout.ID_CHARS.match(prefix) and i.startswith(prefix)))
    if not matches:
        raise NotFoundError(f"no memory with id {prefix}")
    if len(matches) > 1:
        raise AmbiguousIdError(f"id prefix {prefix} is ambiguous: {len(matches)} memories match "
                               f"({', '.join(i[:12] for i in matches[:5])}...)")
    return matches[0]


def read_entry(path: str, data: bytes) -> Entry | None:
    rel = PurePosixPath(path)
    if not layout.is_entry_path(rel):
        return None
    try:
        return parse(data.decode("utf-8"), path, layout.entry_defaults(rel, None))
    except (EntryFormatError, UnicodeDecodeError, ValueError):
        return None


def select(root: Path, criteria: Criteria, conversation_folders: Iterable[str] = ()) -> Selection:
    """What `criteria` erase, read from every version of every file in history, in four passes:

    1. the memories the criteria name (and, for --user, the facts about that user);
    2. the facts drawn from those: a fact's `source` is the turn it came from, so it holds the turn's words;
    3. every path those memories had in any commit (the rewrite removes them);
    4. the other files that quote an erased text or match --matching (the rewrite scrubs them).

    Only the versions whose bytes could match are parsed (YAML costs ~1 ms a file; a vault's history
    has 10k+), and those are found by scanning all the bytes at once for ids and texts (a million
    versions at 1M memories)."""
    versions = read_versions(root)
    texts, patterns = criteria.scrubber_parts()
    wanted = Wanted(criteria, tuple(f"{layout.ENTRIES}/{f}/" for f in conversation_folders),
                    Scrubber(texts, patterns))
    chosen, named_versions, named = named_memories(versions, wanted)
    about = set(chosen) - named
    drawn = facts_drawn_from(versions, set(chosen))
    for fact in drawn:
        chosen.setdefault(fact.id, fact)
    selection = Selection(ids=set(chosen), patterns=patterns, texts=set(texts), about=about,
                          roles=dict(Counter(entry.role for entry in chosen.values())))
    # Every version's text, for the quotes of it elsewhere.
    selection.texts |= {e.text.strip() for e in named_versions + drawn if len(e.text.strip()) >= MIN_QUOTE}
    selection.paths = paths_of(versions, selection.ids)
    quoting = quoting_files(versions, selection.paths, selection)
    selection.scrubbed = {path for _sha, path, _data in quoting}
    selection.quoting = {sha: data for sha, _path, data in quoting}
    held = [(sha, paths) for sha, paths in zip(versions.shas, versions.paths, strict=True)
            if not selection.paths.isdisjoint(paths)]
    selection.removed = {sha for sha, _paths in held}
    selection.removed_at = {path for _sha, paths in held for path in paths}
    selection.blobs = selection.removed | set(selection.quoting)
    selection.commit_ids = commits_touching(root, selection.paths | selection.scrubbed)
    selection.commits = len(selection.commit_ids)
    return selection


@dataclass
class Wanted:
    """The criteria as tests of one file version: a cheap one on its bytes, then one on its entry."""

    criteria: Criteria
    folders: tuple[str, ...]  # 'entries/<folder>/' of the --conversation's folders
    matcher: Scrubber  # --matching's text or pattern
    needles: list[bytes] = field(init=False)  # bytes a file naming the memory must hold, unless by text

    def __post_init__(self) -> None:
        c = self.criteria
        self.needles = [i.encode() for i in c.ids] + [v.encode() for v in (c.conversation, c.user) if v]

    def candidates(self, versions: Versions) -> set[int] | None:
        """The blobs that could name the memory: those holding an id (or the conversation, the user) and
        those in the conversation's folders; all (None) when a --user or --matching text must be read."""
        c = self.criteria
        if c.user or c.matching:
            return None
        in_folders = {blob for blob, paths in enumerate(versions.paths)
                      if self.folders and any(path.startswith(self.folders) for path in paths)}
        return versions.holding(self.needles) | in_folders

    def could_name(self, path: str, data: bytes) -> bool:
        """Whether the bytes could name the memory (a miss here saves parsing the file)."""
        if any(n in data for n in self.needles) or (self.folders and path.startswith(self.folders)):
            return True
        c = self.criteria
        if not (c.user or c.matching):
            return False
        text = data.decode("utf-8", "surrogateescape")
        return bool((c.user and c.user.casefold() in text.casefold()) or (c.matching and self.matcher.matches(text)))

    def names(self, path: str, entry: Entry) -> bool:
        """Whether the criteria name this memory: by id, conversation (or its folder), user, or text."""
        c = self.criteria
        in_folder = bool(self.folders) and path.startswith(self.folders)
        in_conversation = entry.conversation_id == c.conversation or in_folder
        by_user = c.user in (entry.user_id, entry.actor_id, entry.metadata.get("attributed_to"))
        by_text = entry.role in REMOVED_ROLES and self.matcher.matches(entry_text(entry))
        return (entry.id in c.ids or bool(c.conversation and in_conversation) or bool(c.user and by_user)
                or bool(c.matching and by_text))

    def about_user(self, entry: Entry) -> bool:
        return bool(self.criteria.user and is_about(entry, self.criteria.user))


def named_memories(versions: Versions, wanted: Wanted) -> tuple[dict[str, Entry], list[Entry], set[str]]:
    """Pass 1: (each chosen memory's first version by id, every version of them, the ids the criteria
    name themselves; the rest are facts about the --user)."""
    chosen: dict[str, Entry] = {}
    found: list[Entry] = []
    named: set[str] = set()
    for _sha, path, data in versions.files(wanted.candidates(versions)):
        if not wanted.could_name(path, data) or (entry := read_entry(path, data)) is None:
            continue
        if wanted.names(path, entry):
            named.add(entry.id)
        elif not wanted.about_user(entry):
            continue
        chosen.setdefault(entry.id, entry)
        found.append(entry)
    return chosen, found, named


def facts_drawn_from(versions: Versions, turns: set[str]) -> list[Entry]:
    """Pass 2: every version of the facts whose `source` is one of `turns`."""
    return [entry for _sha, path, data in versions.files(versions.holding(f"source: {i}".encode() for i in turns))
            if (entry := read_entry(path, data)) is not None and entry.role == "memory" and entry.source in turns]


def paths_of(versions: Versions, ids: set[str]) -> set[str]:
    """Pass 3: the paths of `ids` in any commit. memvault names a file '<stamp>__<id>.md'; a hand-named
    one (or a copy) is read."""
    if not ids:
        return set()
    names = tuple(f"__{memory_id}.md" for memory_id in ids)
    by_name = {path for paths in versions.paths for path in paths if path.endswith(names)}
    return by_name | {path for _sha, path, data in versions.files(versions.holding(i.encode() for i in ids))
                      if (entry := read_entry(path, data)) is not None and entry.id in ids}


def quoting_files(versions: Versions, removed: set[str], selection: Selection) -> list[tuple[str, str, bytes]]:
    """Pass 4: the versions of the files not removed that quote an erased text (or match --matching):
    the texts are looked for in all the bytes at once, a --regex in each version."""
    scrubber = selection.scrubber()
    blobs = None if selection.patterns else versions.holding(t.encode() for t in selection.texts)
    return [(sha, path, data) for sha, path, data in versions.files(blobs)
            if path not in removed and scrubber.matches(data.decode("utf-8", "surrogateescape"))]


def commits_touching(root: Path, paths: set[str]) -> list[str]:
    """The ids of every commit of every ref that touches one of `paths`, sorted."""
    if not paths:
        return []
    out = git_bytes(root, "log", "--all", "--format=%H", "--", *sorted(paths))
    return sorted(set(out.decode().split()))


def is_about(entry: Entry, user: str) -> bool:
    """Whether a fact is about `user` though not theirs (docs/architecture.md, "Erasure", --user): its
    triple's subject names them, or its object does and the fact belongs to no other user. Names are
    compared whole (case and spacing aside), never searched in the text: Bob's "I met Alice at the gym"
    stays, as does a fact whose subject is a name the vault cannot tie to the id ("Alice Smith")."""
    def names(value) -> bool:
        return isinstance(value, str) and " ".join(value.split()).casefold() == user.casefold()

    return entry.role == "memory" and (names(entry.subject) or (names(entry.object) and entry.user_id in (None, user)))


def entry_text(entry: Entry) -> str:
    return "\n".join(v for v in (entry.text, entry.evidence, entry.subject, entry.object) if v)


# -- the rewrite ------------------------------------------------------------------------------------
def rewrite(root: Path, selection: Selection, drop_blobs: Iterable[str] = (), whole: bool = False) -> dict[str, str]:
    """Rewrite every ref without the selection (or the blobs `drop_blobs`); returns old -> new commit ids.
    Only the commits from the oldest one the selection touches on are rewritten, unless `whole`. The
    selection's own rewrite of part of history is done in this process (`vault/forget/tree_rewrite.py`:
    only the trees along its paths are written) where the history is one it handles surely; the rest
    (a merge, an annotated tag, blobs named by id alone, the whole history) is git-filter-repo's."""
    plan = {"paths": sorted(selection.paths), "drop_blobs": sorted({*drop_blobs, *selection.removed}),
            "ids": sorted(selection.ids),
            "texts": sorted(selection.texts), "patterns": selection.patterns,
            "replace_blobs": scrub_blobs(root, selection)}
    git_bytes(root, "stash", "clear")  # a stash is a commit too, and filter-repo would keep it as it is
    if not (whole or drop_blobs):  # blobs named by id alone (a sync's adoption) may be anywhere: every commit
        plan["refs"] = rewritten_refs(root, selection)
    remote_heads = dict(line.split(" ", 1)[::-1] for line in git_bytes(
        root, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes").decode().splitlines())
    mapping = rewrite_in_process(root, selection, plan) if "refs" in plan else None
    if mapping is None:
        mapping = filter_repo(root, plan)
    # The remote-tracking refs would now name rewritten commits the remote never had, and keep nothing
    # erased reachable if set back: dropped, their old ids kept (no content) for push --force-with-lease.
    for ref in remote_heads:
        git_bytes(root, "update-ref", "-d", ref)
    rewrites.keep_remote_heads(root / layout.STATE_DIR, remote_heads)
    return mapping


def rewrite_in_process(root: Path, selection: Selection, plan: dict) -> dict[str, str] | None:
    """The plan's rewrite by `tree_rewrite` (old -> new commit ids); None where it is filter-repo's."""
    from memvault.vault.forget import tree_rewrite

    edits = tree_rewrite.Edits(paths=set(plan["paths"]), drop=set(plan["drop_blobs"]), replace=plan["replace_blobs"],
                               touched=selection.paths | selection.removed_at | selection.scrubbed,
                               scrubber=selection.scrubber(), ids=[i.encode() for i in plan["ids"]])
    try:
        return tree_rewrite.rewrite(root, edits, plan["refs"])
    except tree_rewrite.NotForUs:
        return None


def filter_repo(root: Path, plan: dict) -> dict[str, str]:
    """The plan's rewrite by git-filter-repo in a child process (`vault/forget/history_filter.py`)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                     os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "memvault.vault.forget.history_filter"], cwd=root, env=env,
                          input=json.dumps(plan).encode(), capture_output=True)
    if done.returncode != 0:
        raise VaultError("the history rewrite failed (the vault is as it was): "
                         + done.stderr.decode(errors="replace").strip()[-400:])
    return rewrites.read_commit_map(root / ".git" / "filter-repo" / "commit-map")


def rewritten_refs(root: Path, selection: Selection) -> list[str]:
    """What filter-repo must rewrite, as fast-export's revisions: every ref, less the commits no
    rewritten commit descends from (empty: all of history). A commit that holds an erased path or a
    quoting blob descends from one that put it there (`introducing_commits`); one whose message changes
    is found by reading every message. Each of those and its descendants is rewritten; the commits
    before them are kept, ids and all (at a million memories, most of history for a recent memory)."""
    from memvault.vault.forget.history_filter import cleaned_message

    listed = git_bytes(root, "log", "--all", "-z", "--format=%H %P%n%B")
    scrubber, ids = selection.scrubber(), [i.encode() for i in sorted(selection.ids)]
    parents: dict[str, list[str]] = {}
    changed = introducing_commits(root, selection)
    for record in listed.split(b"\0"):
        head, _, message = record.partition(b"\n")
        if not head:
            continue
        commit, *its_parents = head.decode().split()
        parents[commit] = its_parents
        if cleaned_message(message, scrubber, ids) != message:
            changed.add(commit)
    children: dict[str, list[str]] = {}
    for commit, its_parents in parents.items():
        for parent in its_parents:
            children.setdefault(parent, []).append(commit)
    rewritten, todo = set(), list(changed)
    while todo:
        commit = todo.pop()
        if commit not in rewritten:
            rewritten.add(commit)
            todo.extend(children.get(commit, ()))
    kept = sorted({parent for commit in rewritten for parent in parents.get(commit, ()) if parent not in rewritten})
    if not kept:
        return []
    refs = git_bytes(root, "for-each-ref", "--format=%(refname)").decode().split()
    return [*refs, *(f"^{commit}" for commit in kept)]


def introducing_commits(root: Path, selection: Selection) -> set[str]:
    """The commits that put an erased path, or a blob that quotes an erased text, into their tree: a
    summary that quotes a memory only since yesterday has its older versions left alone. A merge counts
    when the blob is new against any parent; a line not understood counts too."""
    paths = selection.paths | selection.scrubbed
    if not paths:
        return set()
    listed = git_bytes(root, "-c", "core.quotepath=false", "log", "--all", "-m", "--no-renames", "--raw",
                       "--no-abbrev", "--format=%x00%H", "--", *sorted(paths)).decode("utf-8", "surrogateescape")
    found = set()
    for block in listed.split("\0")[1:]:
        commit, *lines = block.split("\n")
        for line in filter(None, lines):
            fields, _, path = line.partition("\t")
            blob = fields.split()[3] if len(fields.split()) == 5 else None
            if path in selection.paths or blob in selection.quoting or path not in paths:
                found.add(commit.strip())
                break
    return found


def scrub_blobs(root: Path, selection: Selection) -> dict[str, str]:
    """Write the scrubbed version of each quoting blob into the repository: old id -> new id."""
    scrubber = selection.scrubber()
    replaced = {}
    for sha, data in selection.quoting.items():
        clean = scrubber.scrub_bytes(data)
        replaced[sha] = git_bytes(root, "hash-object", "-w", "--stdin", data=clean).decode().strip()
    return replaced


def put_back_erased_files(root: Path, blobs: set[str]) -> list[str]:
    """After a rewrite killed between moving the refs and resetting the work tree: every work-tree file
    whose bytes are an erased blob gets HEAD's version back (or goes, when HEAD has none). A person's
    own edits, whose bytes are new, are left alone. Returns the repository paths put back."""
    listed = git_bytes(root, "status", "--porcelain", "-z", "-uall", "--no-renames").decode("utf-8", "surrogateescape")
    paths = [item[3:] for item in listed.split("\0") if len(item) > 3]
    files = [p for p in paths if (root / p).is_file()]
    if not files:
        return []
    hashed = git_bytes(root, "hash-object", "--stdin-paths", data="\n".join(files).encode()).decode().split()
    erased_here = [path for path, sha in zip(files, hashed, strict=True) if sha in blobs]
    for path in erased_here:
        if git_bytes(root, "--literal-pathspecs", "ls-tree", "HEAD", "--", path).strip():
            git_bytes(root, "--literal-pathspecs", "checkout", "HEAD", "--", path)
        else:
            git_bytes(root, "--literal-pathspecs", "rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            (root / path).unlink(missing_ok=True)
    return erased_here


def clean_git(root: Path) -> None:
    """Drop everything that still reaches an old object, then every object nothing reaches."""
    git_dir = root / ".git"
    for name in ("ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG", "MERGE_MSG", "SQUASH_MSG", "AUTO_MERGE"):
        (git_dir / name).unlink(missing_ok=True)
    for folder in ("filter-repo", "refs/original", "logs"):
        shutil.rmtree(git_dir / folder, ignore_errors=True)
    git_bytes(root, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    git_bytes(root, "repack", "-a", "-d", "-q")  # -a (not -A): unreachable packed objects are not kept
    git_bytes(root, "prune", "--expire=now")  # loose ones
    git_bytes(root, "prune-packed")


def check_erasable(git) -> None:
    """Erase rewrites the repository's history: only a vault's own repository, clean, on a branch."""
    if git.enclosing:
        raise UsageError("erase rewrites history: it works on a vault with its own repository, not on one "
                         "kept inside another repository")
