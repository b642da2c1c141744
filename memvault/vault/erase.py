"""Erasing for real (docs/architecture.md, "Erasure"): memories removed from the work tree, from every
commit and every pack, and from memvault's own state files, ending in one erasure record.

- `select` reads every version of every entry file in history (one `rev-list --objects`, one
  `cat-file --batch`) and says which memories go (their paths in every commit) and which texts other
  files must stop quoting.
- `Scrubber` removes the sentences quoting an erased text from summaries, session summaries, the
  journal, core files and commit messages (without an LLM: the sentence goes, the rest stays).
- `rewrite` runs git-filter-repo (`vault/history_filter.py`) over all refs, `clean_git` then drops
  what still holds the old objects (stashes, ORIG_HEAD, reflogs, filter-repo's own notes) and repacks
  and prunes, so no object of the old history is left.
- The old commit ids map to the new ones in `.memvault/commit-map` (`mapped_commit`): a commit id a
  person saved still answers `--as-of`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memvault.errors import EntryFormatError, UsageError, VaultError
from memvault.vault import layout
from memvault.vault.entry import Entry
from memvault.vault.markdown import parse

COMMIT_MAP = "commit-map"  # under .memvault/: "<old sha> <new sha>" lines, every erase chained in
REMOTE_HEADS = "remote-heads.json"  # under .memvault/: remote-tracking refs' commits before the last erase
RECORD_TRAILER = "Memvault-Erased-Blob"
# A removed memory's text is scrubbed from other files only when it is this long: a two-word turn
# ("sounds good") would otherwise take every sentence that says the same out of every summary.
MIN_QUOTE = 16
REMOVED_ROLES = ("memory", "user", "assistant", "rule")  # --matching removes these; summaries are scrubbed
SENTENCE_END = ".!?"
EMPTY_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*$")


class Scrubber:
    """Takes the sentences quoting any of `texts` (literal) or matching any of `patterns` (regular
    expressions) out of a text; in front matter, the whole line."""

    def __init__(self, texts: Iterable[str], patterns: Iterable[str] = ()) -> None:
        parts = [re.escape(t) for t in sorted(set(texts), key=len, reverse=True) if t]
        parts += [f"(?:{p})" for p in patterns if p]
        self.regex = re.compile("|".join(parts)) if parts else None

    def matches(self, text: str) -> bool:
        return self.regex is not None and self.regex.search(text) is not None

    def scrub_bytes(self, data: bytes) -> bytes:
        if self.regex is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        clean = self.scrub(text)
        return data if clean == text else clean.encode("utf-8", "surrogateescape")

    def scrub(self, text: str) -> str:
        if not self.matches(text):
            return text
        # A quote spanning lines (a multi-paragraph turn) goes first, whole.
        text = self.regex.sub(lambda m: "" if "\n" in m.group() else m.group(), text)
        lines = text.split("\n")
        end = front_matter_end(lines)
        kept = []
        for number, line in enumerate(lines):
            if not self.matches(line):
                kept.append(line)
            elif number >= end:
                line = self.scrub_line(line)
                if not EMPTY_LINE.match(line):
                    kept.append(line)
            # a front matter line that quotes it goes whole (its YAML would be broken otherwise)
        return "\n".join(kept)

    def scrub_line(self, line: str) -> str:
        for _ in range(1000):  # each turn removes at least one match
            found = self.regex.search(line)
            if found is None:
                break
            start, end = found.span()
            if any(mark in found.group() for mark in SENTENCE_END):  # a quote of whole sentences: itself
                while end < len(line) and line[end] in " \t":
                    end += 1
            else:  # words inside a sentence: the sentence
                start, end = sentence_span(line, start, end)
            line = line[:start] + line[end:]
        return line.rstrip()


def front_matter_end(lines: list[str]) -> int:
    """The index of the first body line (0 when there is no front matter)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for number in range(1, len(lines)):
        if lines[number].strip() == "---":
            return number + 1
    return 0


