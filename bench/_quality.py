"""Shared pieces of the retrieval-quality benchmarks: a caching wrapper around the real embedding
model, ranking metrics, and the baselines computed from the same vectors and the same BM25."""

from __future__ import annotations

import ast
import hashlib
import math
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.config import PRESETS, ScoringConfig, VersionConfig
from chronomem.model.record import Weights

F32 = npt.NDArray[np.float32]
CACHE = Path(__file__).resolve().parent / ".cache"


# The systems every quality benchmark runs next to chronomem's presets, on the same vectors.
BASELINES = (
    "cosine",
    "bm25",
    "rrf(cosine,bm25)",
    "langchain-time-weighted",
    "generative-agents formula",
)


class CachedEmbedder:
    """The real all-MiniLM-L6-v2, with vectors cached on disk by text so reruns are fast. It
    reports the model's own id: the vectors are the model's.

    ``backend``: ``"torch"`` (sentence-transformers; ``minilm.npz``) or ``"onnx"`` (the ONNX
    backend's default model, mixed precision where this CPU keeps it within 0.999 of torch;
    ``minilm-onnx.npz``): the quality benchmarks' ``--backend``."""

    def __init__(self, threads: int = 1, backend: str = "torch") -> None:
        CACHE.mkdir(exist_ok=True)
        self._inner: Any
        if backend == "torch":
            from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

            self._inner = SentenceTransformerEmbedder(num_threads=threads, batch_size=128)
            self._path = CACHE / "minilm.npz"
        elif backend == "onnx":
            from chronomem.embedders.onnx_runtime import OnnxEmbedder

            self._inner = OnnxEmbedder(num_threads=threads).prepare()
            self._path = CACHE / f"minilm-onnx-{self._inner.model_file.stem}.npz"
        else:
            raise ValueError(f"backend: torch or onnx, not {backend!r}")
        self.backend = backend if backend == "torch" else f"onnx ({self._inner.model_file.name})"
        self._vectors: dict[str, F32] = {}
        if self._path.exists():
            data = np.load(self._path)
            self._vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self._dirty = False

    @property
    def model_id(self) -> str:
        return self._inner.model_id

    @property
    def dim(self) -> int:
        return self._inner.dim

    @property
    def languages(self) -> frozenset[str] | None:
        """The model's languages (its card's: English), as the engine weighs its cosines."""
        return self._inner.languages  # type: ignore[no-any-return]

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> F32:
        keys = [self._key(t) for t in texts]
        missing = sorted(
            {k: t for k, t in zip(keys, texts, strict=True) if k not in self._vectors}.items()
        )
        if missing:
            vectors = self._inner.embed([t for _, t in missing], progress=progress)
            self._vectors.update((k, v) for (k, _), v in zip(missing, vectors, strict=True))
            self._dirty = True
        if not keys:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        """Write the cache, merged with what another run saved meanwhile, by atomic replace
        (two benchmarks may share the cache)."""
        if self._dirty:
            if self._path.exists():
                data = np.load(self._path)
                for key, vector in zip(data["keys"].tolist(), data["vectors"], strict=True):
                    self._vectors.setdefault(key, vector)
            keys = np.asarray(list(self._vectors))
            partial = self._path.with_name(f"{self._path.stem}.{os.getpid()}.tmp.npz")
            np.savez(partial, keys=keys, vectors=np.stack(list(self._vectors.values())))
            partial.replace(self._path)
            self._dirty = False


def ranks_of(ranking: Sequence[str], relevant: set[str]) -> list[int]:
    """1-based ranks at which relevant items appear."""
    return [i for i, item in enumerate(ranking, start=1) if item in relevant]


def metrics(ranking: Sequence[str], relevant: set[str]) -> dict[str, float]:
    """Evidence recall@5/10/20 (fraction of the relevant items in the top k), hit@10, MRR."""
    ranks = ranks_of(ranking, relevant)
    out = {f"recall@{k}": sum(1 for r in ranks if r <= k) / len(relevant) for k in (5, 10, 20)}
    out["hit@10"] = 1.0 if any(r <= 10 for r in ranks) else 0.0
    out["mrr"] = 1.0 / ranks[0] if ranks else 0.0
    return out


