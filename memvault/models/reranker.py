"""Cross-encoder rerankers: read the query and each candidate together and say how relevant it is."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from memvault.errors import ConfigError, first_line
from memvault.models.batching import in_length_batches
from memvault.models.onnx_runtime import input_names, onnx_session, padded_inputs, text_tokenizer

if TYPE_CHECKING:
    import numpy as np

# Where the ONNX file sits in a folder: at the top (our own exports) or under onnx/ (hub repositories
# such as cross-encoder/ms-marco-MiniLM-L6-v2).
MODEL_FILES = ("model.onnx", "onnx/model.onnx")


@runtime_checkable
class Reranker(Protocol):
    def score(self, query: str, texts: list[str]) -> list[float]:
        """Relevance of each text to the query, each in [0, 1], in the order of `texts`."""
        ...


def checked_scores(scores: Sequence[float], expected: int) -> list[float]:
    """Return `scores` as floats after making sure there is one per text and each lies in [0, 1].

    Retrieval thresholds and mixes relevance with recency on a 0-1 scale; a model that answers
    otherwise is the wrong kind of model, and silently using its numbers would rank nonsense.
    """
    values = [float(s) for s in scores]
    if len(values) != expected:
        raise ConfigError(f"reranker returned {len(values)} scores for {expected} texts")
    bad = [v for v in values if not 0.0 <= v <= 1.0]  # also catches NaN
    if bad:
        raise ConfigError(f"reranker returned a score outside [0, 1] ({bad[0]}): is it a cross-encoder?")
    return values


class OnnxCrossEncoder:
    """A BERT-style cross-encoder exported to ONNX (e.g. ms-marco-MiniLM-L-6-v2), from a folder
    holding model.onnx (or onnx/model.onnx) and tokenizer.json. Relevance = sigmoid(logit)."""

    max_tokens = 512

    def __init__(self, folder: str | Path, batch_size: int = 32):
        folder = Path(folder).expanduser()
        self.folder = folder
        self.batch_size = batch_size
        self.model_path = next((folder / name for name in MODEL_FILES if (folder / name).is_file()), None)
        self.tokenizer_path = folder / "tokenizer.json"
        if self.model_path is None or not self.tokenizer_path.is_file():
            raise ConfigError(f"reranker folder {folder} needs model.onnx (or onnx/model.onnx) and tokenizer.json")
        # Load now: a broken model should fail when configured, not halfway through a search.
        self._session = onnx_session(str(self.model_path), ConfigError)
        self._tokenizer = text_tokenizer(str(self.tokenizer_path), self.max_tokens, ConfigError)

    def __repr__(self) -> str:
        return f"OnnxCrossEncoder({str(self.folder)!r})"

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        texts = list(texts)
        logits = in_length_batches(
            texts, [len(t) for t in texts], self.batch_size, lambda batch: self._logits(query, batch)
        )
        return checked_scores(_sigmoid(logits).tolist(), len(texts))

    def _logits(self, query: str, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch([(query, text) for text in texts])
        (logits,) = self._session.run(None, padded_inputs(encodings, input_names(self._session)))[:1]
        # ms-marco exports give (n, 1), some others (n,): anything else is not a relevance head.
        if logits.ndim == 2 and logits.shape[1] == 1:
            logits = logits[:, 0]
        if logits.shape != (len(texts),):
            raise ConfigError(
                f"reranker {self.folder} gives outputs of shape {logits.shape}: expected one logit per text"
            )
        return logits


def _sigmoid(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    # The tanh form never overflows, unlike 1 / (1 + exp(-x)) for large negative logits.
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(logits, dtype=np.float64)))


def download_reranker(name: str) -> Path:
    """Fetch a cross-encoder from the Hugging Face hub (online users only) and return its folder."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ConfigError(
            f"reranker {name!r} is not a folder, and downloading it needs: pip install huggingface_hub"
        ) from exc
    try:
        folder = snapshot_download(name, allow_patterns=["tokenizer.json", *MODEL_FILES])
    except Exception as exc:  # offline, unknown repository, no permission...
        raise ConfigError(f"reranker {name!r} is not a folder and could not be downloaded: {first_line(exc)}") from exc
    return Path(folder)


def load_reranker(spec: str) -> Reranker | None:
    """The reranker named by `spec`: a folder with an ONNX cross-encoder, or a hub name
    ("cross-encoder/ms-marco-MiniLM-L6-v2", downloaded once). Empty: no reranker (None).
    Cached per process."""
    spec = spec.strip()
    return _cached_reranker(spec) if spec else None


@functools.cache
def _cached_reranker(spec: str) -> Reranker:
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        if folder.is_absolute() or spec.startswith((".", "~")) or spec.count("/") != 1:
            raise ConfigError(f"reranker {spec!r} is neither a folder nor a hub name like owner/model")
        folder = download_reranker(spec)
    return OnnxCrossEncoder(folder)
