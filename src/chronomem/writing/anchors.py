"""Importance from the embedding model: similarity to described anchor events (no LLM).

Each anchor is a short description of an event with a level on the Generative Agents poignancy
scale (Park et al. 2023, §4.1: 1 purely mundane, e.g. brushing teeth, making bed; 10 extremely
poignant, e.g. a break up, college acceptance). A memory's *anchor level* is the mean of the
anchors' levels weighted by ``softmax(cosine / temperature)`` over all anchors — a soft nearest
anchor; its importance is ``intercept + slope · level``, rounded to 0.1 and clamped to 1..10.

The anchors below were written first, from the paper's scale and kinds of event (not from the
labelled memories); the temperature, intercept and slope were then fitted by least squares on
the calibration half of the labelled memories (``data/importance_calibration.jsonl``, shipped
with the package) with all-MiniLM-L6-v2 (the bundled model), and ``bench/importance.py`` measures
agreement on the held-out half (``bench/data/importance_held_out.jsonl``; docs/reflection.md,
"Importance"). Another embedding model gets its own constants from the same half with
:func:`fit_calibration` (``Memory.calibrate``, :mod:`chronomem.writing.calibration`); without a
calibration, the constants above apply.

Which anchors drove a score is part of the answer: :meth:`EmbeddingImportance.explain`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chronomem.analysis.scripts import language_of, reads
from chronomem.arrays import F64
from chronomem.embedders.base import Embedder, model_languages
from chronomem.errors import ConfigError, EmbedderError
from chronomem.writing.importance import HeuristicImportance

__all__ = [
    "DEFAULT_ANCHORS",
    "DEFAULT_CALIBRATION",
    "Anchor",
    "AnchorCalibration",
    "AnchorWeight",
    "EmbeddingImportance",
    "ImportanceExplanation",
    "anchor_importance",
    "checked_unit_rows",
    "fit_calibration",
]

#: The softmax temperatures :func:`fit_calibration` tries (smaller ones for models whose cosines
#: crowd into a narrow band).
TEMPERATURES = (0.01, 0.015, 0.02, 0.03, 0.05, 0.08, 0.1, 0.15)


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """A described event and its level on the 1..10 poignancy scale."""

    text: str
    level: float


@dataclass(frozen=True, slots=True, kw_only=True)
class AnchorCalibration:
    """How anchor similarities become importance.

    Attributes:
        temperature: of the softmax over cosines (smaller: closer to the single nearest anchor).
        intercept, slope: importance = intercept + slope · anchor level, then rounded to 0.1
            and clamped to 1..10.
    """

    temperature: float = 0.08
    intercept: float = -1.67
    slope: float = 1.2


@dataclass(frozen=True, slots=True, kw_only=True)
class AnchorWeight:
    """One anchor's part in a score: its cosine to the memory and its softmax weight (0..1)."""

    anchor: Anchor
    cosine: float
    weight: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportanceExplanation:
    """Why a text got its importance: ``importance = intercept + slope · level`` (rounded,
    clamped), ``level`` = Σ weight · anchor level; ``drivers`` are the anchors of largest
    weight, largest first."""

    text: str
    importance: float
    level: float
    calibration: AnchorCalibration
    drivers: tuple[AnchorWeight, ...]


# Three groups, one level each; descriptions of kinds of event, not memories.
_MUNDANE = (
    "brushing teeth", "making the bed", "taking a shower and getting dressed",
    "eating an ordinary breakfast", "washing the dishes", "doing the laundry",
    "walking to the shop", "waiting in line", "commuting to work as usual",
    "checking the mail", "sweeping the floor", "watering the plants",
    "feeding the animals and doing the usual farm chores", "tidying the desk",
    "replying to a routine email", "a regular weekly meeting", "fixing a small typo",
    "asking a simple factual question", "a minor formatting preference",
    "small talk about the weather", "resting idle at home", "watching television",
    "a routine errand", "buying groceries",
)  # fmt: skip
_MODERATE = (
    "planning a party with friends", "a small disagreement with a colleague",
    "a modest raise at work", "a first date", "a minor injury", "an approaching deadline",
    "a friend moving to another town", "winning a local prize", "starting a new hobby",
    "an important personal rule to always follow",
)  # fmt: skip
_LIFE_CHANGING = (
    "a loved one died", "a family member passed away", "a baby was born",
    "getting married", "getting engaged", "a painful break-up", "a divorce",
    "being accepted into college", "being diagnosed with a serious illness such as cancer",
    "a heart attack or being rushed to the emergency room", "losing one's job",
    "being promoted or starting a new career", "the house burned down in a fire",
    "a natural disaster destroyed the village", "being arrested for a crime",
    "discovering a partner's betrayal", "moving to another country for good",
    "financial ruin and losing the home", "thoughts of suicide", "a life-threatening allergy",
    "reconciling with an estranged family member", "retiring after a long career",
    "the harvest was destroyed", "a pregnancy",
)  # fmt: skip
DEFAULT_ANCHORS: tuple[Anchor, ...] = tuple(
    Anchor(text=text, level=level)
    for level, texts in ((1.0, _MUNDANE), (5.0, _MODERATE), (9.0, _LIFE_CHANGING))
    for text in texts
)
DEFAULT_CALIBRATION = AnchorCalibration()


