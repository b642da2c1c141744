"""A past's view: the vault as it was at a commit, searched without building that past's whole index.

A past index (past.py) parses, embeds and indexes every file of the commit: minutes at 1M memories,
while a month back most of them read today as they read then. The view takes today's index for those,
read-only and never caught up, and hides its rows that may not say what the commit said:
- the files a tree-to-tree `git diff <commit> HEAD` names (edited, deleted or added since; a file only
  moved keeps today's row, shown at the path it had);
- the entries of today's journal (written since it caught up), and up to WORK_TREE_CHECK_MAX rows the
  work tree's and git's index's own changes (`git diff-files`, `git diff-index --cached`: a hand edit
  today's index may already hold; they stat every file, 6-8 s at 1M on a busy machine);
- rows created after the commit's moment (a file git does not track yet, a proxy's turn on its way to
  its commit: no diff names it);
- the turns whose lexical context (index.fts: the turns around them) holds a turn hidden or changed.
The commit's versions of the hidden files it held are indexed into a small index beside it
(`.memvault/asof/<commit>-<key>/`, kept as past indexes are), their vectors copied from today's by
text where it holds them, their turns' context taken from the view's own neighbours. A search ranks
over today's rows minus the hidden ones plus the small index's (PastView): its lexical lane scores
both as the past's whole index would (bm25 of the view's row count, mean length and word counts),
its dense lane asks both and merges; reads that list or walk the graph see one `entries` and one
`relations` (temporary views over both). So a month back at 1M costs the diffs, the hidden rowids and
the few files changed, not the vault.

Not used (past.py builds the whole past instead) when today's index is missing, of another model or
schema, or unfinished, or when most of it changed since the commit (then the view would be a whole
past index anyway, and past.py's is kept per commit).
Limits, of what today's index already holds and no commit does yet: a file git does not track with a
creation time at or before the commit's moment (a hand-written file, backdated) shows in the past; and
above WORK_TREE_CHECK_MAX rows, a tracked file edited by hand reads as it reads today in a past it was
unchanged since (`memvault sync` or `doctor --fix` commits such edits).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.index import db, journal
from memvault.index.catchup import Pending, write_entries
from memvault.index.fts import insert_fts
from memvault.index.queries import BOUNDED_ABOVE, MATCH_BUDGET, Walk
from memvault.index.ranking import ROW_SIZE
from memvault.index.store import BUILD_KEY, FILE_NAME, IndexStore
from memvault.index.text import CONTEXT_TURNS, FTS_TOKENIZER, LEXICAL_VERSION, TURN_ROLES, fts_expression, query_terms
from memvault.vault.format.entry import Entry
from memvault.vault.git.timetravel import PastCommit, changed_between, live_files_at, uncommitted

if TYPE_CHECKING:
    from memvault.models.embedders import Embedder
    from memvault.vault.write.store import Vault

OFFSET = 1 << 40  # the small index's rowids in the view: above any of today's
MOST_CHANGED = 0.5  # past this share of today's rows hidden, past.py's whole index is built instead
WORK_TREE_CHECK_MAX = 200_000  # rows of today's index up to which the work tree's own changes are asked of git
_TURNS = f"role IN ({', '.join(repr(r) for r in TURN_ROLES)})"
HIDDEN = "SELECT rowid FROM temp.hidden"


class Unusable(Exception):
    """Today's index cannot stand in for the past (missing, another model or schema, a build unfinished)."""


def past_view(vault: Vault, embedder: Embedder, past: PastCommit) -> PastView | None:
    """The view of the vault at `past` (see the module), or None when it cannot be made: the caller
    builds the whole past index then. The caller closes it."""
    path = vault.state_dir / FILE_NAME
    if not path.exists():
        return None
    try:
        today = TodayPart(path, embedder.identity, embedder.dims)
    except Unusable:
        return None
    try:
        view = _open(vault, embedder, past, today)
    except BaseException:
        today.close()
        raise
    if view is None:
        today.close()
    return view


