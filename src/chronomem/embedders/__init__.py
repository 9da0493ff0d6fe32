"""Embedders. The bundled all-MiniLM-L6-v2 runs on torch (:class:`SentenceTransformerEmbedder`,
the ``embeddings`` extra) or ONNX Runtime (:class:`OnnxEmbedder`, the ``onnx`` extra);
:func:`default_embedder` picks one. :class:`OpenAICompatibleEmbedder` calls a ``/v1/embeddings``
endpoint. Heavy backends are imported lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chronomem.embedders.base import Embedder, as_vector
from chronomem.embedders.default import default_embedder

if TYPE_CHECKING:
    from chronomem.embedders.onnx_runtime import OnnxEmbedder
    from chronomem.embedders.openai_compatible import OpenAICompatibleEmbedder
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

__all__ = [
    "Embedder",
    "OnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "SentenceTransformerEmbedder",
    "as_vector",
    "default_embedder",
]


def __getattr__(name: str) -> Any:
    if name == "SentenceTransformerEmbedder":
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder
    if name == "OnnxEmbedder":
        from chronomem.embedders.onnx_runtime import OnnxEmbedder

        return OnnxEmbedder
    if name == "OpenAICompatibleEmbedder":
        from chronomem.embedders.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder
    raise AttributeError(name)
