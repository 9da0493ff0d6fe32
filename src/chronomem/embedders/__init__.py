"""Embedders. The default, :class:`SentenceTransformerEmbedder`, needs the ``embeddings`` extra
and is imported lazily."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chronomem.embedders.base import Embedder, as_vector

if TYPE_CHECKING:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

__all__ = ["Embedder", "SentenceTransformerEmbedder", "as_vector"]


def __getattr__(name: str) -> Any:
    if name == "SentenceTransformerEmbedder":
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder
    raise AttributeError(name)
