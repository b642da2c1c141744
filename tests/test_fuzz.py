"""Fuzzing (hypothesis, bounded so CI runs it in seconds) of the two parsers that take hostile input:

- the front-matter parser: any bytes, text or YAML-ish document gives an Entry or an EntryFormatError,
  never anything else; an Entry it gives can be indexed and written back, and reads back the same;
  any valid entry survives render -> parse unchanged;
- filter compilation: any nested JSON-like filter compiles to SQL that runs against a real index
  (every query that takes filters) without error, or is refused with a UsageError.
"""

from __future__ import annotations

import string
from datetime import datetime, timezone
from pathlib import PurePosixPath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault.errors import EntryFormatError, UsageError
from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.retrieve.filters import compile_filter
from memvault.vault.format.entry import ROLES, Entry
from memvault.vault.format.markdown import parse, render

# No example database: CI runs are independent, and nothing is written into the work tree.
FUZZ = settings(max_examples=300, deadline=2000, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
DEFAULTS = {"id": "11111111-1111-4111-8111-111111111111", "role": "memory", "conversation_id": "notes",
            "created_at": "2024-01-01T00:00:00+00:00"}


def check_parsed(content: str, defaults: dict | None = None) -> None:
    """The invariant: an Entry that the index and the writer take and that reads back the same, or
    an EntryFormatError. Any other exception fails the test."""
    try:
        entry = parse(content, "fuzz.md", defaults)
    except EntryFormatError:
        return
    assert isinstance(entry, Entry)
    IndexRow.from_entry(entry, "entries/notes/facts/fuzz.md", "hash")  # metadata becomes JSON
    assert parse(render(entry), "again.md") == entry


# -- the front-matter parser -------------------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=600))
def test_any_bytes_read_from_a_file_give_an_entry_or_an_entry_format_error(tmp_path, data):
    from memvault.vault.write.store import Vault

    vault = Vault.__new__(Vault)  # reading needs only the root: no git for each example
    vault.root = tmp_path
    path = tmp_path / "entries" / "notes" / "facts" / "fuzz.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"---\n" + data if data[:1] == b"i" else data)
    try:
        entry = vault.read(PurePosixPath("entries/notes/facts/fuzz.md"))
    except EntryFormatError:
        return
    assert parse(render(entry), "again.md") == entry


@FUZZ
@given(st.text(max_size=400))
def test_any_text_gives_an_entry_or_an_entry_format_error(text):
    check_parsed(text)
    check_parsed("---\n" + text)
    check_parsed(text, DEFAULTS)


# YAML's own syntax, to reach its corners (anchors, aliases, tags, flow collections, odd scalars).
YAML_TOKENS = ["&a", "*a", "&b", "*b", "[", "]", "{", "}", ",", ":", "- ", "? ", "!!binary", "!!set", "!!omap",
               "!!float", "!!int", "!!str", "!!null", "!!timestamp", ".nan", ".inf", "-.inf", "~", "null", "true",
               "0x1F", "1e400", "99999999999999999999999", "2024-01-01", "0001-01-01 00:00:00+14:00",
               "2024-02-30", '"\\ud800"', '"\\x1b"', "'quoted'", "|", ">", "#", "%", "@", "`", "\\", "\t"]
KEYS = ["id", "role", "conversation_id", "created_at", "updated_at", "user_id", "agent_id", "run_id", "source",
        "metadata", "deleted_at", "replaced_by", "hash", "other", "1", "[a]"]
scalar_text = st.one_of(st.sampled_from(YAML_TOKENS), st.sampled_from(ROLES),
                        st.text(string.ascii_letters + string.digits + " -_.", max_size=8))
value_text = st.lists(scalar_text, min_size=0, max_size=6).map(" ".join)
line = st.one_of(
    st.builds(lambda key, value: f"{key}: {value}", st.sampled_from(KEYS), value_text),
    st.builds(lambda indent, key, value: f"{' ' * indent}{key}: {value}", st.integers(1, 6),
              st.text(string.ascii_lowercase, min_size=1, max_size=3), value_text),
    st.builds(lambda indent, value: f"{' ' * indent}- {value}", st.integers(0, 6), value_text),
    value_text,
)


@FUZZ
@given(st.lists(line, max_size=12), st.text(max_size=60), st.booleans())
def test_yaml_ish_front_matter_gives_an_entry_or_an_entry_format_error(lines, body, with_required):
    required = ["id: x", "role: memory", "conversation_id: c", "created_at: 2024-01-01"] if with_required else []
    check_parsed("---\n" + "\n".join(required + lines) + "\n---\n" + body)
    check_parsed("---\n" + "\n".join(lines) + "\n---\n" + body, DEFAULTS)


# -- render -> parse round trip --------------------------------------------------------------------------------------

plain_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # any character but surrogates
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                        st.floats(allow_nan=False, allow_infinity=False), plain_text)
metadata = st.dictionaries(plain_text, st.recursive(json_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(plain_text, inner, max_size=3)), max_leaves=10), max_size=5)
moment = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(timezone.utc)
                      ).map(lambda m: m.replace(microsecond=m.microsecond // 1000 * 1000))  # files keep ms
optional_text = st.one_of(st.none(), plain_text.map(str.strip).filter(bool))
valid_entry = st.builds(
    Entry,
    # memvault stores texts stripped (core.clean_text): the body keeps everything in between.
    text=plain_text.map(str.strip).filter(bool),
    role=st.sampled_from(ROLES),
    conversation_id=st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True),
    created_at=moment, user_id=optional_text, agent_id=optional_text, run_id=optional_text,
    metadata=metadata, source=optional_text,
)


@FUZZ
@given(valid_entry)
def test_render_then_parse_round_trips_any_valid_entry(entry):
    assert parse(render(entry), "fuzz.md") == entry


# -- filter compilation ------------------------------------------------------------------------------------------------

FIELDS = ["user_id", "agent_id", "run_id", "role", "conversation_id", "id", "text", "created_at", "updated_at",
          "topic", "n", "tags", "$bad", 'quo"te', "", "x" * 200]
OPERATORS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains", "$GTE", "$in", "like"]
LOGICAL = ["AND", "OR", "NOT", "$and", "or", "not"]
filter_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-(2**80), 2**80), st.floats(), st.text(max_size=12),
    st.sampled_from(["*", "2024-01-01", "2024-01-01T10:00:00+02:00", "a\ud800b", "\x00", "%", "_", "'", '"'])
)


