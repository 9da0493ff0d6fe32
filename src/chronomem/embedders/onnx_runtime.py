"""The default model on ONNX Runtime: the same all-MiniLM-L6-v2, exported once from the bundled
weights (offline) and cached on disk, then run without torch.

The default model is mixed precision (:mod:`chronomem.embedders.onnx_mixed`: the attention
projections and FFN input projection as int8 with per-token activation scales, the rest fp32),
about 1.3x the plain fp32 model's speed; ``exact=True`` runs the plain fp32 export. Both agree
with the torch backend to cosine >= 0.999 on every text (checked on probe texts when the export is
built, in the tests, and on 1,100 texts in bench/embedding.py), so they record the **same model
id** and a store written with one backend opens with the other. If the mixed model misses that
bar when it is built, it is not cached and the fp32 model is used.

The optional int8 model (dynamic quantisation of every matrix product, one activation scale per
batch) agrees only to about 0.98: it records a model id of its own
(``<model>+onnx-int8``), and a store built with it refuses the others, and the reverse.

The cache lives in ``cache_dir`` (default ``$XDG_CACHE_HOME/chronomem``, else
``~/.cache/chronomem``), under ``onnx/<model>-<key>/``, where the key is computed from the model's
files: new weights get a new export, never a stale one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from chronomem.embedders.base import declared_languages, read_dim
from chronomem.embedders.onnx_session import (
    INPUTS,
    length_batches,
    load_tokenizer,
    mean_pool,
    open_session,
)
from chronomem.embedders.sentence_transformers import DEFAULT_MODEL_ID, bundled_model_path
from chronomem.errors import ConfigError, EmbedderError

__all__ = ["INT8_SUFFIX", "OnnxEmbedder", "default_cache_dir"]

INT8_SUFFIX = "+onnx-int8"
_FORMAT = "chronomem-onnx-3"  # bump when the export itself changes
_SAMPLE = 1 << 20  # bytes read from each end of a weights file for the cache key


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/chronomem``, else ``~/.cache/chronomem`` (read when called, not at
    import)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "chronomem"


def _cache_key(folder: Path) -> str:
    """A digest of the model folder: its small files whole, each weights file by size and its
    first and last MiB (hashing 90 MB on every start would cost more than the load)."""
    digest = hashlib.sha256(_FORMAT.encode())
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.name.startswith(".") or path.suffix == ".md":
            continue
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        size = path.stat().st_size
        digest.update(str(size).encode() + b"\0")
        with path.open("rb") as handle:
            if size <= 2 * _SAMPLE:
                digest.update(handle.read())
            else:
                digest.update(handle.read(_SAMPLE))
                handle.seek(-_SAMPLE, os.SEEK_END)
                digest.update(handle.read())
    return digest.hexdigest()[:16]


class OnnxEmbedder:
    """Embeds with ONNX Runtime on the CPU, in length-sorted batches, unit-normalised.

    Args:
        model_path: a local sentence-transformers folder (BERT-like, mean pooling, with a
            ``tokenizer.json``); default: the bundled all-MiniLM-L6-v2.
        model_id: the id recorded in the store; default: the torch backend's id for the same
            folder, with ``+onnx-int8`` appended when ``quantize``.
        quantize: use the int8 model (faster, vectors ~0.98 cosine to fp32; a model id of its own).
        exact: use the plain fp32 model (cosine to torch ~0.9999999) instead of the default mixed
            precision one (>= 0.999, faster).
        cache_dir: where exported models are kept; default :func:`default_cache_dir`.
        batch_size: texts per run (at most; runs are also split by length). 32: on one thread
            it embeds up to 1.2x as many chat turns per second as 64 (smaller activations stay
            in cache).
        num_threads: ONNX Runtime threads within an operator; ``None`` leaves its default.
        languages: the languages the model reads (ISO 639-1 codes; ``None``: every language);
            default: what the folder's model card declares (all-MiniLM-L6-v2: English).

    The model is exported (needs torch, ``transformers`` and ``onnx`` once) or opened from the
    cache on first use; :meth:`prepare` does it eagerly.

    Thread-safe (``thread_safe``): ONNX Runtime runs a session from several threads at once, so
    the engine embeds before a handle's lock and a model run holds up no other call.
    """

    thread_safe = True

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        model_id: str | None = None,
        quantize: bool = False,
        exact: bool = False,
        cache_dir: str | os.PathLike[str] | None = None,
        batch_size: int = 32,
        num_threads: int | None = None,
        languages: Collection[str] | Literal["card"] | None = "card",
    ) -> None:
        if model_path is None:
            self._path = bundled_model_path()
            base = DEFAULT_MODEL_ID
        else:
            self._path = Path(model_path)
            if not self._path.is_dir():
                raise ConfigError(f"embedding model folder not found: {self._path}")
            base = self._path.name
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1; got {batch_size}")
        if quantize and exact:
            raise ConfigError("quantize and exact exclude each other")
        self.quantize = quantize
        self.exact = exact
        self._model_id = model_id or (base + INT8_SUFFIX if quantize else base)
        self._base = base
        self._cache_root = Path(cache_dir) if cache_dir is not None else None
        self.batch_size = batch_size
        self.num_threads = num_threads
        self.languages = declared_languages(self._path, languages)
        self._dim: int | None = read_dim(self._path)
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.prepare()
            self._dim = int(self._session.get_outputs()[0].shape[-1])
        return self._dim

    @property
    def cache_folder(self) -> Path:
        """The folder of this model's exports (``model.onnx``, ``model-mixed.onnx``,
        ``model-int8.onnx``, ``export.json``)."""
        root = self._cache_root or default_cache_dir()
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", self._base)
        return root / "onnx" / f"{name}-{_cache_key(self._path)}"

    @property
    def model_file(self) -> Path:
        """The ONNX file this embedder runs (it may not exist before :meth:`prepare`; the mixed
        model is used if its build passed the agreement check, else ``model.onnx``)."""
        folder = self.cache_folder
        if self.quantize:
            return folder / "model-int8.onnx"
        mixed = folder / "model-mixed.onnx"
        return mixed if not self.exact and mixed.is_file() else folder / "model.onnx"

    def prepare(self) -> OnnxEmbedder:
        """Export the model (if the cache has none for these weights) and open it. Idempotent."""
        with self._lock:
            if self._session is None:
                self._tokenizer, max_length = load_tokenizer(self._path)
                self._build(max_length)
                self._session = open_session(self.model_file, self.num_threads)
        return self

    def _build(self, max_length: int) -> None:
        folder = self.cache_folder
        fp32 = folder / "model.onnx"
        if fp32.is_file() and (not self.quantize or self.model_file.is_file()):
            return
        from chronomem.embedders import onnx_export

        try:
            folder.mkdir(parents=True, exist_ok=True)
            manifest_path = folder / "export.json"
            manifest: dict[str, Any] = (
                json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
            )
            if not fp32.is_file():
                manifest["fp32"] = onnx_export.export_onnx(
                    self._path, fp32, max_seq_length=max_length, num_threads=self.num_threads,
                    mixed=folder / "model-mixed.onnx",
                )  # fmt: skip
            if self.quantize and not self.model_file.is_file():
                probes = self._inputs(self._tokenizer.encode_batch(list(onnx_export.PROBES)))
                manifest["int8"] = onnx_export.quantize_onnx(
                    fp32, self.model_file, probes=probes, num_threads=self.num_threads
                )
            onnx_export.write_manifest(manifest_path, manifest)
        except (OSError, ValueError) as exc:  # an unwritable cache, a damaged export.json
            raise ConfigError(
                f"cannot build the ONNX model in the embedder cache {folder}: {exc} (pass "
                "cache_dir=, or set CHRONOMEM_CACHE_DIR for the CLI, to a writable folder)"
            ) from exc

    @staticmethod
    def _inputs(encodings: Sequence[Any]) -> dict[str, npt.NDArray[np.int64]]:
        """One padded batch: every input the model takes, ``(n, longest)`` int64."""
        width = max(len(e.ids) for e in encodings)
        out = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            out["input_ids"][row, :n] = e.ids
            out["attention_mask"][row, :n] = e.attention_mask
            out["token_type_ids"][row, :n] = e.type_ids
        return out

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        """Unit-normalised float32 vectors, one row per text. ``progress`` is accepted for the
        protocol and ignored."""
        if len(texts) == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        self.prepare()
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:  # a non-string among the texts
            raise EmbedderError(f"cannot tokenize the texts: {exc}") from exc
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows in length_batches([len(e.ids) for e in encodings], self.batch_size):
            inputs = self._inputs([encodings[i] for i in rows])
            try:
                hidden = self._session.run(None, inputs)[0]
            except Exception as exc:  # onnxruntime's own error types; translate once here
                raise EmbedderError(f"embedding failed: {exc}") from exc
            out[rows] = mean_pool(hidden, inputs["attention_mask"])
        return out

    def read_lengths(self, texts: Sequence[str]) -> list[int]:
        """How many characters of each text the model reads: up to the end of its last token
        before the truncation at ``max_seq_length`` tokens (all of a shorter text)."""
        if len(texts) == 0:
            return []
        self.prepare()
        try:
            encodings = self._tokenizer.encode_batch(list(texts))
        except Exception as exc:  # a non-string among the texts
            raise EmbedderError(f"cannot tokenize the texts: {exc}") from exc
        return [
            e.offsets[-2][1] if e.overflowing and len(e.ids) > 2 else len(t)
            for t, e in zip(texts, encodings, strict=True)
        ]

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._model_id!r})"