def _open(vault: Vault, embedder: Embedder, past: PastCommit, today: TodayPart) -> PastView | None:
    from filelock import FileLock

    from memvault.index.past import KEEP, evict

    found = _hidden(vault, past, today)
    if found is None:
        return None
    hidden, entries, moved = found
    root = vault.state_dir / "asof"
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"{past.sha}-{_key(entries)}"
    with FileLock(str(root / f"{folder.name}.lock")):  # two processes never build the same one at once
        small = _SmallStore.open(folder, embedder.identity, embedder.dims)
        try:
            if small.rebuilt or small.build_incomplete:
                _build(small, vault, embedder, past, entries, today)
        except BaseException:
            small.close()
            raise
    os.utime(folder)  # most recently used: evicted last
    evict(root, keep=KEEP)
    return PastView(today, small, hidden, _moved_rows(today.conn, moved))


def _hidden(vault: Vault, past: PastCommit, today: TodayPart
            ) -> tuple[set[int], list[tuple[PurePosixPath, Entry]], dict[str, str]] | None:
    """(today's rows hidden, the commit's entries that stand for them, the files only moved since: today's
    path -> then), their rowids also in today's temp.hidden; None when most of today's rows changed since."""
    # Today's index as it stood before git is asked: what changed after is in git's answers.
    today.conn.execute("BEGIN")
    today.conn.execute("SELECT 1 FROM entries LIMIT 1").fetchall()
    git = vault.git
    # The work tree's own changes cost a stat of every file: asked only up to WORK_TREE_CHECK_MAX rows.
    work_tree_too = db.newest_rowid(today.conn) <= WORK_TREE_CHECK_MAX
    with ThreadPoolExecutor(3) as pool:  # git's processes run side by side
        asked = [pool.submit(changed_between, git, past)]
        if work_tree_too:
            asked += [pool.submit(uncommitted, git, False), pool.submit(uncommitted, git, True)]
        pending = journal.peek(vault.state_dir)
        hidden = _created_after(today.conn, past)  # while git works
        (since, moved), *work_tree = (job.result() for job in asked)
    changed = set(since).union(*work_tree, (path for path in pending.values() if path))
    for new, old in list(moved.items()):  # a file moved and then changed: as if deleted and added
        if new in changed:
            since |= {old: "D", new: "A"}
            changed |= {old, new}
            del moved[new]
    by_path = _rows_of(today.conn, "path", changed)  # their files: `changed` names them
    hidden |= by_path | _rows_of(today.conn, "id", set(pending))
    if len(hidden) > MOST_CHANGED * max(db.newest_rowid(today.conn), 1):
        return None
    _hide(today.conn, hidden)
    # The files the commit held of those hidden (a file only moved since at the path it had then), and
    # the turns whose context holds one of them, today's or the commit's.
    around = _context_neighbours(today.conn, _hidden_turns(today.conn))
    _hide(today.conn, around)
    hidden |= around
    wanted = {rel for rel in changed if since.get(rel) != "A"} | {
        moved.get(rel, rel) for rel in _paths_of(today.conn, hidden - by_path) - changed}
    entries = _first_of_each_id(live_files_at(git, past, sorted(wanted)))
    around = _context_neighbours(today.conn, [(entry.conversation_id, entry.created_at.timestamp(), OFFSET)
                                              for _, entry in entries if entry.role in TURN_ROLES], hidden)
    if around:
        _hide(today.conn, around)
        hidden |= around
        more = {moved.get(rel, rel) for rel in _paths_of(today.conn, around) - changed} - wanted
        entries = _first_of_each_id(entries + live_files_at(git, past, sorted(more)))
    return hidden, entries, moved


def _rows_of(conn: Any, column: str, values: set[str]) -> set[int]:
    """Today's rows whose `column` (path or id) is one of these (the list walked, each looked up: twice as
    fast as `IN (...)` for 100k paths)."""
    return {rowid for rowid, in conn.execute(f"SELECT e.rowid FROM json_each(?) j CROSS JOIN entries e "
                                             f"ON e.{column} = j.value", (json.dumps(list(values)),))}


