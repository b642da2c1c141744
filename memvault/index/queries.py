"""Searching the index: the k nearest vectors (sqlite-vec, with a coarse pass over sign bits for
large scans) and the k best rows by BM25 (FTS5), both under a filter.

Filters arrive as SQL over `entries e` (with `?` placeholders), so dense and lexical search can
apply them inside the query rather than after it. `IndexQueries` is one part of `IndexStore`
(index.store): it works on the store's connection and its vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memvault.index import db
from memvault.index.db import guarded, ids_json
from memvault.index.ranking import bm25_given, bm25_of_shares, fts5_bm25
from memvault.index.snapshot import Snapshot
from memvault.index.text import TURN_ROLES, fts_expression, fts_query, query_terms

# More conversations than this in a filtered dense search: one scan of the whole vec0 table with a
# rowid filter costs less than one partition query per conversation.
MAX_PARTITION_QUERIES = 16
FEW_LEFT_OUT = 8  # rows a filter may drop from a partition before listing the kept rowids pays
# A KNN over more vectors than this takes the coarse pass (IndexQueries._knn): the exact scan of 20k
# costs ~12 ms of CPU, of 100k ~53 ms. It re-scores COARSE_SHARE of the vectors scanned (at least
# COARSE_CANDIDATES): the sign bits of MiniLM's vectors are a rough guide, and how many of the exact top
# 10 the re-scored ones hold depends on that share, not on the count (LoCoMo's questions over all
# 5,882 turns: 0.4% -> 0.83, 1% -> 0.96, 4% -> 0.998; the synthetic 100k vault, whose templated
# sentences are its worst case: 1% -> 0.75). At 100k, 1% costs ~50 ms of CPU per search in all, the
# exact scan ~75 ms (quiet machine); past a few hundred thousand the re-scoring's point lookups cost
# more than the scan saves, which is where the plan for 1M (docs/figures.md) takes over.
COARSE_ABOVE = 20_000
COARSE_SHARE = 0.01
COARSE_CANDIDATES = 400
# A lexical lane over an index of more than BOUNDED_ABOVE rows ranks at most about MATCH_BUDGET FTS matches
# (`_bounded`): ranking every match of a common word was 0.5-0.7 s at 1M rows; the newest 1,000 ranked by
# FTS5's bm25() ~27 ms, most of it bm25's count of each common word's rows (index.ranking), and by
# `memvault_bm25` with the shares estimated from those matches ~6 ms (LoCoMo's turns walked with a budget of
# 200, a tenth of the walks then of common words only: recall@5 / @10 0.732 / 0.794 with the shares estimated
# and with them counted alike). Below it every match is ranked:
# bounding LoCoMo's 5,882 turns at 2,000 cost 0.003 of recall@5 and @10 (0.737 / 0.805 -> 0.734 / 0.802).
BOUNDED_ABOVE = 50_000
MATCH_BUDGET = 1_000
_TURN_ROLES = ", ".join(repr(role) for role in TURN_ROLES)
# The nearest turn of `e`'s conversation on one side of it (format: "<" DESC or ">" ASC), the same UTC day.
_ADJACENT = (f"SELECT n.rowid FROM entries n WHERE n.conversation_id = e.conversation_id AND n.role IN ({_TURN_ROLES}) "
             "AND (n.created_at, n.rowid) {0} (e.created_at, e.rowid) "
             "AND CAST(n.created_at / 86400 AS INTEGER) = CAST(e.created_at / 86400 AS INTEGER) "
             "ORDER BY n.created_at {1}, n.rowid {1} LIMIT 1")


@dataclass(frozen=True)
class Walk:
    """A lexical walk: the FTS expression, the lowest rowid it ranks, and for a walk of only the newest
    matches of common words each word's estimated share of the rows (else FTS5 counts them)."""

    match: str
    floor: int = 0
    shares: tuple[float, ...] | None = None
    # (rows, their mean length) and each word's count of rows, of the rows ranked against when they are
    # not this table's own (a past's view: index.past_view); None: the table's own.
    corpus: tuple[int, float] | None = None
    holding: tuple[int, ...] = ()

    @property
    def rank(self) -> str:
        """The rank expression (lower is better)."""
        if self.corpus is not None:
            return bm25_given(*self.corpus, self.holding)
        return fts5_bm25() if self.shares is None else bm25_of_shares(self.shares)


