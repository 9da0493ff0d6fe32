"""Which backend runs the default model: :func:`default_embedder`.

``auto`` (what ``Memory.open(embedder="default")`` uses) picks ONNX Runtime fp32 when the ``onnx``
extra is installed — the same vectors (cosine >= 0.999) and the same model id as torch, so the
choice never changes which stores open — and the torch backend otherwise.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Literal, cast, get_args

from chronomem.embedders.base import Embedder
from chronomem.errors import ConfigError

__all__ = ["BACKENDS", "Backend", "default_embedder", "onnx_available"]

Backend = Literal["auto", "torch", "onnx", "onnx-int8"]
BACKENDS: tuple[str, ...] = get_args(Backend)


def onnx_available() -> bool:
    """Whether the ``onnx`` extra is installed (onnxruntime, onnx and tokenizers), without
    importing it."""
    return all(importlib.util.find_spec(name) for name in ("onnxruntime", "onnx", "tokenizers"))


def default_embedder(
    backend: str = "auto",
    *,
    num_threads: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Embedder:
    """The bundled all-MiniLM-L6-v2 on ``backend``: ``torch`` (sentence-transformers), ``onnx``
    (ONNX Runtime fp32, same model id), ``onnx-int8`` (its own model id) or ``auto`` (``onnx``
    when installed, else ``torch``). ``cache_dir`` is where ONNX exports are kept."""
    if backend not in BACKENDS:
        raise ConfigError(f"embedder backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    chosen = cast(Backend, backend)
    if chosen == "auto":
        chosen = "onnx" if onnx_available() else "torch"
    if chosen == "torch":
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(num_threads=num_threads)
    from chronomem.embedders.onnx_runtime import OnnxEmbedder

    return OnnxEmbedder(
        quantize=chosen == "onnx-int8", cache_dir=cache_dir, num_threads=num_threads
    )