def filters():
    condition = st.one_of(
        filter_scalar,
        st.lists(filter_scalar, max_size=4),
        st.dictionaries(st.sampled_from(OPERATORS), st.one_of(filter_scalar, st.lists(filter_scalar, max_size=4)),
                        max_size=3),
    )
    leaf = st.dictionaries(st.sampled_from(FIELDS), condition, min_size=0, max_size=3)
    return st.recursive(leaf, lambda inner: st.one_of(
        st.dictionaries(st.sampled_from(LOGICAL), st.one_of(st.lists(inner, max_size=3), inner), min_size=1,
                        max_size=2),
        st.lists(inner, max_size=2),  # not a dict: must be refused
    ), max_leaves=12)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """A real index (sqlite-vec, FTS5) with a few entries whose metadata has each JSON type."""
    from memvault.models.embedders import load_embedder

    embedder = load_embedder("minilm")
    store = IndexStore.open(tmp_path_factory.mktemp("fuzz"), embedder.identity, embedder.dims)
    entries = [Entry("Ana lives in Porto", conversation_id="family", user_id="alice",
                     metadata={"topic": "family", "n": 3, "tags": ["a", "b"]}),
               Entry("Bob likes tea", role="user", conversation_id="work", agent_id="bot",
                     metadata={"topic": 7, "n": 2.5, "tags": "a b", "nested": {"x": [1, {"y": None}]}}),
               Entry("no metadata at all", conversation_id="global", run_id="r1")]
    rows = [IndexRow.from_entry(e, f"entries/{e.conversation_id}/facts/{e.id}.md", e.id) for e in entries]
    store.upsert(rows, list(embedder.embed([e.text for e in entries])))
    store.query_vector = embedder.embed(["where does Ana live"], kind="query")[0]
    yield store
    store.close()


@settings(max_examples=400, deadline=2000, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(expr=st.one_of(filters(), filter_scalar))
def test_any_filter_compiles_to_sql_that_runs_or_is_a_usage_error(index, expr):
    try:
        where, params = compile_filter(expr)
    except UsageError:
        return
    # Every consumer of a compiled filter: listing, counting, and both search lanes.
    index.select(where, params, limit=5)
    index.count(where, params)
    index.dense(index.query_vector, 5, where, params)
    index.lexical("Ana tea", 5, where, params)
