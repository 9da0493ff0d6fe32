"""The policies that curate what memory holds: the near-duplicate write gate (DESIGN §3),
reflection (§5) and review (§3). Frozen values, importable from :mod:`chronomem.config` too."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from types import MappingProxyType

from chronomem.errors import ConfigError
from chronomem.model.record import Kind

__all__ = ["ReflectionConfig", "ReviewConfig", "WriteGate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteGate:
    """The near-duplicate write gate (DESIGN §3).

    A new record of a gated kind whose cosine to the nearest open record of the same agent, kind
    group and ``domain`` is at or above the threshold is not stored. Thresholds are per embedder
    model id; a model without one uses ``default_threshold``. Without vectors, the gate compares
    normalised texts (an exact duplicate only). Writes that supersede skip the gate; observations
    and chats are never gated, because their repetition is information.
    """

    kinds: frozenset[Kind] = frozenset({Kind.FACT, Kind.INSTRUCTION})
    thresholds: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"sentence-transformers/all-MiniLM-L6-v2": 0.96})
    )
    default_threshold: float = 0.97

    def __post_init__(self) -> None:
        object.__setattr__(self, "kinds", frozenset(Kind(k) for k in self.kinds))
        for model, value in {**self.thresholds, "default": self.default_threshold}.items():
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"gate threshold for {model} must be in (0, 1]")

    def threshold(self, model_id: str | None, calibrated: float | None = None) -> float:
        """The model's threshold: its entry in ``thresholds``, else its measured one
        (``calibrated``: :func:`chronomem.writing.calibration.calibrate`), else the default."""
        if model_id is not None and model_id in self.thresholds:
            return self.thresholds[model_id]
        return self.default_threshold if calibrated is None else calibrated


@dataclass(frozen=True, slots=True, kw_only=True)
class ReflectionConfig:
    """When and how an agent reflects (DESIGN §5, Park et al. 2023 §4.2).

    Attributes:
        threshold: reflect once the importance of the agent's new records (everything but
            reflections) sums to this (the paper: 150). The sum is stored, so restarts keep it.
        recent: how many of the agent's most recent records the focal questions are asked about.
        questions: focal questions asked for (the paper: 3).
        insights: insights asked for per question (the paper: 5).
        evidence_k: records retrieved as evidence per question.
        attempts: answers a question or insight step may take before reflection gives up.
        touch: whether evidence retrieval touches what it returns (the paper's code does).
        auto: reflect automatically when a write brings an agent over the threshold (needs an
            LLM configured on the Memory); a failure then warns and leaves the sum for next time.
        weak_support: an insight whose mean cosine to its cited records is below this is marked
            ``weak_support`` in its metadata (only when vectors exist).
    """

    threshold: float = 150.0
    recent: int = 100
    questions: int = 3
    insights: int = 5
    evidence_k: int = 15
    attempts: int = 3
    touch: bool = False
    auto: bool = False
    weak_support: float = 0.25

    def __post_init__(self) -> None:
        if not (math.isfinite(self.threshold) and self.threshold > 0):
            raise ConfigError("reflection threshold must be positive")
        for name in ("recent", "questions", "insights", "evidence_k", "attempts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"reflection {name} must be a positive integer; got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewConfig:
    """What a review looks for (DESIGN §3; ``Memory.review``).

    Attributes:
        unused_after: a record never returned by a read (touching or, with the access log,
            any read) for this long is proposed for ``forget`` when nothing depends on it.
        version_cosine: open facts and instructions of one agent and domain at least this
            similar are proposed as versions of each other (``supersede``).
        duplicate_cosine: open records of one agent at least this similar are near-duplicates.
        pushed_down: a summed rating at or below this proposes ``close``.
        retrieved_within: the access-log window for "still retrieved" (stale records read in it
            come first).
        max_records: near-duplicates are looked for among the newest this many records per agent
            (the comparison is quadratic).
        limit: at most this many proposals per category.
    """

    unused_after: timedelta = timedelta(days=90)
    version_cosine: float = 0.75
    duplicate_cosine: float = 0.95
    pushed_down: float = -1.0
    retrieved_within: timedelta = timedelta(days=30)
    max_records: int = 5000
    limit: int = 100

    def __post_init__(self) -> None:
        for name in ("version_cosine", "duplicate_cosine"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"{name} must be in (0, 1]; got {value}")
        if self.unused_after <= timedelta() or self.retrieved_within <= timedelta():
            raise ConfigError("review windows must be positive")
        if self.max_records < 2 or self.limit < 1:
            raise ConfigError("max_records must be at least 2 and limit at least 1")