def _moved_rows(conn: Any, moved: dict[str, str]) -> dict[int, str]:
    """rowid -> the commit's path, of today's rows of files only moved since (their rows are the commit's
    otherwise: the view shows them at the path they had)."""
    return {rowid: moved[path] for rowid, path in conn.execute(
        "SELECT rowid, path FROM entries WHERE path IN (SELECT value FROM json_each(?))", (json.dumps(list(moved)),))}


def _created_after(conn: Any, past: PastCommit) -> set[int]:
    """Today's rows created after the commit's moment."""
    return {rowid for rowid, in conn.execute(
        "SELECT rowid FROM entries WHERE created_at > ?", (past.moment.timestamp(),))}


def _hide(conn: Any, rowids: Iterable[int]) -> None:
    """Add these rowids to this connection's temp.hidden."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS hidden (rowid INTEGER PRIMARY KEY)")
    conn.execute("INSERT OR IGNORE INTO temp.hidden SELECT value FROM json_each(?)", (json.dumps(list(rowids)),))


def _paths_of(conn: Any, rowids: set[int]) -> set[str]:
    return {path for path, in conn.execute("SELECT path FROM entries WHERE rowid IN (SELECT value FROM json_each(?))",
                                           (json.dumps(list(rowids)),))}


def _hidden_turns(conn: Any) -> list[tuple[str, float, int]]:
    """(conversation, created_at, rowid) of the hidden turns, in that order (filtered and sorted here: with
    either in the SQL the planner walks `entries` by an index and probes the hidden rows, 7 times slower)."""
    return sorted((conversation, created_at, rowid) for conversation, created_at, rowid, role in conn.execute(
        f"SELECT e.conversation_id, e.created_at, e.rowid, e.role FROM ({HIDDEN}) h JOIN entries e "
        "ON e.rowid = h.rowid") if role in TURN_ROLES)


def _context_neighbours(conn: Any, turns: Sequence[tuple[str, float, int]], hidden: set[int] | None = None) -> set[int]:
    """Today's visible turns within CONTEXT_TURNS of these turns (conversation, created_at, rowid) in
    time order: their lexical context holds one of them. Without `hidden`, these turns are today's
    hidden ones (temp.hidden), sorted, whose runs are walked whole: the visible turns inside a run's span, and
    CONTEXT_TURNS on each side of it. With it, the turns are the commit's (not today's rows)."""
    found: set[int] = set()
    if hidden is not None:  # a few past turns: the visible turns beside each
        for conversation, created_at, rowid in turns:
            found |= _beside(conn, conversation, created_at, rowid, "<", CONTEXT_TURNS)
            found |= _beside(conn, conversation, created_at, rowid, ">", CONTEXT_TURNS)
        return found - hidden
    by_conversation: dict[str, list[tuple[float, int]]] = {}
    for conversation, created_at, rowid in turns:
        by_conversation.setdefault(conversation, []).append((created_at, rowid))
    for conversation, keys in by_conversation.items():
        (first_at, first), (last_at, last) = keys[0], keys[-1]
        inside = conn.execute(
            f"SELECT created_at, rowid FROM entries WHERE conversation_id = ? AND {_TURNS} "
            f"AND (created_at, rowid) > (?, ?) AND (created_at, rowid) < (?, ?) AND rowid NOT IN ({HIDDEN})",
            (conversation, first_at, first, last_at, last)).fetchall()
        sequence = sorted([(key, True) for key in keys] + [(key, False) for key in inside])
        near = [i for i, (_, is_hidden) in enumerate(sequence) if is_hidden]
        found |= {sequence[j][0][1] for i in near for j in range(max(0, i - CONTEXT_TURNS),
                                                                    min(len(sequence), i + CONTEXT_TURNS + 1))
                  if not sequence[j][1]}
        found |= _beside(conn, conversation, first_at, first, "<", CONTEXT_TURNS)
        found |= _beside(conn, conversation, last_at, last, ">", CONTEXT_TURNS)
    return found


def _beside(conn: Any, conversation: str, created_at: float, rowid: int, side: str, limit: int) -> set[int]:
    """Today's `limit` visible turns of a conversation just before ("<") or after (">") a moment."""
    order = "DESC" if side == "<" else "ASC"
    return {r for r, in conn.execute(
        f"SELECT rowid FROM entries WHERE conversation_id = ? AND {_TURNS} AND (created_at, rowid) {side} (?, ?) "
        f"AND rowid NOT IN ({HIDDEN}) ORDER BY created_at {order}, rowid {order} LIMIT ?",
        (conversation, created_at, rowid, limit))}


