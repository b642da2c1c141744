"""Review of issue 17's speed and relevance work: what a hostile user (or a crash) can do to the new
lanes, the coarse vectors, the overlapped reindex and the speaker term. Real ONNX model, real sqlite-vec."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.retrieve import conversations_for, search
from memvault.settings import RetrievalSettings
from memvault.vault.format.entry import Entry

NOW = datetime(2025, 6, 20, 12, 0, tzinfo=timezone.utc)
EARLIER = datetime(2025, 6, 10, 15, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm():
    from memvault.models.embedders import load_embedder

    return load_embedder("minilm")


def test_a_hand_written_actor_id_in_metadata_that_is_a_list_does_not_break_search(tmp_path, minilm):
    # `metadata: {actor_id: [...]}` is valid metadata (no top-level actor_id): the index keeps it,
    # and the speaker term must not hash it (it did: TypeError: unhashable type: 'list').
    entries = [Entry(text="Caroline researched adoption agencies", conversation_id="chat", role="memory",
                     created_at=EARLIER, metadata={"actor_id": ["Caroline", "Mel"]}),
               Entry(text="Melanie painted a sunrise over the lake", conversation_id="chat", role="memory",
                     created_at=EARLIER, metadata={"actor_id": {"name": "Melanie"}}),
               Entry(text="Caroline went to a support group", conversation_id="chat", role="memory",
                     created_at=EARLIER, actor_id="Caroline")]
    with IndexStore.open(tmp_path / "idx", minilm.identity, minilm.dims) as store:
        rows = [IndexRow.from_entry(e, f"entries/chat/memory/{e.id}.md", "h-" + e.id) for e in entries]
        store.upsert(rows, list(minilm.embed([e.text for e in entries])))
        hits = search(store, minilm, None, "What did Caroline research?", RetrievalSettings(),
                      conversations_for("chat"), now=NOW)
    assert hits and hits[0].text == "Caroline researched adoption agencies"
    # Only a plain string names a speaker: the list and the mapping are nobody's words, never "another's".
    assert not any(hit.explain["other_speaker"] for hit in hits if hit.text != "Caroline went to a support group")


def test_doctor_calls_an_index_of_the_previous_release_out_of_date_and_fix_migrates_it_without_re_embedding(tmp_path):
    # Before: "fail ... is unusable: schema [...] is not [...]", and --fix re-embedded every entry.
    from memvault import settings as settings_module
    from memvault.core import Memvault
    from memvault.index import db
    from tests.support.cli import Cli

    vault = tmp_path / "vault"
    mv = Memvault.open(settings_module.load(None, {"vault.path": str(vault)}), create=True)
    for text in ("Alice drinks green tea every morning", "Bob repairs old bicycles"):
        mv.add_verbatim(text, "c1")
    mv.reindex()
    mv.close()
    conn = db.connect(vault / ".memvault" / "index.sqlite")  # as the release before m005 left it
    conn.execute(f"DROP TABLE {db.COARSE_TABLE}; DROP TABLE {db.VECTOR_LOG}; DELETE FROM migrations WHERE name IN "
                 "('m005_coarse_vectors', 'm006_vector_log', 'm007_relation_kinds')")
    conn.close()

    result = Cli(vault)("doctor", "--json")
    checks = {check["name"]: check for check in result.json()["checks"]}
    assert result.exit_code == 0 and checks["index"]["status"] == "warn"
    assert "older memvault" in checks["index"]["detail"] and "m005_coarse_vectors" in checks["index"]["detail"]
    result = Cli(vault)("doctor", "--json", "--fix")
    data = result.json()
    fixed = data["fixed"][0]
    assert result.exit_code == 0 and fixed.startswith("updated the index") and "0 embedded" in fixed
    assert {c["name"]: c["status"] for c in data["checks"]}["index"] == "ok"


def test_the_length_term_sorts_the_candidates_once(monkeypatch):
    # A REST client asking top_k=1000 has thousands of candidates: a median per candidate cost seconds.
    import statistics

    from memvault.retrieve import scoring

    calls = []
    median = statistics.median
    monkeypatch.setattr(scoring.statistics, "median", lambda values: calls.append(1) or median(values))
    texts = [" ".join(["word"] * (i % 7 + 1)) for i in range(50)]
    excess = scoring.length_excess(texts)
    assert len(calls) == 1 and sorted(excess)[25] == 0.0  # the median text is the reference


def test_doctor_names_every_term_of_the_relevance_without_a_cross_encoder():
    # It still said "cosine, lexical share and same-day share" after the length and speaker terms came.
    from memvault import settings as settings_module
    from memvault.doctor import check_reranker

    detail = check_reranker(settings_module.Settings()).detail
    assert "length" in detail and "speaker" in detail


def test_doctor_finds_vectors_written_without_their_sign_bits_and_fix_rebuilds(tmp_path):
    # A process of the release before m005 (a `memvault serve` left running across an upgrade) writes on
    # after another one migrated the index: its vectors have no sign bits, and the coarse pass never
    # finds them. Nothing said so.
    from memvault import settings as settings_module
    from memvault.core import Memvault
    from tests.support.cli import Cli

    vault = tmp_path / "vault"
    mv = Memvault.open(settings_module.load(None, {"vault.path": str(vault)}), create=True)
    mv.add_verbatim("Alice drinks green tea every morning", "c1")
    mv.reindex()
    mv.close()
    from memvault.models.embedders import load_embedder

    minilm = load_embedder("minilm")
    with IndexStore.open(vault / ".memvault", minilm.identity, minilm.dims) as index:
        index.has_coarse = False  # as the older release writes
        entry = Entry(text="Bob repairs old bicycles", conversation_id="c1", role="memory", created_at=EARLIER)
        index.upsert([IndexRow.from_entry(entry, f"entries/c1/facts/{entry.id}.md", "h")], minilm.embed([entry.text]))

    checks = {check["name"]: check for check in Cli(vault)("doctor", "--json").json()["checks"]}
    assert checks["index vectors"]["status"] == "warn" and checks["index vectors"]["detail"].startswith("1 row(s)")
    data = Cli(vault)("doctor", "--json", "--fix").json()
    assert data["fixed"][0].startswith("rebuilt the index")
    assert "index vectors" not in {check["name"] for check in data["checks"]}