def sentence_span(line: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of `line` around [start, end): from after the previous sentence's end (". ") to
    its own end mark and the spaces after it."""
    while start > 0 and not (line[start - 1] in " \t" and start >= 2 and line[start - 2] in SENTENCE_END):
        start -= 1
    while end < len(line) and not (line[end] in SENTENCE_END and (end + 1 == len(line) or line[end + 1] in " \t")):
        end += 1
    end = min(end + 1, len(line))
    while end < len(line) and line[end] in " \t":
        end += 1
    return start, end


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
    blobs: set[str] = field(default_factory=set)  # ids of the blobs removed or scrubbed (the record lists them)
    quoting: dict[str, bytes] = field(default_factory=dict)  # blob id -> bytes of each blob to scrub
    removed: set[str] = field(default_factory=set)  # ids of the blobs at the removed paths
    commits: int = 0  # commits that touch a removed or scrubbed path
    commit_ids: list[str] = field(default_factory=list)

    def scrubber(self) -> Scrubber:
        return Scrubber(self.texts, self.patterns)


def git_bytes(root: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", *args], cwd=root, input=data, capture_output=True)
    if done.returncode != 0:
        raise VaultError(f"git {args[0]} failed: {done.stderr.decode(errors='replace').strip()[-300:]}")
    return done.stdout


def history_files(root: Path) -> list[tuple[str, str, bytes]]:
    """(blob sha, path, bytes) of every version of every markdown file in every commit of every ref."""
    listed = git_bytes(root, "rev-list", "--all", "--objects").decode("utf-8", "surrogateescape")
    wanted = []
    for line in listed.splitlines():
        sha, _, path = line.partition(" ")
        if path.endswith(".md"):
            wanted.append((sha, path))
    if not wanted:
        return []
    out = git_bytes(root, "cat-file", "--batch", data="".join(f"{sha}\n" for sha, _ in wanted).encode())
    found, at = [], 0
    for sha, path in wanted:
        header_end = out.index(b"\n", at)
        header = out[at:header_end].split()
        size = int(header[2]) if len(header) == 3 else 0
        found.append((sha, path, out[header_end + 1:header_end + 1 + size]))
        at = header_end + 1 + size + 1
    return found


def read_entry(path: str, data: bytes) -> Entry | None:
    rel = PurePosixPath(path)
    if not layout.is_entry_path(rel):
        return None
    try:
        return parse(data.decode("utf-8"), path, layout.entry_defaults(rel, None))
    except (EntryFormatError, UnicodeDecodeError, ValueError):
        return None


def select(root: Path, criteria: Criteria, conversation_folders: Iterable[str] = ()) -> Selection:
    """What `criteria` erase, read from every version of every file in history. Only the versions whose
    bytes could meet the criteria are parsed (YAML costs ~1 ms a file; a vault's history has 10k+)."""
    files = history_files(root)
    texts, patterns = criteria.scrubber_parts()
    matcher = Scrubber(texts, patterns)
    folders = tuple(f"{layout.ENTRIES}/{f}/" for f in conversation_folders)
    needles = [i.encode() for i in criteria.ids] + [v.encode() for v in (criteria.conversation, criteria.user) if v]

    def maybe(path: str, data: bytes) -> bool:
        return (any(n in data for n in needles) or (bool(folders) and path.startswith(folders))
                or (criteria.matching is not None and matcher.matches(data.decode("utf-8", "surrogateescape"))))

    def meets(path: str, entry: Entry) -> bool:
        return (entry.id in criteria.ids
                or bool(criteria.conversation and (entry.conversation_id == criteria.conversation
                                                   or path.startswith(folders or ("\0",))))
                or bool(criteria.user and criteria.user in (entry.user_id, entry.actor_id))
                or bool(criteria.matching and entry.role in REMOVED_ROLES and matcher.matches(entry_text(entry))))

    chosen: dict[str, Entry] = {}
    versions: list[Entry] = []
    for _sha, path, data in files:
        if maybe(path, data) and (entry := read_entry(path, data)) is not None and meets(path, entry):
            chosen.setdefault(entry.id, entry)
            versions.append(entry)
    # Facts drawn from an erased turn are its words too (a fact's `source` is the turn's id).
    sources = [f"source: {i}".encode() for i in chosen]
    for _sha, path, data in files:
        if any(n in data for n in sources) and (entry := read_entry(path, data)) is not None \
                and entry.role == "memory" and entry.source in chosen:
            chosen.setdefault(entry.id, entry)
            versions.append(entry)
    selection = Selection(ids=set(chosen), patterns=patterns, texts=set(texts))
    for entry in chosen.values():
        selection.roles[entry.role] = selection.roles.get(entry.role, 0) + 1
    # Every version's text, for the quotes of it elsewhere.
    selection.texts |= {e.text.strip() for e in versions if len(e.text.strip()) >= MIN_QUOTE}
    # Their paths: memvault names a file '<stamp>__<id>.md'; a hand-named one is read. The same bytes
    # at another path (a copy) are caught by blob id in the rewrite.
    names = tuple(f"__{memory_id}.md" for memory_id in chosen)
    ids = [i.encode() for i in chosen]
    selection.paths = {path for _sha, path, data in files if names and (path.endswith(names) or (
        any(i in data for i in ids) and (entry := read_entry(path, data)) is not None and entry.id in chosen))}
    scrubber = selection.scrubber()
    quoting = {(sha, path, data) for sha, path, data in files if path not in selection.paths
               and scrubber.matches(data.decode("utf-8", "surrogateescape"))}
    selection.scrubbed = {path for _sha, path, _data in quoting}
    selection.quoting = {sha: data for sha, _path, data in quoting}
    selection.removed = {sha for sha, path, _data in files if path in selection.paths}
    selection.blobs = selection.removed | set(selection.quoting)
    touched = sorted(selection.paths | selection.scrubbed)
    if touched:
        out = git_bytes(root, "log", "--all", "--format=%H", "--", *touched)
        selection.commit_ids = sorted(set(out.decode().split()))
        selection.commits = len(selection.commit_ids)
    return selection


def entry_text(entry: Entry) -> str:
    return "\n".join(v for v in (entry.text, entry.evidence, entry.subject, entry.object) if v)


# -- the rewrite ------------------------------------------------------------------------------------
def rewrite(root: Path, selection: Selection, drop_blobs: Iterable[str] = ()) -> dict[str, str]:
    """Rewrite every ref without the selection (or the blobs `drop_blobs`); returns old -> new commit ids."""
    plan = {"paths": sorted(selection.paths), "drop_blobs": sorted({*drop_blobs, *selection.removed}),
            "ids": sorted(selection.ids),
            "texts": sorted(selection.texts), "patterns": selection.patterns,
            "replace_blobs": scrub_blobs(root, selection)}
    git_bytes(root, "stash", "clear")  # a stash is a commit too, and filter-repo would keep it as it is
    remote_heads = dict(line.split(" ", 1)[::-1] for line in git_bytes(
        root, "for-each-ref", "--format=%(objectname) %(refname)", "refs/remotes").decode().splitlines())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                     os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "memvault.vault.history_filter"], cwd=root, env=env,
                          input=json.dumps(plan).encode(), capture_output=True)
    if done.returncode != 0:
        raise VaultError("the history rewrite failed (the vault is as it was): "
                         + done.stderr.decode(errors="replace").strip()[-400:])
    # The remote-tracking refs would now name rewritten commits the remote never had, and keep nothing
    # erased reachable if set back: dropped, their old ids kept (no content) for push --force-with-lease.
    for ref in remote_heads:
        git_bytes(root, "update-ref", "-d", ref)
    save_json(root / layout.STATE_DIR / REMOTE_HEADS, {**load_json(root / layout.STATE_DIR / REMOTE_HEADS),
                                                       **remote_heads})
    return read_commit_map(root / ".git" / "filter-repo" / COMMIT_MAP)


