"""Thresholds for any embedding model, measured instead of assumed (issue 27).

Three numbers depend on how a model spreads its cosines: the write gate's near-duplicate
threshold, the cosine at which a record is associated with a causal event it did not witness,
and the anchor importance's temperature, intercept and slope. all-MiniLM-L6-v2 has constants
(fitted or chosen on it, :mod:`chronomem.policies`, :mod:`chronomem.config`,
:mod:`chronomem.writing.anchors`); another model gets its own from :func:`calibrate`, on pairs
shipped with the package (``data/calibration.json``) in the languages the model reads:

* **gate**: ``d + 0.25 · (1 − d)``, ``d`` the largest cosine of a pair that says two different
  things in nearly the same words (another name, another word, a negation). A quarter of the way
  from the nearest different pair to identity: for all-MiniLM-L6-v2, 0.945 → 0.959, its constant
  0.96. Texts stating different numbers are never merged whatever the cosine
  (:func:`chronomem.text.number_key`).
* **association**: ``u + α · (a − u)``, ``a`` and ``u`` the mean cosines of an event to memories
  about it and to unrelated memories of the same world; ``α`` is where all-MiniLM-L6-v2's
  threshold (0.5) sits between its own two means (``reference`` in the data file; a test
  recomputes it with the real model).
* **importance**: :func:`~chronomem.writing.anchors.fit_calibration` on the calibration half of
  the labelled memories (``data/importance_calibration.jsonl``, English; the held-out half stays
  in ``bench/``) — only for a model that reads English.

Both rules are invariant under ``cos → c + s · cos`` with ``c + s = 1`` (a model whose cosines
crowd into a band below 1 gets a threshold at the same place within its band).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import F64
from chronomem.embedders.base import Embedder, model_languages
from chronomem.errors import ConfigError
from chronomem.writing.anchors import (
    DEFAULT_ANCHORS,
    AnchorCalibration,
    checked_unit_rows,
    fit_calibration,
)

__all__ = [
    "CALIBRATION_LABELS",
    "CALIBRATION_PAIRS",
    "GATE_MARGIN",
    "Calibration",
    "calibrate",
    "calibration_key",
]

_DATA = Path(__file__).resolve().parent / "data"
CALIBRATION_PAIRS = _DATA / "calibration.json"
CALIBRATION_LABELS = _DATA / "importance_calibration.jsonl"
#: The gate sits this share of the way from the nearest different pair to identity.
GATE_MARGIN = 0.25
_MIN_PAIRS, _MIN_EVENTS = 5, 2  # fewer read pairs or events than this is no measurement


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """A model's measured thresholds, with what they were measured on.

    Attributes:
        model: the embedder's model id.
        gate: the write gate's cosine threshold.
        association: the cosine at or above which a record associates with an event.
        importance: the anchor importance constants, ``None`` when the model does not read the
            labelled memories' language (English): the shipped constants apply.
        languages: the languages of the pairs measured (``latin`` for Latin-script text).
        evidence: the measured statistics the thresholds come from (cosines, pair counts).
    """

    model: str
    gate: float
    association: float
    importance: AnchorCalibration | None
    languages: tuple[str, ...]
    evidence: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        raw: dict[str, Any] = json.loads(text)
        importance = raw.get("importance")
        return cls(
            model=str(raw["model"]),
            gate=float(raw["gate"]),
            association=float(raw["association"]),
            importance=None if importance is None else AnchorCalibration(**importance),
            languages=tuple(raw.get("languages", ())),
            evidence={str(k): float(v) for k, v in raw.get("evidence", {}).items()},
        )


def calibration_key(model: str) -> str:
    """The ``store_meta`` key of a model's calibration."""
    return f"calibration {model}"


@cache
def _pairs() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CALIBRATION_PAIRS.read_text(encoding="utf-8"))
    return data


def _labels() -> tuple[list[str], F64]:
    rows = [json.loads(line) for line in CALIBRATION_LABELS.read_text("utf-8").splitlines() if line]
    return [r["text"] for r in rows], np.array([r["importance"] for r in rows], np.float64)