def _first_of_each_id(found: list[tuple[PurePosixPath, Any]]) -> list[tuple[PurePosixPath, Entry]]:
    """The entries among these parsed files in path order, a broken file left out and the first file
    of an id kept, as the past index keeps them."""
    kept: dict[str, tuple[PurePosixPath, Entry]] = {}
    for rel, entry in sorted(found, key=lambda pair: str(pair[0])):
        if isinstance(entry, Entry) and entry.id not in kept:
            kept[entry.id] = (rel, entry)
    return list(kept.values())


def _key(entries: list[tuple[PurePosixPath, Entry]]) -> str:
    """What the small index holds, as a name: the same files at the same commit make the same index."""
    digest = hashlib.sha256()
    for rel, entry in entries:
        digest.update(f"{rel}\0{entry.id}\0{entry.hash}\0".encode())
    return digest.hexdigest()[:16]


def _build(small: IndexStore, vault: Vault, embedder: Embedder, past: PastCommit,
           entries: list[tuple[PurePosixPath, Entry]], today: TodayPart) -> None:
    from memvault.index.past import vectors_of
    from memvault.models.embedders import KnownVectors

    small.clear()
    small.begin_build(f"the files changed since {past.sha[:12]}")
    texts = {entry.hash: entry.text for _, entry in entries}
    # The vectors of texts today's row of the same file still holds (a turn beside a change), by its
    # path; the others looked for among all of today's rows (a scan: no index of texts).
    same = today.conn.execute("SELECT rowid, text FROM entries WHERE path IN (SELECT value FROM json_each(?)) "
                              "AND text_hash IN (SELECT value FROM json_each(?))",
                              (json.dumps([str(rel) for rel, _ in entries]), json.dumps(list(texts)))).fetchall()
    vectors = today.vectors([rowid for rowid, _ in same])
    known = {text: vectors[rowid] for rowid, text in same if rowid in vectors}
    known |= vectors_of(vault.state_dir / FILE_NAME, embedder.identity,
                        {key: text for key, text in texts.items() if text not in known})
    write_entries(small, KnownVectors(embedder, list(texts.values()), known),
                  [Pending(rel, entry, entry.hash) for rel, entry in entries])
    # A turn's context is the view's turns around it, not the small index's alone.
    with small.conn:
        for rowid, text, conversation, created_at in small.conn.execute(
                f"SELECT rowid, text, conversation_id, created_at FROM entries WHERE {_TURNS}").fetchall():
            context = [*reversed(_around(today, small, conversation, created_at, OFFSET + rowid, "<", CONTEXT_TURNS)),
                       *_around(today, small, conversation, created_at, OFFSET + rowid, ">", CONTEXT_TURNS)]
            small.conn.execute("DELETE FROM entries_fts WHERE rowid = ?", (rowid,))
            insert_fts(small.conn, rowid, text, created_at, [text for _, _, text in context])
    small.take_rebuild_reason()
    small.finish_build()


def _around(today: TodayPart, small: IndexStore, conversation: str, created_at: float, rowid: int, side: str,
            limit: int) -> list[tuple[float, int, str]]:
    """The view's `limit` turns of a conversation nearest a (created_at, view rowid) on one side ("<" before,
    ">" after), nearest first: (created_at, view rowid, text)."""
    order = "DESC" if side == "<" else "ASC"
    sql = (f"SELECT created_at, rowid, text FROM entries WHERE conversation_id = ? AND {_TURNS} "
           f"AND (created_at, rowid) {side} (?, ?){{}} ORDER BY created_at {order}, rowid {order} LIMIT ?")
    found = today.conn.execute(sql.format(f" AND rowid NOT IN ({HIDDEN})"),
                               (conversation, created_at, rowid, limit)).fetchall()
    found += [(at, OFFSET + r, text) for at, r, text in small.conn.execute(
        sql.format(""), (conversation, created_at, rowid - OFFSET, limit))]
    return sorted(found, key=lambda t: (t[0], t[1]), reverse=side == "<")[:limit]