def save_json(path: Path, value) -> None:
    from memvault.vault.atomic import atomic_write

    atomic_write(path, json.dumps(value, indent=1, sort_keys=True).encode("utf-8"))


def load_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def lease(state_dir: Path, remote: str, branch: str) -> str | None:
    """The commit a remote's branch held before an erase rewrote history (what push must replace)."""
    return load_json(state_dir / REMOTE_HEADS).get(f"refs/remotes/{remote}/{branch}")


def leased(state_dir: Path, remote: str, branch: str) -> None:
    """A force push replaced the remote's old history: its old head is no longer needed."""
    heads = load_json(state_dir / REMOTE_HEADS)
    if heads.pop(f"refs/remotes/{remote}/{branch}", None) is not None:
        save_json(state_dir / REMOTE_HEADS, heads)


def erased_blobs(root: Path) -> set[str]:
    """The blob ids every erasure record in this branch's history lists."""
    out = git_bytes(root, "log", "--format=%B", "--grep", "^Memvault-Operation: erase$", "HEAD")
    return set(re.findall(rf"^{RECORD_TRAILER}: ([0-9a-f]{{40,64}})$", out.decode(), re.MULTILINE))


def drop_erased(root: Path) -> int:
    """After a pull: blobs that erasure records list and this clone still holds (old local commits
    rebased onto the rewritten history) are dropped from every commit, then pruned. Returns how many."""
    listed = erased_blobs(root)
    if not listed:
        return 0
    stored = set(git_bytes(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").decode().split())
    found = listed & stored
    if not found:
        return 0
    reachable = {line.split(" ", 1)[0] for line in git_bytes(root, "rev-list", "--all", "--objects").decode(
        "utf-8", "surrogateescape").splitlines()}
    if found & reachable:  # a local commit replayed onto the new history brought one back
        mapping = rewrite(root, Selection(), drop_blobs=found)
        save_commit_map(root / layout.STATE_DIR, mapping)
    clean_git(root)  # the rest only the clone's old history (reflogs, ORIG_HEAD, loose objects) held
    return len(found)


def scrub_blobs(root: Path, selection: Selection) -> dict[str, str]:
    """Write the scrubbed version of each quoting blob into the repository: old id -> new id."""
    scrubber = selection.scrubber()
    replaced = {}
    for sha, data in selection.quoting.items():
        clean = scrubber.scrub_bytes(data)
        replaced[sha] = git_bytes(root, "hash-object", "-w", "--stdin", data=clean).decode().strip()
    return replaced


def read_commit_map(path: Path) -> dict[str, str]:
    mapping = {}
    try:
        lines = path.read_text(encoding="ascii").splitlines()[1:]  # the first line is a header
    except FileNotFoundError:
        return {}
    for line in lines:
        old, _, new = line.partition(" ")
        if old and new.strip() and old != new.strip():
            mapping[old] = new.strip()
    return mapping


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


def save_commit_map(state_dir: Path, mapping: dict[str, str]) -> None:
    """Chain this erase's map into the saved one: an id from before two erases finds today's commit."""
    saved = load_commit_map(state_dir)
    chained = {old: mapping.get(new, new) for old, new in saved.items()}
    chained.update(mapping)
    path = state_dir / COMMIT_MAP
    from memvault.vault.atomic import atomic_write

    atomic_write(path, "".join(f"{old} {new}\n" for old, new in sorted(chained.items())).encode("ascii"))


def load_commit_map(state_dir: Path) -> dict[str, str]:
    try:
        lines = (state_dir / COMMIT_MAP).read_text(encoding="ascii").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return {}
    return dict(line.split(" ", 1) for line in lines if " " in line)


def mapped_commit(state_dir: Path, name: str) -> str | None:
    """Today's commit for a commit id (or an unambiguous prefix of one) from before an erase."""
    mapping = load_commit_map(state_dir)
    found = [new for old, new in mapping.items() if old.startswith(name.lower())]
    return found[0] if len(set(found)) == 1 else None


# -- the state files under .memvault/ ------------------------------------------------------------------
KEPT_STATE = ("index.sqlite", "write.lock", ".gitignore", COMMIT_MAP, REMOTE_HEADS, "imports")


def purge_state(state_dir: Path, hit) -> list[str]:
    """Take every record `hit(text)` is true of out of the JSON and JSON-lines files under .memvault/
    (held candidates, scratchpads, the curation queue, the index journal); returns the files changed.
    The index and past indexes are the caller's (they are rebuilt or vacuumed, not edited here)."""
    from memvault.vault import jsonlines
    from memvault.vault.atomic import atomic_write

    changed = []
    for path in sorted(state_dir.rglob("*")):
        rel = path.relative_to(state_dir)
        if not path.is_file() or path.is_symlink() or rel.parts[0].startswith(KEPT_STATE) or rel.parts[0] == "asof":
            continue
        raw = path.read_bytes().decode("utf-8", "surrogateescape")
        if not hit(raw):
            continue
        if path.suffix == ".jsonl":
            kept = [r for r in jsonlines.read(path) if not hit(json.dumps(r, ensure_ascii=False))]
            atomic_write(path, jsonlines.encode(kept, redacted=False))
        elif path.suffix == ".json":
            try:
                value = json.loads(raw)
            except ValueError:
                value = None
            atomic_write(path, json.dumps(without_hits(value, hit), ensure_ascii=False, indent=1).encode("utf-8"))
        else:
            path.unlink()
        changed.append(str(rel))
    return changed


def without_hits(value, hit):
    """A JSON value without the dict entries and list items that `hit`."""
    if isinstance(value, dict):
        return {k: without_hits(v, hit) for k, v in value.items()
                if not hit(k) and not hit(json.dumps(v, ensure_ascii=False))}
    if isinstance(value, list):
        return [without_hits(v, hit) for v in value if not hit(json.dumps(v, ensure_ascii=False))]
    return None if isinstance(value, str) and hit(value) else value


def check_erasable(git) -> None:
    """Erase rewrites the repository's history: only a vault's own repository, clean, on a branch."""
    if git.enclosing:
        raise UsageError("erase rewrites history: it works on a vault with its own repository, not on one "
                         "kept inside another repository")
