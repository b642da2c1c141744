"""What makes search cheap at scale gives what exact search gives: the query model's folded weights."""

from __future__ import annotations

import numpy as np


def test_the_query_model_runs_with_its_int8_weights_folded_once(monkeypatch):
    """Unfolded, each one-query run turns all 22M int8 weights back into floats (3x the CPU of a search
    query); folded, the vectors are the same to 1e-5, so indexes built before stay valid."""
    import onnxruntime

    from memvault.models import embedders

    real = embedders.onnx_session
    used = []
    monkeypatch.setattr(embedders, "onnx_session", lambda *args, **kw: used.append(real(*args, **kw)) or used[-1])
    embedder = embedders.OnnxMiniLM()
    texts = ["what does Alice think of green tea", "ok"]
    folded = embedder.embed(texts, kind="query")
    level = used[-1].get_session_options().graph_optimization_level
    assert level != onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    monkeypatch.setattr(embedders, "onnx_session", lambda path, **_: real(path, optimize=False))
    np.testing.assert_allclose(folded, embedder.embed(texts, kind="query"), atol=1e-5)