def association_rule(about: Sequence[float], unrelated: Sequence[float], alpha: float) -> float:
    """``u + α · (a − u)`` of the mean cosines to memories about an event and unrelated ones."""
    a, u = float(np.mean(about)), float(np.mean(unrelated))
    return u + alpha * (a - u)


def calibrate(embedder: Embedder, *, progress: bool = False) -> Calibration:
    """Measure ``embedder``'s thresholds on the shipped pairs in the languages it reads (its
    ``languages``; every pair when it declares none). One ``embed`` call for the pairs, one for
    the anchors and labelled memories. Raises :class:`ConfigError` when it reads too few of the
    pairs' languages, or does not tell memories about an event from unrelated ones."""
    if not isinstance(embedder, Embedder):
        raise ConfigError(f"calibrate needs an Embedder; got {embedder!r}")
    data = _pairs()
    languages = model_languages(embedder)

    def read(*texts: str) -> bool:
        return all(reads(languages, language_of(t)) for t in texts)

    same = [p for p in data["gate"]["same"] if read(*p)]
    different = [p for p in data["gate"]["different"] if read(*p)]
    events = [e for e in data["association"] if read(e["event"], *e["about"], *e["unrelated"])]
    if min(len(same), len(different)) < _MIN_PAIRS or len(events) < _MIN_EVENTS:
        raise ConfigError(
            f"calibrate: {embedder.model_id} reads {sorted(languages or [])}, which covers "
            f"{len(different)} gate pairs and {len(events)} events of the calibration set "
            f"(English, Korean, Japanese, Chinese); declare the languages it reads "
            f"(its 'languages'), or set the thresholds yourself (WriteGate, CausalConfig)"
        )
    texts = [t for p in (*same, *different) for t in p]
    for e in events:
        texts += [e["event"], *e["about"], *e["unrelated"]]
    rows = checked_unit_rows(embedder.embed(texts, progress=progress), "calibration vectors")
    vectors = dict(zip(texts, rows, strict=True))

    def cos(a: str, b: str) -> float:
        return float(vectors[a] @ vectors[b])

    different_cos = [cos(a, b) for a, b in different]
    same_cos = [cos(a, b) for a, b in same]
    nearest = max(different_cos)
    gate = min(0.995, nearest + GATE_MARGIN * (1.0 - nearest))
    about = [cos(e["event"], t) for e in events for t in e["about"]]
    unrelated = [cos(e["event"], t) for e in events for t in e["unrelated"]]
    if np.mean(about) <= np.mean(unrelated):
        raise ConfigError(
            f"calibrate: {embedder.model_id}'s cosines do not tell memories about an event "
            f"(mean {np.mean(about):.3f}) from unrelated ones (mean {np.mean(unrelated):.3f}) in "
            f"the languages it reads; set CausalConfig.association_thresholds yourself"
        )
    association = association_rule(about, unrelated, float(data["reference"]["association_alpha"]))
    importance, mse = None, float("nan")
    if reads(languages, "en"):
        label_texts, labels = _labels()
        anchors = [a.text for a in DEFAULT_ANCHORS]
        rows = checked_unit_rows(
            embedder.embed([*anchors, *label_texts], progress=progress), "calibration vectors"
        )
        levels = np.array([a.level for a in DEFAULT_ANCHORS], np.float64)
        importance, mse = fit_calibration(
            rows[len(anchors) :], rows[: len(anchors)], levels, labels
        )
    return Calibration(
        model=embedder.model_id,
        gate=round(gate, 3),
        association=round(association, 3),
        importance=importance,
        languages=tuple(sorted({language_of(a) for a, _ in different})),
        evidence={
            "gate_pairs": float(len(different)),
            "nearest_different": round(nearest, 4),
            "same_merged": round(float(np.mean(np.asarray(same_cos) >= gate)), 3),
            "events": float(len(events)),
            "mean_about": round(float(np.mean(about)), 4),
            "mean_unrelated": round(float(np.mean(unrelated)), 4),
            **({} if importance is None else {"importance_mse": round(mse, 3)}),
        },
    )
