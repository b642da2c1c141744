"""The model layer: embedders (text -> unit vectors) and cross-encoder rerankers (relevance in [0, 1]).

Importing this package is cheap: onnxruntime, tokenizers, numpy and litellm load on first use.
"""

from memvault.models.embedders import (
    EMBEDDER_SPECS,
    E5Embedder,
    Embedder,
    LiteLLMEmbedder,
    OnnxMiniLM,
    SentenceTransformerEmbedder,
    embed_one,
    load_embedder,
)
from memvault.models.reranker import OnnxCrossEncoder, Reranker, checked_scores, load_reranker

__all__ = [
    "EMBEDDER_SPECS",
    "E5Embedder",
    "Embedder",
    "LiteLLMEmbedder",
    "OnnxCrossEncoder",
    "OnnxMiniLM",
    "Reranker",
    "SentenceTransformerEmbedder",
    "checked_scores",
    "embed_one",
    "load_embedder",
    "load_reranker",
]
