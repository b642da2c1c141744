"""Checks of the models: the embedder and the reranker loaded and run once, the LLM asked one tiny
question (no retries, a short timeout)."""

from __future__ import annotations

import dataclasses
import time

from memvault.doctor.report import FAIL, OK, SKIP, Check
from memvault.errors import MemvaultError, first_line
from memvault.settings import Settings

LLM_PROBE = [{"role": "user", "content": "Reply with the single word: ok"}]
LLM_PROBE_TIMEOUT = 30.0


def check_embedder(settings: Settings) -> tuple[Check, str | None]:
    """Load the configured embedder and embed one text; returns the check and the model identity."""
    import math

    from memvault.models.embedders import load_embedder

    started = time.perf_counter()
    spec = settings.embedder.model
    try:
        embedder = load_embedder(spec, settings.embedder.batch_size, settings.embedder.api_base)
        vectors = embedder.embed(["memvault doctor"])
        norm = math.sqrt(float((vectors[0] ** 2).sum()))
        if vectors.shape != (1, embedder.dims) or not math.isfinite(norm) or abs(norm - 1.0) > 1e-3:
            raise MemvaultError(f"returned vectors of shape {vectors.shape} and norm {norm:.3f}")
    except Exception as exc:  # any failure of a model library is this check's answer
        return Check("embedder", FAIL, f"{spec}: {first_line(exc)}", fix="check embedder.model "
                     "(`memvault config show`) and that its package is installed"), None
    return Check("embedder", OK, f"{embedder.identity} loaded and embedded in {time.perf_counter() - started:.2f} s"), \
        embedder.identity


def check_reranker(settings: Settings) -> Check:
    from memvault.models.reranker import load_reranker
    from memvault.retrieve.scoring import FALLBACK_NAME

    spec = settings.retrieval.reranker
    if not spec.strip():
        return Check("reranker", SKIP, f"not configured: relevance is a logistic blend, {FALLBACK_NAME} "
                     "(retrieve/scoring.py)",
                     fix="optional: set retrieval.reranker to an ONNX cross-encoder folder")
    started = time.perf_counter()
    try:
        scores = load_reranker(spec).score("memvault doctor", ["a check of the reranker"])
        if len(scores) != 1 or not 0.0 <= scores[0] <= 1.0:
            raise MemvaultError(f"gave scores {scores}")
    except Exception as exc:
        return Check("reranker", FAIL, f"{spec}: {first_line(exc)}", fix="check retrieval.reranker")
    return Check("reranker", OK, f"{spec} loaded and scored in {time.perf_counter() - started:.2f} s")


def check_llm(settings: Settings, enabled: bool = True) -> Check:
    """A tiny real call to the configured LLM (no retries, a short timeout)."""
    if not enabled:
        return Check("llm", SKIP, f"not checked (--no-llm-check); model {settings.llm.model or 'not configured'}")
    if not settings.llm.model:
        return Check("llm", SKIP, "not configured: `add` stores text as given, `chat` is unavailable",
                     fix="set llm.model / MEMVAULT_LLM_MODEL (e.g. ollama/qwen3:4b)")
    from memvault.curate.llm import LLMClient

    probe = dataclasses.replace(settings.llm, max_retries=0, timeout=min(settings.llm.timeout, LLM_PROBE_TIMEOUT))
    client = LLMClient(probe)
    started = time.perf_counter()
    try:
        answer = client.complete(LLM_PROBE)
    except MemvaultError as exc:
        return Check("llm", FAIL, str(exc), fix="check llm.model, llm.api_base and the provider's key")
    said = " ".join(answer.split())[:40] or "(an empty answer)"
    return Check("llm", OK, f"{settings.llm.model} at {client.address} answered {said!r} in "
                 f"{time.perf_counter() - started:.2f} s")