class IndexQueries:
    """Dense and lexical queries of one index (`IndexStore`)."""

    # A past's view (index.past_view) hides today's rows changed since its commit: their rowids (int64,
    # sorted) are never a candidate of `nearest`, and `unhidden` keeps them out of a walk of the FTS rows.
    excluded: Any = None
    unhidden: str = ""

    @guarded
    def dense(self, query_vec: Any, k: int, where: str = "1", params: Sequence[Any] = ()) -> list[tuple[int, float]]:
        """The k rows nearest to `query_vec` by cosine among `entries e WHERE <where>`:
        (rowid, cosine similarity), best first.

        The filter runs first on the entries table (indexed, cheap); the KNN then scans only the
        partitions (conversations) it touched, restricted to the matching rowids, so a scoped
        search costs what the scope holds, not what the vault holds.
        """
        k = min(int(k), db.VEC_K_MAX)
        if k <= 0:
            return []
        blob = self._blob(query_vec)
        knn = "SELECT rowid, distance FROM entries_vec WHERE embedding MATCH ? AND k = ?"
        if _is_trivial(where):
            found = self.conn.execute(knn, (blob, k)).fetchall()
        else:
            by_conversation: dict[str, list[int]] = {}
            for rowid, conversation in self.conn.execute(
                    f"SELECT e.rowid, e.conversation_id FROM entries e WHERE {where}", tuple(params)):
                by_conversation.setdefault(conversation, []).append(rowid)
            if len(by_conversation) <= MAX_PARTITION_QUERIES:
                found = []
                for conversation, rowids in by_conversation.items():
                    left_out = self._partition_size(conversation) - len(rowids)
                    if left_out <= FEW_LEFT_OUT:
                        # The filter keeps (nearly) the whole partition, as a scope-only search does (its
                        # summary aside): the partition key alone is twice as fast as listing 10k rowids;
                        # asking for `left_out` more neighbours makes up for the ones dropped here.
                        allowed = set(rowids)
                        found += [hit for hit in self.conn.execute(
                            knn + " AND conversation_id = ?",
                            (blob, min(k + left_out, db.VEC_K_MAX), conversation)) if hit[0] in allowed][:k]
                        continue
                    found += self.conn.execute(
                        knn + " AND conversation_id = ? AND rowid IN (SELECT value FROM json_each(?))",
                        (blob, min(k, len(rowids)), conversation, ids_json(rowids))).fetchall()
            else:
                rowids = [r for group in by_conversation.values() for r in group]
                found = self.conn.execute(knn + " AND rowid IN (SELECT value FROM json_each(?))",
                                          (blob, min(k, len(rowids)), ids_json(rowids))).fetchall()
        found.sort(key=lambda hit: (hit[1], hit[0]))
        return [(rowid, 1.0 - distance) for rowid, distance in found[:k]]

    def _partition_size(self, conversation: str) -> int:
        """Rows of this conversation in the vector table (every indexed entry has its vector)."""
        return self.conn.execute("SELECT count(*) FROM entries WHERE conversation_id = ?",
                                 (conversation,)).fetchone()[0]

    @guarded
    def nearest(self, query_vec: Any, k: int, where: str = "1", params: Sequence[Any] = (),
                conversation: str | None = None) -> list[tuple[int, float]]:
        """`dense` for a filter that keeps nearly every row of what it covers (a search's scope):
        `conversation`'s partition (every partition when None) is asked for the nearest vectors
        first, a few more than k, and only those are checked against the filter; a filter that drops
        more falls back to `dense`. Named, `conversation` must hold every row `where` can match.

        Above COARSE_ABOVE vectors the nearest are found by a coarse pass (see `_knn`): then the
        result is approximate (COARSE_SHARE says how close).
        """
        k = min(int(k), db.VEC_K_MAX)
        if k <= 0:
            return []
        blob = self._blob(query_vec)
        fetch = min(2 * k + FEW_LEFT_OUT, db.VEC_K_MAX)  # room for summaries and the like, dropped below
        kept = self._kept(self._knn(blob, fetch, conversation), k, fetch, where, params)
        if kept is None:  # a narrow filter: its own rows are listed first
            return self.dense(query_vec, k, where, params)
        return [(rowid, 1.0 - distance) for rowid, distance in kept]

    def _kept(self, found: list[tuple[int, float]], k: int, fetch: int, where: str,
              params: Sequence[Any]) -> list[tuple[int, float]] | None:
        """The first k of `found` (the best `fetch` of a scope, best first) that pass the filter; None
        when the filter left fewer than k of a full `fetch`: then the filtered query must run instead."""
        if not _is_trivial(where):
            allowed = self._passing([rowid for rowid, _ in found], where, params)
            kept = [hit for hit in found if hit[0] in allowed]
            if len(kept) < k and len(found) == fetch:
                return None
            found = kept
        return found[:k]

    def _knn(self, blob: bytes, k: int, conversation: str | None) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors of a partition (of all when None), nearest
        first (ties by rowid); fewer than k only when that is all there is.

        Above COARSE_ABOVE vectors, the nearest COARSE_SHARE of them (at least COARSE_CANDIDATES) by the
        Hamming distance of their sign bits are re-scored on their float vectors: two thirds of the CPU of
        the exact scan at 100k, and most of its top k (see COARSE_SHARE). The vectors' snapshot does that
        in numpy when there is one (index.snapshot; 2.5 s -> ~20 ms at 1M), else sqlite-vec (db.COARSE_TABLE)."""
        scope, scope_params = ("", ()) if conversation is None else (" AND conversation_id = ?", (conversation,))
        vectors = self.current_snapshot()
        if vectors is not None and not 0 < vectors.size(conversation) <= COARSE_ABOVE:  # none, or many
            import numpy as np

            return vectors.nearest(np.frombuffer(blob, dtype=np.float32), k, conversation, COARSE_SHARE,
                                   COARSE_CANDIDATES, self.excluded)
        # Rows hidden are asked for on top and dropped (sqlite-vec's KNN cannot leave rows out).
        hidden = set() if self.excluded is None else set(self.excluded.tolist())
        scanned = self._scanned(conversation) if self.has_coarse and vectors is None else 0
        if scanned > COARSE_ABOVE:
            wanted = max(k, COARSE_CANDIDATES, math.ceil(COARSE_SHARE * scanned)) + len(hidden)
            candidates = [rowid for rowid, in self.conn.execute(
                f"SELECT rowid FROM {db.COARSE_TABLE} WHERE coarse MATCH vec_quantize_binary(?) AND k = ?" + scope,
                (blob, min(wanted, db.VEC_K_MAX), *scope_params)) if rowid not in hidden]
            return self._rescored(blob, candidates)[:k]
        found = [hit for hit in self.conn.execute(
            "SELECT rowid, distance FROM entries_vec WHERE embedding MATCH ? AND k = ?" + scope,
            (blob, min(k + len(hidden), db.VEC_K_MAX), *scope_params)) if hit[0] not in hidden]
        return sorted(found, key=lambda hit: (hit[1], hit[0]))[:k]

    def current_snapshot(self) -> Snapshot | None:
        """The vectors' snapshot file (index.snapshot), caught up with the log; None when there is none
        that describes this index."""
        vectors = self.snapshot
        if self.snapshot_path is None:  # rows without vectors (index.past_rows)
            return None
        if vectors is None or not vectors.catch_up(self.conn):
            vectors = Snapshot.open(self.snapshot_path)
            if vectors is not None and (vectors.dims != self.dims or not vectors.catch_up(self.conn)):
                vectors = None
            self.snapshot = vectors
        return vectors

    def _scanned(self, conversation: str | None) -> int:
        """Vectors a KNN over this partition (all when None) compares."""
        if conversation is None:
            return self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        return self._partition_size(conversation)

    def _rescored(self, blob: bytes, rowids: list[int]) -> list[tuple[int, float]]:
        """(rowid, exact cosine distance) of these rows' float vectors to the query's, nearest first."""
        import numpy as np

        vectors = self.vectors(rowids)
        if not vectors:
            return []
        rowids = list(vectors)
        query = np.frombuffer(blob, dtype=np.float32).astype(np.float64)
        matrix = np.stack([vectors[rowid] for rowid in rowids]).astype(np.float64)
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
        # A zero vector has no direction: vec0 gives it distance 1 (cosine 0), and so does this.
        cosines = np.divide(matrix @ query, norms, out=np.zeros(len(rowids)), where=norms > 0)
        return sorted(zip(rowids, (1.0 - cosines).tolist(), strict=True), key=lambda hit: (hit[1], hit[0]))

    def _holds_few(self, conversations: list[str]) -> bool:
        """Whether these conversations hold at most a quarter of the index's rows (counted only that far:
        past it, listing their rowids costs more than it saves); the vectors' snapshot counts them at once."""
        vectors = self.current_snapshot()
        if vectors is not None:
            return sum(vectors.size(name) for name in conversations) <= vectors.size(None) // 4
        quarter = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0] // 4
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entries WHERE conversation_id IN (SELECT value FROM json_each(?)) "
            "LIMIT ?)", (ids_json(conversations), quarter + 1)).fetchone()[0] <= quarter

    def _passing(self, rowids: list[int], where: str, params: Sequence[Any]) -> set[int]:
        """The rowids among these that `entries e WHERE <where>` keeps."""
        if not rowids:
            return set()
        # NOT INDEXED: the listed rowids are looked up; the planner walked a conversation's rows by its
        # index instead (500,000 of them at 1M, 80 ms).
        return {rowid for rowid, in self.conn.execute(
            f"SELECT e.rowid FROM entries AS e NOT INDEXED WHERE e.rowid IN (SELECT value FROM json_each(?)) "
            f"AND ({where})", (ids_json(rowids), *params))}

    @guarded
    def lexical(self, query_text: str, k: int, where: str = "1", params: Sequence[Any] = ()) -> list[tuple[int, float]]:
        """The k best rows by BM25 for free text among `entries e WHERE <where>`:
        (rowid, score), higher is better. Empty for a query with no words."""
        walk = self._every_match(query_text)
        if walk is None or k <= 0:
            return []
        # The filter comes first in the SQL text so its `?` placeholders keep their positions.
        rank = walk.rank
        sql = (f"SELECT e.rowid, -{rank} FROM entries e JOIN entries_fts ON entries_fts.rowid = e.rowid "
               f"WHERE ({where or '1'}) AND entries_fts MATCH ? ORDER BY {rank}, e.rowid LIMIT ?")
        return [(rowid, float(score)) for rowid, score in self.conn.execute(sql, (*params, walk.match, int(k)))]

    def _every_match(self, query_text: str) -> Walk | None:
        """The walk that ranks every match of the query (None for a query with no words)."""
        match = fts_query(query_text)
        return None if match is None else Walk(match)

    @guarded
    def lexical_of(self, query_text: str, rowids: Sequence[int]) -> dict[int, float]:
        """rowid -> BM25 (higher better, `lexical`'s scale) for those of these rows that share a word with
        the query: the words of a candidate the lexical lane ranked below its depth, or only the dense
        lane found, still count (retrieve.search, the lexical share)."""
        bounded = self._bounded(query_text)
        if bounded is None or not rowids:
            return {}
        # The unary + keeps FTS5 from taking the rowids as lookups: one walk of the matches (bounded as the
        # lexical lane's is), checked against the list, costs less than a MATCH per rowid.
        return {rowid: float(score) for rowid, score in self.conn.execute(
            f"SELECT rowid, -{bounded.rank} FROM entries_fts WHERE entries_fts MATCH ? AND rowid >= ? "
            "AND +rowid IN (SELECT value FROM json_each(?))", (bounded.match, bounded.floor, ids_json(list(rowids))))}

    def _bounded(self, query_text: str) -> Walk | None:
        """`_walk`, kept while the index is unchanged: a search asks twice (its lexical lanes, then its
        candidates' shares). SQLite's data_version moves with other connections' writes, total_changes
        with this one's."""
        key = (query_text, BOUNDED_ABOVE, MATCH_BUDGET, self.conn.execute("PRAGMA data_version").fetchone()[0],
               self.conn.total_changes())
        kept = getattr(self, "_last_walk", None)  # one, swapped whole: threads may share the store
        if kept is not None and kept[0] == key:
            return kept[1]
        walk = self._walk(query_text)
        self._last_walk = (key, walk)
        return walk

    def _walk(self, query_text: str) -> Walk | None:
        """The lexical walk of this query, ranking about MATCH_BUDGET matches at most; None for a query with
        no words. An index of BOUNDED_ABOVE rows or fewer is walked whole. In a larger one, a word found in
        at most the budget's rows is what a lexical match is for: those words are ranked over all rows, and
        the others drop out as stop words do. When every word is that common, all of them are ranked over
        their newest MATCH_BUDGET matches (rowids grow as entries are indexed), each word's share of the rows
        taken from its own newest matches (`ranking`: counting them all is what made BM25 slow)."""
        words = query_terms(query_text)
        match = fts_expression(words)
        if match is None:
            return None
        newest = db.newest_rowid(self.conn)
        if newest <= BOUNDED_ABOVE:
            return self._every_match(query_text)
        newest_matches = {word: self._newest_matches(fts_expression([word]), MATCH_BUDGET + 1) for word in words}
        rare, total = set(), 0
        for word in sorted(words, key=lambda w: newest_matches[w][0]):
            if total + newest_matches[word][0] > MATCH_BUDGET:
                break
            rare.add(word)
            total += newest_matches[word][0]
        if total:
            return Walk(fts_expression([word for word in words if word in rare]))
        floor = self.conn.execute("SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rowid DESC "
                                  "LIMIT 1 OFFSET ?", (match, MATCH_BUDGET)).fetchone()
        # A word's share of the rows since its oldest match counted (rowids left by deleted rows count as
        # rows: a little less than its share); a word found nowhere holds none.
        shares = tuple(count / (newest - oldest + 1) if count else 0.0
                       for count, oldest in map(newest_matches.__getitem__, words))
        return Walk(match, floor[0] if floor else 0, shares)

    def _newest_matches(self, match: str, limit: int) -> tuple[int, int]:
        """(how many, the oldest rowid) of the FTS expression's newest `limit` matches: (0, 0) for none."""
        count, oldest = self.conn.execute(
            "SELECT count(*), min(rowid) FROM (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?)", (match, limit)).fetchone()
        return count, oldest or 0

    @guarded
    def adjacent_turns(self, rowids: Sequence[int]) -> dict[int, list[int]]:
        """rowid -> the turns just before and after it in its conversation (by time) written the same UTC
        day, for those of these rows that are turns: the turns of the exchange it belongs to."""
        if not rowids:
            return {}
        return {rowid: [n for n in (before, after) if n is not None] for rowid, before, after in self.conn.execute(
            f"SELECT e.rowid, ({_ADJACENT.format('<', 'DESC')}), ({_ADJACENT.format('>', 'ASC')}) FROM entries e "
            f"WHERE e.rowid IN (SELECT value FROM json_each(?)) AND e.role IN ({_TURN_ROLES})",
            (ids_json(list(rowids)),))}

    @guarded
    def lexical_scopes(self, query_text: str, k: int, where: str, params: Sequence[Any],
                       conversations: Sequence[str] | None) -> list[list[tuple[int, float]]]:
        """`lexical` for the scopes of one search, each walk of the FTS matches done once: one list per
        conversation named (its k best rows among `entries e WHERE <where>`), or for None one list, the
        k best of all conversations under a filter that keeps nearly every row (a search's scope):
        the FTS table alone is asked for a few more than k and only those are checked against the
        filter (joining every match to `entries` costs more than ranking them); a filter that drops
        more falls back to `lexical`."""
        names = None if conversations is None else list(dict.fromkeys(conversations))
        every_match = self._every_match(query_text)
        if every_match is None or k <= 0:
            return [[] for _ in names or [None]]
        # Conversations that hold few of the rows rank all their matches: the window of the newest matches
        # (`_bounded`) may hold none of theirs.
        few = names is not None and self._holds_few(names)
        walk = every_match if few else self._bounded(query_text)
        match, floor, rank = walk.match, walk.floor, walk.rank
        if names is None:
            fetch = 2 * k + FEW_LEFT_OUT
            found = [(rowid, float(score)) for rowid, score in self.conn.execute(
                f"SELECT rowid, -{rank} AS score FROM entries_fts WHERE entries_fts MATCH ? AND rowid >= ?"
                f"{self.unhidden} ORDER BY score DESC, rowid LIMIT ?", (match, floor, fetch))]  # the rank once a row
            kept = self._kept(found, k, fetch, where, params)
            return [self.lexical(query_text, k, where, params) if kept is None else kept]
        # Each conversation's k best in one pass; bm25() cannot be called inside a window function, so
        # the scores are materialised first. Same order as `lexical`: BM25, then rowid.
        # Conversations that hold few of the rows list their rowids first: checking each FTS match
        # against that list costs less than looking it up in `entries` (100k rows, one conversation of
        # 10k: 10 -> 4.6 ms); the unary + keeps SQLite from handing the list to FTS5 as rowid lookups.
        listed = (" AND +entries_fts.rowid IN (SELECT rowid FROM entries WHERE conversation_id IN "
                  "(SELECT value FROM json_each(?)))") if few else ""
        sql = (f"WITH matched AS MATERIALIZED (SELECT e.rowid AS rowid, e.conversation_id AS conversation, "
               f"-{rank} AS score FROM entries e JOIN entries_fts ON entries_fts.rowid = e.rowid "
               f"WHERE ({where or '1'}) AND e.conversation_id IN (SELECT value FROM json_each(?)) "
               f"AND entries_fts MATCH ? AND entries_fts.rowid >= ?{listed}) "
               "SELECT rowid, conversation, score FROM (SELECT rowid, conversation, score, row_number() OVER "
               "(PARTITION BY conversation ORDER BY score DESC, rowid) AS place FROM matched) "
               "WHERE place <= ? ORDER BY conversation, place")
        names_json = ids_json(names)
        by_conversation: dict[str, list[tuple[int, float]]] = {name: [] for name in names}
        for rowid, conversation, score in self.conn.execute(
                sql, (*params, names_json, match, floor, *([names_json] if few else []), int(k))):
            by_conversation[conversation].append((rowid, float(score)))
        return [by_conversation[name] for name in names]


def _is_trivial(where: str) -> bool:
    return where.strip() in ("", "1", "TRUE", "true")

