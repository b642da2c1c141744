"""mem0 filters compiled to SQL, run against a real SQLite table (apsw, as the index uses)."""

import json
from datetime import UTC, date, datetime

import pytest

from memvault.errors import UsageError
from memvault.retrieve.filters import and_where, compile_filter, scope_where, to_epoch

SCHEMA = """CREATE TABLE entries (id TEXT, path TEXT, file_hash TEXT, text_hash TEXT, role TEXT,
conversation_id TEXT, created_at REAL, updated_at REAL, user_id TEXT, agent_id TEXT, run_id TEXT,
metadata TEXT, source TEXT, text TEXT)"""


def epoch(text):
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


ROWS = [
    dict(id="a", role="memory", conversation_id="work", created_at=epoch("2024-01-10T00:00:00"), user_id="alice",
         metadata={"category": "food", "priority": 3, "tags": ["x", "y"], "done": True}, text="Alice likes Sushi"),
    dict(id="b", role="user", conversation_id="work", created_at=epoch("2024-03-01T12:00:00"), user_id="bob",
         metadata={"category": "travel", "priority": 1, "done": False, "a.b": "dotted"}, text="Bob flies to Paris"),
    dict(id="c", role="memory", conversation_id="global", created_at=epoch("2024-06-01T00:00:00"), user_id="alice",
         agent_id="helper", metadata={"category": "Food court", "priority": "3"}, text="The food court opens"),
    dict(id="d", role="summary", conversation_id="home", created_at=epoch("2023-12-31T00:00:00"), run_id="r1",
         metadata={}, text="summary of home"),
]


@pytest.fixture(scope="module")
def db():
    import apsw

    conn = apsw.Connection(":memory:")
    conn.execute(SCHEMA)
    for row in ROWS:
        values = {**row, "metadata": json.dumps(row["metadata"]), "updated_at": row["created_at"] + 60}
        for key in ("agent_id", "run_id", "user_id"):
            values.setdefault(key, None)
        conn.execute("INSERT INTO entries (id, role, conversation_id, created_at, updated_at, user_id, agent_id, "
                     "run_id, metadata, text) VALUES (:id, :role, :conversation_id, :created_at, :updated_at, "
                     ":user_id, :agent_id, :run_id, :metadata, :text)", values)
    return conn


def matching(db, expr):
    sql, params = compile_filter(expr)
    return {row[0] for row in db.execute(f"SELECT e.id FROM entries e WHERE {sql}", params)}


@pytest.mark.parametrize("expr, expected", [
    (None, {"a", "b", "c", "d"}),
    ({}, {"a", "b", "c", "d"}),
    ({"user_id": "alice"}, {"a", "c"}),
    ({"user_id": {"eq": "bob"}}, {"b"}),
    ({"user_id": {"ne": "alice"}}, {"b", "d"}),  # d has no user: it is "not alice"
    ({"user_id": None}, {"d"}),
    ({"user_id": {"ne": None}}, {"a", "b", "c"}),
    ({"user_id": "alice", "conversation_id": "work"}, {"a"}),
    ({"role": {"in": ["user", "summary"]}}, {"b", "d"}),
    ({"role": ["user", "summary"]}, {"b", "d"}),
    ({"role": {"nin": ["user", "summary"]}}, {"a", "c"}),
    ({"agent_id": {"nin": ["helper"]}}, {"a", "b", "d"}),  # absent counts as not in
    ({"role": {"in": []}}, set()),
    ({"role": {"nin": []}}, {"a", "b", "c", "d"}),
    ({"text": {"contains": "Sushi"}}, {"a"}),
    ({"text": {"contains": "sushi"}}, set()),
    ({"text": {"icontains": "SUSHI"}}, {"a"}),
    ({"agent_id": "*"}, {"c"}),
    ({"run_id": "*"}, {"d"}),
    ({"id": {"in": ["a", "zz"]}}, {"a"}),
    # times: ISO strings, dates, datetimes and epoch numbers
    ({"created_at": {"gte": "2024-03-01"}}, {"b", "c"}),
    ({"created_at": {"gt": "2024-03-01T12:00:00Z"}}, {"c"}),
    ({"created_at": {"lt": date(2024, 1, 1)}}, {"d"}),
    ({"created_at": {"lte": datetime(2024, 1, 10, tzinfo=UTC)}}, {"a", "d"}),
    ({"created_at": {"gte": epoch("2024-01-10T00:00:00"), "lt": "2024-06-01"}}, {"a", "b"}),
    ({"updated_at": {"gt": "2024-06-01T00:00:30+00:00"}}, {"c"}),
    ({"created_at": {"in": ["2024-01-10T00:00:00Z", "2020-01-01"]}}, {"a"}),
    # metadata: numbers as numbers, strings as strings, booleans as 0/1
    ({"category": "food"}, {"a"}),
    ({"category": {"ne": "food"}}, {"b", "c", "d"}),
    ({"priority": {"gte": 2}}, {"a"}),  # c's "3" is a string, not the number 3
    ({"priority": {"lt": 3}}, {"b"}),
    ({"priority": {"gt": "2"}}, {"c"}),  # strings compare with strings only
    ({"category": {"lt": "g"}}, {"a", "c"}),
    ({"priority": "3"}, {"c"}),
    ({"priority": {"in": [1, 3]}}, {"a", "b"}),
    ({"priority": {"nin": [1, 3]}}, {"c", "d"}),
    ({"done": True}, {"a"}),
    ({"done": False}, {"b"}),
    ({"done": "*"}, {"a", "b"}),
    ({"category": {"contains": "oo"}}, {"a", "c"}),
    ({"category": {"icontains": "FOOD"}}, {"a", "c"}),
    ({"tags": {"contains": "x"}}, {"a"}),  # a list contains an element
    ({"tags": {"contains": "z"}}, set()),
    ({"tags": {"icontains": "Y"}}, {"a"}),
    ({"a.b": "dotted"}, {"b"}),  # a dot is part of the key, not a path step
    ({"missing": "*"}, set()),
    # logical operators, nested
    ({"OR": [{"user_id": "bob"}, {"run_id": "r1"}]}, {"b", "d"}),
    ({"AND": [{"user_id": "alice"}, {"category": {"icontains": "food"}}]}, {"a", "c"}),
    ({"NOT": [{"user_id": "alice"}]}, {"b", "d"}),
    ({"NOT": {"category": "food"}}, {"b", "c", "d"}),  # d has no category: NOT still matches it
    ({"NOT": [{"user_id": "bob"}, {"role": "summary"}]}, {"a", "c"}),  # none of them
    ({"OR": [{"AND": [{"user_id": "alice"}, {"NOT": {"agent_id": "*"}}]}, {"priority": 1}]}, {"a", "b"}),
    ({"and": [{"user_id": "alice"}], "$or": [{"role": "memory"}]}, {"a", "c"}),
    ({"$not": {"role": {"$in": ["memory"]}}}, {"b", "d"}),
    ({"user_id": {"EQ": "alice"}}, {"a", "c"}),
])
def test_filter_selects_rows(db, expr, expected):
    assert matching(db, expr) == expected


