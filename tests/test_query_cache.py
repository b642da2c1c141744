"""Query vectors are cached by text per embedder: a repeated question never runs the model again."""

import importlib

import numpy as np
import pytest

from memvault.models.embedders import load_embedder

search_mod = importlib.import_module("memvault.retrieve.search")  # the module (the package exports the function)


class Counting:
    """The real MiniLM, counting the texts it is asked to embed."""

    def __init__(self):
        self.model = load_embedder("minilm")
        self.identity, self.dims, self.asked = self.model.identity, self.model.dims, []

    def embed(self, texts, kind="passage"):
        self.asked.extend(texts)
        return self.model.embed(texts, kind)


def test_a_repeated_query_is_embedded_once_and_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(search_mod, "QUERY_CACHE_SIZE", 2)
    embedder = Counting()
    first = search_mod.embed_query(embedder, "what does alice drink")
    again = search_mod.embed_query(embedder, "  what does alice drink ")
    assert embedder.asked == ["what does alice drink"] and again is first
    assert np.allclose(first, embedder.model.embed(["what does alice drink"], kind="query")[0], atol=1e-6)
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared between callers: read-only
    search_mod.embed_query(embedder, "b")
    search_mod.embed_query(embedder, "c")  # the oldest, "what does alice drink", falls out
    search_mod.embed_query(embedder, "what does alice drink")
    assert embedder.asked == ["what does alice drink", "b", "c", "what does alice drink"]


def test_each_embedder_has_its_own_cache():
    one, other = Counting(), Counting()
    search_mod.embed_query(one, "tea")
    search_mod.embed_query(other, "tea")
    assert one.asked == other.asked == ["tea"]


def test_the_cache_keeps_the_most_recently_used(monkeypatch):
    monkeypatch.setattr(search_mod, "QUERY_CACHE_SIZE", 2)
    embedder = Counting()
    for text in ("tea", "coffee", "tea", "juice", "tea", "coffee"):
        search_mod.embed_query(embedder, text)
    assert embedder.asked == ["tea", "coffee", "juice", "coffee"]  # "tea", asked again, outlived "coffee"
