"""The graph: entities and relations derived from the facts' triples (docs/architecture.md, Graph).

Like the rest of the index it only follows the files: a fact with `subject`, `predicate` and `object`
in its front matter gives one row of `relations`, written when the fact's row is written and
dropped with it (a trigger on `entries`), so deleting or editing a fact changes its relation at the
next sync. No graph database: on one machine a table and a breadth-first walk are enough.

Entities are names normalised as mem0 writes them (lower case, words joined by "_", no leading
article, "I"/"me"/"the user" all "user"); aliases are merged: a relation whose predicate says two
names are one ("also known as", "alias", "nickname"...) joins them, and every query reads the merged
entity. Scopes stay boundaries: every query joins `entries e` and applies the caller's filter.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memvault.text.wording import triple_problem

USER = "user"
USER_NAMES = {"i", "me", "my", "myself", "mine", "user", "the_user", "users", "user's"}
ARTICLES = ("the_", "a_", "an_")
# Predicates that say two names are one entity (normalised as predicates are).
ALIAS_PREDICATES = {"alias", "aka", "also_known_as", "is_also_known_as", "known_as", "is_known_as", "also_called",
                    "is_also_called", "nickname", "is_nicknamed", "nicknamed", "goes_by", "same_as", "is_same_as"}
MAX_NAME_WORDS = 6  # the longest entity name looked for in a query, in words
MAX_QUERY_WORDS = 256  # a query's words looked at for names: a long text must not cost 6 lookups a word
MAX_DEPTH = 5
NON_WORD = re.compile(r"[^\w]+", re.UNICODE)


def create_tables(conn: Any) -> None:
    """The relations table, its indexes, and the trigger that drops a fact's relation with its row."""
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS relations (
          entry_rowid INTEGER NOT NULL,
          source TEXT NOT NULL, source_key TEXT NOT NULL,
          relationship TEXT NOT NULL,
          destination TEXT NOT NULL, destination_key TEXT NOT NULL,
          category TEXT
        );
        CREATE INDEX IF NOT EXISTS relations_entry ON relations (entry_rowid);
        CREATE INDEX IF NOT EXISTS relations_source ON relations (source_key);
        CREATE INDEX IF NOT EXISTS relations_destination ON relations (destination_key);
        CREATE TRIGGER IF NOT EXISTS relations_follow_entries AFTER DELETE ON entries
        BEGIN DELETE FROM relations WHERE entry_rowid = old.rowid; END;
        """
    )


def entity_key(name: str) -> str:
    """A name as the graph compares it: NFKC, lower case, punctuation and spaces as one "_", no
    leading article, a trailing possessive dropped; every name of the user is "user"."""
    text = unicodedata.normalize("NFKC", str(name)).casefold().replace("'s ", " ").strip()
    text = re.sub(r"'s$", "", text)
    key = NON_WORD.sub("_", text).strip("_")
    for article in ARTICLES:
        if key.startswith(article) and len(key) > len(article):
            key = key[len(article):]
            break
    return USER if key in USER_NAMES or text in USER_NAMES else key


def relationship_key(predicate: str) -> str:
    """A predicate as mem0 writes a relationship: lower case, words joined by "_"."""
    return NON_WORD.sub("_", unicodedata.normalize("NFKC", str(predicate)).casefold()).strip("_")


def triple_json(triple: dict[str, str] | None, text: str | None = None) -> str | None:
    """How an entry's triple is kept in its index row (None: the entry has no whole triple, or, given
    its `text`, one that text does not say: the graph holds only triples drawn from their facts)."""
    if not triple or (text is not None and triple_problem(text, triple)):
        return None
    return json.dumps(triple, sort_keys=True, ensure_ascii=False)


def write_relation(conn: Any, rowid: int, role: str, triple: str | None) -> None:
    """(Re)write the relation of the entry at `rowid` from its triple (facts only)."""
    conn.execute("DELETE FROM relations WHERE entry_rowid = ?", (rowid,))
    fields = json.loads(triple) if triple and role == "memory" else None
    if not fields:
        return
    source, predicate, destination = (str(fields[key]).strip() for key in ("subject", "predicate", "object"))
    keys = entity_key(source), relationship_key(predicate), entity_key(destination)
    if all(keys):
        conn.execute("INSERT INTO relations (entry_rowid, source, source_key, relationship, destination, "
                     "destination_key, category) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     (rowid, source, keys[0], keys[1], destination, keys[2], fields.get("category")))


@dataclass
class Relation:
    """One edge, as mem0 returns it (source, relationship, destination: merged entity keys), with
    the fact it comes from."""

    source: str
    relationship: str
    destination: str
    memory_id: str
    text: str
    depth: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "relationship": self.relationship, "destination": self.destination,
                "memory_id": self.memory_id}


@dataclass
class Neighbourhood:
    """An entity, its aliases, and the relations within `depth` hops of it."""

    entity: str
    names: list[str] = field(default_factory=list)  # the names it was written as, aliases included
    relations: list[Relation] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"entity": self.entity, "names": self.names,
                "relations": [{**r.to_dict(), "text": r.text, "depth": r.depth} for r in self.relations]}


class Aliases:
    """Union-find over the alias relations of one scope: `canonical(key)` is the merged entity."""

    def __init__(self, pairs: Sequence[tuple[str, str]], uses: dict[str, int] | None = None) -> None:
        self.parent: dict[str, str] = {}
        self.uses = uses or {}
        for left, right in pairs:
            self.union(left, right)

    def find(self, key: str) -> str:
        root = key
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        self.parent[key] = root
        return root

    def union(self, left: str, right: str) -> None:
        a, b = self.find(left), self.find(right)
        if a != b:  # the user stays "user"; otherwise the name most facts use (then the shorter) names it
            keep, drop = sorted((a, b), key=lambda k: (k != USER, -self.uses.get(k, 0), len(k), k))
            self.parent[drop] = keep
            self.parent.setdefault(keep, keep)

    def canonical(self, key: str) -> str:
        return self.find(key) if key in self.parent else key

    def members(self, key: str) -> set[str]:
        root = self.canonical(key)
        return {k for k in self.parent if self.find(k) == root} | {key}


class GraphQuery:
    """The graph of the facts that pass `where` (SQL over `entries e`, with `params`)."""

    def __init__(self, conn: Any, where: str = "1", params: Sequence[Any] = ()) -> None:
        self.conn = conn
        self.where = where or "1"
        self.params = tuple(params)
        placeholders = ", ".join(f"'{p}'" for p in sorted(ALIAS_PREDICATES))
        pairs = self._select(f"r.relationship IN ({placeholders})", (), "r.source_key, r.destination_key")
        self.aliases = Aliases(pairs, self._uses({key for pair in pairs for key in pair}) if pairs else {})

    def _select(self, condition: str, params: Sequence[Any], columns: str) -> list[tuple]:
        # CROSS JOIN: the relations (found by key or kind) first, then their entries; the planner walked a
        # conversation's entries first, 500,000 of them at 1M (0.3 s with no relation at all).
        sql = (f"SELECT {columns} FROM relations r CROSS JOIN entries e ON e.rowid = r.entry_rowid "
               f"WHERE ({self.where}) AND {condition} ORDER BY e.created_at, r.rowid")
        return self.conn.execute(sql, (*self.params, *params)).fetchall()

    def _touching(self, keys: set[str], columns: str) -> list[tuple]:
        """`columns` of the relations (in scope) whose source or destination is one of `keys`."""
        ids = json.dumps(sorted(keys))
        return self._select("(r.source_key IN (SELECT value FROM json_each(?)) OR "
                            "r.destination_key IN (SELECT value FROM json_each(?)))", (ids, ids), columns)

    def _uses(self, keys: set[str]) -> dict[str, int]:
        """How many relations name each of these keys (which name of a merged entity is the usual one)."""
        uses: dict[str, int] = {}
        for pair in self._touching(keys, "r.source_key, r.destination_key"):
            for key in set(pair) & keys:
                uses[key] = uses.get(key, 0) + 1
        return uses

    def relations_of(self, keys: set[str]) -> list[Relation]:
        """Relations touching any of these entity keys (aliases expanded), alias edges left out."""
        expanded = {member for key in keys for member in self.aliases.members(key)}
        if not expanded:
            return []
        rows = self._touching(expanded, "r.source_key, r.relationship, r.destination_key, e.id, e.text")
        return [Relation(self.aliases.canonical(s), rel, self.aliases.canonical(d), memory_id, text)
                for s, rel, d, memory_id, text in rows if rel not in ALIAS_PREDICATES]

    def names_of(self, key: str) -> list[str]:
        """The names an entity was written as (its aliases' too), first seen first."""
        wanted = self.aliases.members(key)
        rows = self._touching(wanted, "r.source, r.source_key, r.destination, r.destination_key")
        names = [name for s, sk, d, dk in rows for name, k in ((s, sk), (d, dk)) if k in wanted]
        return list(dict.fromkeys(names))

    def neighbourhood(self, name: str, depth: int = 1) -> Neighbourhood:
        """The entity `name` names, and every relation within `depth` hops of it (breadth first)."""
        start = self.aliases.canonical(entity_key(name))
        found = Neighbourhood(start, self.names_of(start))
        seen_edges: set[tuple[str, str, str, str]] = set()
        visited, frontier = {start}, {start}
        for hop in range(1, max(1, min(depth, MAX_DEPTH)) + 1):
            reached: set[str] = set()
            for relation in self.relations_of(frontier):
                edge = (relation.source, relation.relationship, relation.destination, relation.memory_id)
                if edge in seen_edges:
                    continue
                seen_edges.add(edge)
                relation.depth = hop
                found.relations.append(relation)
                reached |= {relation.source, relation.destination} - visited
            visited |= reached
            frontier = reached
            if not frontier:
                break
        return found

    def named_in(self, text: str) -> set[str]:
        """The entities of this graph that `text` names: its runs of up to MAX_NAME_WORDS words,
        normalised, that are an entity key (an alias counts: it resolves to its entity)."""
        words = [w for w in NON_WORD.split(unicodedata.normalize("NFKC", text).casefold()) if w][:MAX_QUERY_WORDS]
        runs = {"_".join(words[i:i + n]) for n in range(1, MAX_NAME_WORDS + 1) for i in range(len(words) - n + 1)}
        candidates = {entity_key(run.replace("_", " ")) for run in runs} - {""}
        if not candidates:
            return set()
        rows = self._touching(candidates, "r.source_key, r.destination_key")
        return {self.aliases.canonical(key) for pair in rows for key in pair if key in candidates}

    def for_query(self, text: str, limit: int) -> list[Relation]:
        """mem0's `relations` for a search: the relations of the entities the query names (one hop),
        at most `limit`, newest facts first."""
        named = self.named_in(text)
        relations = self.relations_of(named) if named else []
        unique = list({(r.source, r.relationship, r.destination, r.memory_id): r for r in relations}.values())
        return list(reversed(unique))[:limit]