def test_values_are_parameters_never_sql(db):
    evil = "x' OR '1'='1"
    sql, params = compile_filter({"user_id": evil, "category": {"contains": evil}})
    assert evil not in sql and evil in params
    assert matching(db, {"user_id": evil}) == set()
    # A strange but harmless metadata key: it travels as a bound JSON path, never in the SQL text.
    key = "k') OR 1=1 --"
    sql, params = compile_filter({key: "v"})
    assert key not in sql
    assert matching(db, {key: "v"}) == set()
    assert db.execute("SELECT count(*) FROM entries").fetchall()[0][0] == len(ROWS)


@pytest.mark.parametrize("expr, word", [
    ({"user_id": {"like": "a%"}}, "like"),
    ({"user_id": {}}, "no operator"),
    ({"role": {"in": "user"}}, "needs a list"),
    ({"role": {"in": [None]}}, "null"),
    ({"created_at": {"gt": "last tuesday"}}, "ISO 8601"),
    ({"created_at": {"contains": "2024"}}, "time"),
    ({"text": {"contains": ["a"]}}, "needs a string"),
    ({"priority": {"gt": None}}, "null"),
    ({"priority": {"eq": {"nested": 1}}}, "unsupported value"),
    ({"priority": {"nested": 1}}, "unknown filter operator"),
    ({"priority": {"eq": [1]}}, "unsupported value"),
    ({'bad"key': 1}, "invalid filter key"),
    ({"back\\slash": 1}, "invalid filter key"),
    ({"$where": 1}, "invalid filter key"),
    ({"": 1}, "invalid filter key"),
    ({"AND": []}, "non-empty list"),
    ({"OR": {"a": 1}}, "non-empty list"),
    ({"AND": ["user_id"]}, "must be a dict"),
    (["user_id"], "must be a dict"),
])
def test_bad_filters_are_usage_errors(expr, word):
    with pytest.raises(UsageError, match=word) as caught:
        compile_filter(expr)
    assert "\n" not in str(caught.value)


def test_deep_nesting_is_refused():
    expr = {"user_id": "a"}
    for _ in range(40):
        expr = {"NOT": expr}
    with pytest.raises(UsageError, match="nested"):
        compile_filter(expr)


def test_scope_where_and_combination(db):
    sql, params = and_where(scope_where(["work", "global"], {"user_id": "alice", "agent_id": None}),
                            compile_filter({"category": {"icontains": "food"}}))
    assert {r[0] for r in db.execute(f"SELECT e.id FROM entries e WHERE {sql}", params)} == {"a", "c"}
    sql, params = scope_where(None, None)  # every conversation, summaries never
    assert {r[0] for r in db.execute(f"SELECT e.id FROM entries e WHERE {sql}", params)} == {"a", "b", "c"}
    sql, params = scope_where(["home", "work"], {"run_id": "r1"})
    assert list(db.execute(f"SELECT e.id FROM entries e WHERE {sql}", params)) == []
    with pytest.raises(UsageError, match="unknown scope"):
        scope_where(None, {"org_id": "x"})
    with pytest.raises(UsageError, match="non-empty list"):
        scope_where([], None)
    assert and_where(("1", []), ("1", [])) == ("1", [])


def test_to_epoch_reads_naive_times_as_utc():
    assert to_epoch("1970-01-02") == 86400.0
    assert to_epoch("1970-01-01T01:00:00+01:00") == 0.0
    assert to_epoch(date(1970, 1, 1)) == 0.0
    with pytest.raises(UsageError):
        to_epoch(True)