class TodayPart(IndexStore):
    """Today's index, read-only, as the view's first part: its hidden rows are never a candidate."""

    def __init__(self, path: Path, identity: str, dims: int) -> None:  # opened, never repaired nor written
        import apsw

        self.path, self.identity, self.dims = Path(path), identity, int(dims)
        self.rebuilt, self.rebuild_reason = False, None
        try:
            self.conn = db.connect(self.path, readonly=True)
        except apsw.Error as exc:
            raise Unusable(str(exc)) from None
        try:
            db.check_schema(self.conn)
            meta = {key: db.get_meta(self.conn, key) for key in ("embedder", "dims", "lexical", BUILD_KEY)}
        except (apsw.Error, db.IncompatibleIndexError) as exc:
            self.conn.close()
            raise Unusable(str(exc)) from None
        if (meta["embedder"] != identity or meta["dims"] != str(dims) or meta[BUILD_KEY]
                or meta["lexical"] != f"{LEXICAL_VERSION}:{FTS_TOKENIZER}"):
            self.conn.close()
            raise Unusable("today's index is of another model or unfinished")
        self.has_coarse = db.table_exists(self.conn, db.COARSE_TABLE)
        self.snapshot_path = self.path.with_name(self.path.name + ".vectors")
        self.snapshot = None
        self.unhidden = f" AND +rowid NOT IN ({HIDDEN})"
        self.view: PastView | None = None

    def _every_match(self, query_text: str) -> Walk | None:
        return None if self.view is None else self.view.walk(query_text, self, bounded=False)

    def _walk(self, query_text: str) -> Walk | None:
        return None if self.view is None else self.view.walk(query_text, self, bounded=True)