def ndcg(ranking: Sequence[str], relevant: set[str], k: int) -> float:
    """NDCG@k with binary relevance as LongMemEval's src/retrieval/eval_utils.py computes it: the
    first two ranks both count in full (``rel_1 + sum_{i>=2} rel_i / log2(i)``); 0 without
    relevant items."""

    def dcg(gains: Sequence[float]) -> float:
        return sum(g if i < 2 else g / math.log2(i) for i, g in enumerate(gains, start=1))

    ideal = dcg([1.0] * min(k, len(relevant)))
    return dcg([1.0 if r in relevant else 0.0 for r in ranking[:k]]) / ideal if ideal else 0.0


def store_of(mem: Any) -> Any:
    """The store behind a handle: the benchmarks' baselines read it directly (white-box, as the
    storage tests do); no adapter of chronomem reaches it."""
    return mem._h.store


def bm25_scores(mem: Any, agent: str, query: str, ids: Sequence[str]) -> np.ndarray:
    """The store's own BM25 for ``query`` (the lexical leg of chronomem's hybrid relevance) for
    each of ``ids`` (records of ``agent`` in ``mem``'s space), 0 where no term matches."""
    with store_of(mem).snapshot():
        cols = store_of(mem).load_columns(mem.space, [agent])
    pk_of = dict(zip(cols.pk.tolist(), cols.ids, strict=True))
    position = {rid: i for i, rid in enumerate(ids)}
    out = np.zeros(len(ids))
    lexical = store_of(mem).lexical(mem.space, [agent], query)
    for pk, score in zip(lexical.pk.tolist(), lexical.score.tolist(), strict=True):
        out[position[pk_of[pk]]] = score
    return out


def mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {}
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def rrf(*rankings: Sequence[str], k: int = 60) -> list[str]:
    """Reciprocal-rank fusion."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            score[item] = score.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda item: (-score[item], item))


def top(ids: Sequence[str], scores: np.ndarray, k: int) -> list[str]:
    order = np.lexsort((np.asarray(ids), -scores))
    return [ids[i] for i in order[:k]]


def langchain_time_weighted(cosine: np.ndarray, hours_since_access: np.ndarray) -> np.ndarray:
    """LangChain's TimeWeightedVectorStoreRetriever: relevance + (1 - decay_rate) ** hours, with
    its default decay_rate 0.01 and access time = creation time (nothing was retrieved yet)."""
    return cosine + (1.0 - 0.01) ** hours_since_access


def safe(x: float) -> float:
    return 0.0 if math.isnan(x) else x


_OVERRIDES = re.compile(r"^(?:([\w-]+):)?([\w.]+\s*=.*)$", re.DOTALL)


def variant(spec: str) -> ScoringConfig:
    """A ScoringConfig from ``[PRESET:]key=value;dotted.key=value`` overrides of a preset
    (``default`` unless named; values are Python literals or expressions such as
    ``timedelta(days=2)``) or from a Python expression over ``default``, ``PRESETS``,
    ``replace``, ``VersionConfig``, ``Weights`` and ``timedelta``."""
    names: dict[str, Any] = {
        "default": PRESETS["default"],
        "PRESETS": PRESETS,
        "replace": replace,
        "VersionConfig": VersionConfig,
        "Weights": Weights,
        "timedelta": timedelta,
    }
    overrides = _OVERRIDES.match(spec)
    if overrides:
        config = PRESETS[overrides.group(1) or "default"]
        for item in filter(None, (part.strip() for part in overrides.group(2).split(";"))):
            path, _, raw = item.partition("=")
            try:
                value = ast.literal_eval(raw.strip())
            except (ValueError, SyntaxError):
                value = eval(raw, names)
            config = _set(config, path.strip().split("."), value)
    else:
        config = eval(spec, names)
    if not isinstance(config, ScoringConfig):
        raise SystemExit(f"--variant {spec!r} is not a ScoringConfig")
    return config


def _set(obj: Any, path: list[str], value: Any) -> Any:
    if len(path) == 1:
        return replace(obj, **{path[0]: value})
    inner = getattr(obj, path[0])
    if inner is None and path[0] == "versions":
        inner = VersionConfig()
    return replace(obj, **{path[0]: _set(inner, path[1:], value)})
