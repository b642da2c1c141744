"""Review of issue 17's speed and relevance work: what a hostile user (or a crash) can do to the new
lanes, the coarse vectors, the overlapped reindex and the speaker term. Real ONNX model, real sqlite-vec."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memvault.index.store import IndexRow, IndexStore
from memvault.retrieve import conversations_for, search
from memvault.settings import RetrievalSettings
from memvault.vault.entry import Entry

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