class PastView:
    """The reads a search, a listing and the graph make of an index (`IndexStore`'s), over today's rows
    minus the hidden ones and the small index's rows (their rowids OFFSET up). `conn` reads `entries`
    and `relations` as one (temporary views)."""

    def __init__(self, today: TodayPart, small: _SmallStore, hidden: set[int], moved: dict[int, str]) -> None:
        import numpy as np

        # The reads that list see `entries` and `relations` as the view's: a connection of their own,
        # since today's part reads today's tables by those names.
        unified = db.connect(today.path, readonly=True)
        self.today, self.small, self.conn = today, small, unified
        self.path, self.identity, self.dims = today.path, today.identity, today.dims
        self.lock = threading.RLock()
        today.excluded = np.array(sorted(hidden), dtype=np.int64)
        today.view = small.view = self  # their walks are ranked against the view's rows
        _hide(unified, hidden)
        unified.execute("ATTACH DATABASE ? AS past", (str(small.path),))
        self.moved = moved
        unified.execute("CREATE TEMP TABLE moved (rowid INTEGER PRIMARY KEY, path TEXT)")
        unified.execute("INSERT INTO temp.moved SELECT key, value FROM json_each(?)", (json.dumps(moved),))
        columns = ", ".join(db.ENTRY_COLUMNS)
        then = columns.replace("path", "coalesce((SELECT m.path FROM temp.moved m WHERE m.rowid = e.rowid), e.path) "
                                       "AS path", 1)
        relation_columns = "source, source_key, relationship, destination, destination_key, category"
        unified.execute(
            f"CREATE TEMP VIEW entries AS SELECT e.rowid AS rowid, {then} FROM main.entries e "
            f"WHERE e.rowid NOT IN ({HIDDEN}) UNION ALL SELECT rowid + {OFFSET} AS rowid, {columns} FROM past.entries")
        unified.execute(
            f"CREATE TEMP VIEW relations AS SELECT rowid AS rowid, entry_rowid, {relation_columns} FROM main.relations "
            f"WHERE entry_rowid NOT IN ({HIDDEN}) UNION ALL SELECT rowid + {OFFSET} AS rowid, entry_rowid + {OFFSET} "
            f"AS entry_rowid, {relation_columns} FROM past.relations")
        self._corpus: tuple[int, float] | None = None
        self._holding: dict[str, int] = {}

    def close(self) -> None:
        for conn in (self.conn, self.today.conn):
            conn.close()
        self.small.close()

    def __enter__(self) -> PastView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ranking against the view's rows -----------------------------------------------------------
    def corpus(self) -> tuple[int, float]:
        """(rows, their mean length in tokens) of the view's lexical rows."""
        if self._corpus is None:
            rows, total = 0, 0
            for part in (self.today, self.small):
                whole = part.conn.execute(f"SELECT {ROW_SIZE}(entries_fts, 1) FROM entries_fts LIMIT 1").fetchone()
                count, tokens = json.loads(whole[0]) if whole else (0, 0)
                rows, total = rows + count, total + tokens
            # The hidden rows' sizes from FTS5's own table of them (`docsize`: a varint a column): asking
            # FTS5 row by row costs a Python call each, 0.5 s for 100k rows.
            sizes = [sz for sz, in self.today.conn.execute(
                f"SELECT sz FROM entries_fts_docsize WHERE id IN ({HIDDEN})")]
            rows, total = rows - len(sizes), total - _varint_sum(b"".join(sizes))
            self._corpus = (rows, total / rows if rows else 0.0)
        return self._corpus

    def holding(self, word: str) -> int:
        """How many of the view's lexical rows hold this word."""
        if word not in self._holding:
            match = fts_expression([word])
            self._holding[word] = sum(part.conn.execute(
                f"SELECT count(*) FROM entries_fts WHERE entries_fts MATCH ?{unhidden}", (match,)).fetchone()[0]
                for part, unhidden in ((self.today, self.today.unhidden), (self.small, "")))
        return self._holding[word]

    def walk(self, query_text: str, part: IndexStore, bounded: bool) -> Walk | None:
        """A part's lexical walk, ranked as the past's whole index ranks (index.queries, `_walk`): every
        match below BOUNDED_ABOVE rows or unbounded; above, the words found in at most MATCH_BUDGET rows,
        or when every word is that common the part's newest MATCH_BUDGET visible matches."""
        words = query_terms(query_text)
        match = fts_expression(words)
        if match is None:
            return None
        corpus = self.corpus()
        counts = [self.holding(word) for word in words]
        if not bounded or corpus[0] <= BOUNDED_ABOVE:
            return Walk(match, corpus=corpus, holding=tuple(counts))
        rare, total = [], 0
        for word, count in sorted(zip(words, counts, strict=True), key=lambda pair: pair[1]):
            if total + count > MATCH_BUDGET:
                break
            rare.append(word)
            total += count
        if total:
            kept = [word for word in words if word in rare]
            return Walk(fts_expression(kept), corpus=corpus, holding=tuple(self.holding(word) for word in kept))
        unhidden = part.unhidden if part is self.today else ""
        floor = part.conn.execute(f"SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?{unhidden} "
                                  "ORDER BY rowid DESC LIMIT 1 OFFSET ?", (match, MATCH_BUDGET)).fetchone()
        return Walk(match, floor[0] if floor else 0, corpus=corpus, holding=tuple(counts))

    # -- the reads a search makes (retrieve.search) ------------------------------------------------
    def rows(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]:
        mine, theirs = _split(rowids)
        found = self.today.rows(mine)
        for rowid in found.keys() & self.moved.keys():
            found[rowid]["path"] = self.moved[rowid]
        for rowid, row in self.small.rows(theirs).items():
            found[OFFSET + rowid] = {**row, "rowid": OFFSET + rowid}
        return found

    def vectors(self, rowids: Iterable[int]) -> dict[int, Any]:
        mine, theirs = _split(rowids)
        return self.today.vectors(mine) | {OFFSET + r: v for r, v in self.small.vectors(theirs).items()}

    def nearest(self, query_vec: Any, k: int, where: str = "1", params: Sequence[Any] = (),
                conversation: str | None = None) -> list[tuple[int, float]]:
        # Each part is asked for more than k: ties are cut below by the commit's order, not the part's.
        found = self.today.nearest(query_vec, 2 * k, _visible(where), params, conversation)
        found += [(OFFSET + r, s) for r, s in self.small.nearest(query_vec, 2 * k, where, params, conversation)]
        return self._best(found, k)

    def lexical_scopes(self, query_text: str, k: int, where: str, params: Sequence[Any],
                       conversations: Sequence[str] | None) -> list[list[tuple[int, float]]]:
        mine = self.today.lexical_scopes(query_text, 2 * k, _visible(where), params, conversations)
        theirs = self.small.lexical_scopes(query_text, 2 * k, where, params, conversations)
        return [self._best(a + [(OFFSET + r, s) for r, s in b], k) for a, b in zip(mine, theirs, strict=True)]

    def _best(self, found: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
        """The k best of (view rowid, score), ties in the past's whole index's order: its rowids follow the
        commit's listing, which is the paths' byte order (git's tree order)."""
        paths = {r: row["path"].encode() for r, row in self.rows([r for r, _ in found]).items()}
        return sorted(found, key=lambda hit: (-hit[1], paths.get(hit[0], b"")))[:k]

    def lexical_of(self, query_text: str, rowids: Sequence[int]) -> dict[int, float]:
        mine, theirs = _split(rowids)
        return self.today.lexical_of(query_text, mine) | {
            OFFSET + r: s for r, s in self.small.lexical_of(query_text, theirs).items()}

    def adjacent_turns(self, rowids: Sequence[int]) -> dict[int, list[int]]:
        """rowid -> the view's turns just before and after it in its conversation, the same UTC day."""
        found = {}
        for rowid, row in self.rows(rowids).items():
            if row["role"] not in TURN_ROLES:
                continue
            day = int(row["created_at"] // 86400)
            found[rowid] = [r for side in ("<", ">") for at, r, _ in _around(
                self.today, self.small, row["conversation_id"], row["created_at"], rowid, side, 1)
                if int(at // 86400) == day]
        return found

    # -- the reads that list (core.browsing) -------------------------------------------------------
    def count(self, where: str = "1", params: Sequence[Any] = ()) -> int:
        return self.conn.execute(f"SELECT count(*) FROM entries e WHERE {where or '1'}", tuple(params)).fetchone()[0]

    def select(self, where: str = "1", params: Sequence[Any] = (), limit: int | None = None,
               newest_first: bool = True) -> list[dict[str, Any]]:
        return IndexStore.select(self, where, params, limit, newest_first)


class _SmallStore(IndexStore):
    """The small index, its walks ranked against the view's rows."""

    view: PastView | None = None

    def _every_match(self, query_text: str) -> Walk | None:
        return None if self.view is None else self.view.walk(query_text, self, bounded=False)

    def _walk(self, query_text: str) -> Walk | None:
        return None if self.view is None else self.view.walk(query_text, self, bounded=True)


def _varint_sum(data: bytes) -> int:
    """The sum of a run of SQLite varints (7 bits a byte, high bit set on all but a number's last)."""
    if not data or max(data) < 0x80:  # every number below 128: one byte each
        return sum(data)
    total = value = 0
    for byte in data:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            total, value = total + value, 0
    return total


def _visible(where: str) -> str:
    """A filter on today's `entries e` that also leaves the hidden rows out."""
    return f"({where or '1'}) AND e.rowid NOT IN ({HIDDEN})"


def _split(rowids: Iterable[int]) -> tuple[list[int], list[int]]:
    """(today's rowids, the small index's own) of these view rowids."""
    rowids = list(rowids)
    return [r for r in rowids if r < OFFSET], [r - OFFSET for r in rowids if r >= OFFSET]