def anchor_importance(
    vectors: F64, anchors: F64, levels: F64, calibration: AnchorCalibration
) -> tuple[F64, F64]:
    """Importance of each of ``vectors`` (n×d, unit rows) against ``anchors`` (m×d, unit rows)
    of ``levels`` (m). Returns ``(importance (n), weights (n×m))``; each row of weights sums to
    1. Pure and vectorised: one matrix product."""
    cosines = vectors @ anchors.T
    logits = cosines / calibration.temperature
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    level = weights @ levels
    raw = calibration.intercept + calibration.slope * level
    return np.clip(np.round(raw, 1), 1.0, 10.0), weights


def fit_calibration(
    vectors: F64, anchors: F64, levels: F64, labels: F64
) -> tuple[AnchorCalibration, float]:
    """The calibration of least squared error against ``labels`` (1..10) of the memories whose
    unit ``vectors`` are given: the temperature from :data:`TEMPERATURES`, intercept and slope
    by least squares. Returns it with its mean squared error."""
    best: tuple[float, AnchorCalibration] | None = None
    for temperature in TEMPERATURES:
        probe = AnchorCalibration(temperature=temperature, intercept=0.0, slope=1.0)
        level = anchor_importance(vectors, anchors, levels, probe)[1] @ levels
        design = np.c_[np.ones(len(level)), level]
        (intercept, slope), *_ = np.linalg.lstsq(design, labels, rcond=None)
        error = float(np.mean((design @ [intercept, slope] - labels) ** 2))
        if best is None or error < best[0]:
            best = (
                error,
                AnchorCalibration(
                    temperature=temperature,
                    intercept=round(float(intercept), 2),
                    slope=round(float(slope), 2),
                ),
            )
    assert best is not None
    return best[1], best[0]


def checked_unit_rows(vectors: object, what: str) -> F64:
    """An embedder's answer as unit float64 rows; rows that are not finite or all zero are an
    :class:`EmbedderError` naming ``what``."""
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2 or not np.all(np.isfinite(array)) or not np.all(np.any(array, axis=1)):
        raise EmbedderError(f"{what}: expected rows of finite, non-zero numbers; got {array!r:.80}")
    out: F64 = array / np.linalg.norm(array, axis=1, keepdims=True)
    return out


class EmbeddingImportance:
    """Importance 1..10 from similarity to described anchor events, with the Memory's embedder.

    The default scorer of a Memory opened with an embedder and no ``importance=``. The anchors
    are embedded once, on first use (never at open). :meth:`score_vectors` reuses vectors the
    write path has already computed, so scoring costs one small matrix product beyond the
    record's own embedding.

    Args:
        embedder: the model that embeds anchors and texts.
        anchors: the described events (default :data:`DEFAULT_ANCHORS`).
        calibration: temperature, intercept and slope (default :data:`DEFAULT_CALIBRATION`).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        anchors: Sequence[Anchor] = DEFAULT_ANCHORS,
        calibration: AnchorCalibration = DEFAULT_CALIBRATION,
    ) -> None:
        if not isinstance(embedder, Embedder):
            raise ConfigError(f"embedder must be an Embedder; got {embedder!r}")
        if not anchors or not all(isinstance(a, Anchor) for a in anchors):
            raise ConfigError("anchors must be a non-empty sequence of Anchor")
        if not calibration.temperature > 0:
            raise ConfigError(f"temperature must be > 0; got {calibration.temperature!r}")
        self.embedder = embedder
        self.anchors = tuple(anchors)
        self.calibration = calibration
        self._levels = np.array([a.level for a in self.anchors], np.float64)
        self._vectors: F64 | None = None
        self._lock = threading.Lock()

    def anchor_vectors(self) -> F64:
        """The anchors' unit vectors (embedded on first call)."""
        with self._lock:
            if self._vectors is None:
                got = self.embedder.embed([a.text for a in self.anchors])
                self._vectors = checked_unit_rows(got, "anchor vectors")
            return self._vectors

    def _weigh(self, vectors: object) -> tuple[F64, F64]:
        rows = checked_unit_rows(vectors, "importance vectors")
        return anchor_importance(rows, self.anchor_vectors(), self._levels, self.calibration)

    def score_vectors(self, vectors: object, texts: Sequence[str] | None = None) -> list[float]:
        """Importance of texts already embedded by :attr:`embedder` (n×d). Given the ``texts``,
        those in a language the model does not read (its ``languages``) are scored by the
        keyword rules instead (:class:`~chronomem.HeuristicImportance`): a cosine to an anchor
        the model cannot relate to the text says nothing."""
        scores = [float(v) for v in self._weigh(vectors)[0]]
        languages = model_languages(self.embedder)
        if texts is None or languages is None:
            return scores
        rules = HeuristicImportance()
        return [
            s if reads(languages, language_of(t)) else rules.score_one(t)
            for s, t in zip(scores, texts, strict=True)
        ]

    def score(self, texts: Sequence[str]) -> list[float]:
        """Importance of each text, in order (one batched embedding call)."""
        if not texts:
            return []
        return self.score_vectors(self.embedder.embed(list(texts)), texts)

    def explain(self, text: str, *, top: int = 3) -> ImportanceExplanation:
        """The importance of ``text`` and the ``top`` anchors that drove it."""
        vector = checked_unit_rows(self.embedder.embed([text]), "importance vectors")
        importance, weights = self._weigh(vector)
        order = np.argsort(-weights[0], kind="stable")[:top]
        anchors = self.anchor_vectors()
        drivers = tuple(
            AnchorWeight(
                anchor=self.anchors[i],
                cosine=float(vector[0] @ anchors[i]),
                weight=float(weights[0, i]),
            )
            for i in order
        )
        return ImportanceExplanation(
            text=text,
            importance=float(importance[0]),
            level=float(weights[0] @ self._levels),
            calibration=self.calibration,
            drivers=drivers,
        )
