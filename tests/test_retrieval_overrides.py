"""Retrieval settings overridden for one search are checked by name: a misspelt one is a UsageError
that names it (not a TypeError from dataclasses.replace, nor silently ignored)."""

import math

import pytest

from memvault import settings
from memvault.converse import MemoryChat
from memvault.core import Memvault, RetrievalOverrides
from memvault.errors import UsageError


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    m.add_verbatim("Alice keeps bees on the roof.", conversation="c")
    yield m
    m.close()


def test_a_misspelt_override_is_a_usage_error_naming_it(memvault):
    with pytest.raises(UsageError, match="unknown retrieval setting 'top_kk'.*top_k"):
        memvault.search("bees", "c", top_kk=3)


def test_a_chat_with_a_misspelt_override_is_a_usage_error(memvault):
    chat = MemoryChat(memvault, "c", retrieval={"score_treshold": 0.2})
    with pytest.raises(UsageError, match="score_treshold"):
        chat.prepare([{"role": "user", "content": "who keeps bees?"}])


def test_known_overrides_apply_and_none_keeps_the_setting(memvault):
    retrieval = RetrievalOverrides.of({"top_k": 1, "score_threshold": None}).applied_to(memvault.settings.retrieval)
    assert retrieval.top_k == 1
    assert retrieval.score_threshold == memvault.settings.retrieval.score_threshold
    assert [hit.text for hit in memvault.search("bees", "c", top_k=1, score_threshold=0.0)] == [
        "Alice keeps bees on the roof."]


def test_a_number_that_is_not_finite_is_refused(memvault):
    with pytest.raises(UsageError, match="recency_weight must be a finite number"):
        memvault.search("bees", "c", recency_weight=math.nan)
