"""Scoring configuration and the named presets (DESIGN §2). The policies of the write gate,
reflection and review live in :mod:`chronomem.policies` and are importable from here too.

Presets are frozen data. To vary one, use ``dataclasses.replace(PRESETS["default"], ...)``; never
assign to a shared object.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import StrEnum
from types import MappingProxyType

from chronomem.errors import ConfigError
from chronomem.model.record import Kind, Weights
from chronomem.policies import ReflectionConfig, ReviewConfig, WriteGate

__all__ = [
    "NO_LIFECYCLE",
    "CausalConfig",
    "DepthWeighting",
    "Fusion",
    "PRESETS",
    "LifecycleConfig",
    "Normalisation",
    "RecencyMode",
    "ReflectionConfig",
    "RelevanceMode",
    "ReviewConfig",
    "VersionConfig",
    "ScoringConfig",
    "WriteGate",
    "resolve_preset",
]


class RelevanceMode(StrEnum):
    """How relevance is measured: embedding cosine, BM25 over the full-text index, or both."""

    DENSE = "dense"
    LEXICAL = "lexical"
    HYBRID = "hybrid"


#: The readings of a question that favour a speaker's lines (``ScoringConfig.speaker_cues``).
SPEAKER_CUES = frozenset({"other", "named", "self"})


class RecencyMode(StrEnum):
    """``elapsed``: ``decay ** (age / unit)`` with age since last access (the paper).
    ``ordinal``: ``decay ** position`` in the candidates sorted by last access ascending (the
    Generative Agents code, which gives the *oldest*-accessed memory the highest recency)."""

    ELAPSED = "elapsed"
    ORDINAL = "ordinal"


class Normalisation(StrEnum):
    """``minmax``: each component rescaled to [0, 1] over the candidate set (zero range gives 0.5).
    ``fixed``: cosine clamped to [0, 1], importance / 10, recency as is, BM25 saturated as
    ``bm25 / (bm25 + 2)`` — every part is absolute, so scores are comparable across calls."""

    MINMAX = "minmax"
    FIXED = "fixed"


class DepthWeighting(StrEnum):
    """How an ancestor's depth d scales its boost: ``chain`` (the default) 1 for the deepest
    cause the read reaches (its root), one ``chain_step`` less for each link nearer the crisis,
    never below ``chain_floor`` — so the root's witnesses come first and the proximate cause's
    still stand above everything the graph does not lift; ``flat`` 1; ``proximate`` 1/d (near
    causes count more); ``root`` d/max_depth (distant causes count more, near ones starve)."""

    CHAIN = "chain"
    FLAT = "flat"
    PROXIMATE = "proximate"
    ROOT = "root"


class Fusion(StrEnum):
    """How the causal boost joins the episodic score: ``additive`` (``episodic / Σw + λ·boost``)
    or ``multiplicative`` (``episodic · (1 + λ·boost)``, CivilizationOS's published form, which
    cannot lift a record with a near-zero episodic score)."""

    ADDITIVE = "additive"
    MULTIPLICATIVE = "multiplicative"


@dataclass(frozen=True, slots=True, kw_only=True)
class CausalConfig:
    """The causal boost of crisis reads (DESIGN §4, TCMF).

    Attributes:
        fusion: additive (default) or multiplicative.
        weight: λ, the boost's weight in the fusion. 2 under additive fusion: the episodic part
            is at most about 1, so a chain witness's ``λ × chain_floor`` = 1 keeps it above every
            record the graph does not lift, and one chain step is worth 0.2 of episodic score
            (docs/causal.md has the margins).
        max_depth: how many links upstream of the crisis count.
        depth_weighting: chain (default), flat, proximate or root.
        chain_floor: the ``chain`` weight of the cause nearest the crisis when the chain is as
            deep as ``max_depth``; one chain step is ``(1 - chain_floor) / (max_depth - 1)``.
        association_thresholds: per embedder model id, the cosine at or above which a record is
            associated with an event it did not witness; ``default_association_threshold`` for
            other models. A record that names the event (``event_id``) always has association 1.
        association_margin: a cosine of at least threshold + margin associates fully (1.0); in
            between, association is ``cosine / (threshold + margin)``: clearly about an event
            is about it, so cosine noise among the chain's memories does not reorder the chain.
        fallback_factor: scope-fallback events count at this fraction of the weakest true
            ancestor (< 1, so strictly below every true ancestor at equal association).
        fallback_window: how far before the crisis a scope event still counts (``None``: no
            scope fallback).
    """

    fusion: Fusion = Fusion.ADDITIVE
    weight: float = 2.0
    max_depth: int = 6
    depth_weighting: DepthWeighting = DepthWeighting.CHAIN
    chain_floor: float = 0.5
    association_thresholds: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"sentence-transformers/all-MiniLM-L6-v2": 0.5})
    )
    default_association_threshold: float = 0.6
    association_margin: float = 0.15
    fallback_factor: float = 0.25
    fallback_window: timedelta | None = timedelta(days=30)

    def __post_init__(self) -> None:
        for attr, enum in (("fusion", Fusion), ("depth_weighting", DepthWeighting)):
            value = getattr(self, attr)
            try:
                object.__setattr__(self, attr, enum(value))
            except ValueError:
                choices = ", ".join(e.value for e in enum)
                raise ConfigError(f"{attr} must be one of {choices}; got {value!r}") from None
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ConfigError(f"causal weight must be finite and >= 0; got {self.weight}")
        if isinstance(self.max_depth, bool) or not 1 <= self.max_depth <= 32:
            raise ConfigError(f"max_depth must be in 1..32; got {self.max_depth}")
        if not 0.0 <= self.fallback_factor < 1.0:
            raise ConfigError("fallback_factor must be in [0, 1)")
        if not 0.0 < self.chain_floor <= 1.0:
            raise ConfigError(f"chain_floor must be in (0, 1]; got {self.chain_floor}")
        if not 0.0 <= self.association_margin <= 1.0:
            raise ConfigError(
                f"association_margin must be in [0, 1]; got {self.association_margin}"
            )

    @property
    def chain_step(self) -> float:
        """What the ``chain`` weighting takes off per link nearer the crisis than the root."""
        return 0.0 if self.max_depth == 1 else (1.0 - self.chain_floor) / (self.max_depth - 1)

    def association_threshold(self, model_id: str | None, calibrated: float | None = None) -> float:
        """The model's threshold: its entry in ``association_thresholds``, else its measured
        one (``calibrated``: :func:`chronomem.writing.calibration.calibrate`), else the
        default."""
        if model_id is not None and model_id in self.association_thresholds:
            return self.association_thresholds[model_id]
        return self.default_association_threshold if calibrated is None else calibrated

    def full_association(self, model_id: str | None, calibrated: float | None = None) -> float:
        """The cosine from which a record is fully associated with an event (1.0)."""
        return min(1.0, self.association_threshold(model_id, calibrated) + self.association_margin)


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleConfig:
    """The lifecycle factor of a preset (DESIGN §2 step 5).

    Attributes:
        decay_kinds: kinds that lose rank when unused and unverified (facts, instructions).
        half_life: staleness after which the decay factor is 0.5.
        floor: the smallest decay factor, > 0: a stale but close match can still surface.
        feedback_strength: ``factor = 2 ** (strength * clamp(score, feedback_min, feedback_max))``.
        feedback_min / feedback_max: clamp of the summed ratings (three harmful ratings are the
            most push-down; one helpful rating the most lift).
    """

    decay_kinds: frozenset[Kind] = frozenset({Kind.FACT, Kind.INSTRUCTION})
    half_life: timedelta = timedelta(days=90)
    floor: float = 0.25
    feedback_strength: float = 0.5
    feedback_min: float = -3.0
    feedback_max: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "decay_kinds", frozenset(Kind(k) for k in self.decay_kinds))
        if self.half_life <= timedelta():
            raise ConfigError("half_life must be positive")
        if not 0.0 < self.floor <= 1.0:
            raise ConfigError("floor must be in (0, 1]")
        if not self.feedback_min <= 0.0 <= self.feedback_max:
            raise ConfigError("feedback_min <= 0 <= feedback_max is required")


#: No lifecycle factor at all (the reference-code compatibility preset).
NO_LIFECYCLE = LifecycleConfig(decay_kinds=frozenset(), feedback_strength=0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionConfig:
    """Version-aware ranking (see :mod:`chronomem.scoring.versions`), tuned on LoCoMo's first five
    conversations and LongMemEval's knowledge-update questions with all-MiniLM-L6-v2.

    The defaults (those of the ``default`` preset) use only the band: with passage vectors, also
    demoting near-duplicates and passing their score on measured worse on both benchmarks
    (docs/benchmarks.md). ``demote`` and ``inherit`` stay available for memories of short facts
    restated with new values.

    Attributes:
        window: how many of the best candidates take part.
        similarity: the cosine at or above which two records are versions of the same fact.
        demote: an older version's score is multiplied by ``1 - demote``.
        inherit: a newer version's score gains ``inherit ×`` the older version's score.
        band: candidates scoring at least ``(1 - band) ×`` the best score form the band ...
        band_weight: ... in which the most recent version of a fact gains up to ``band_weight
            ×`` the best score (its earliest version gains nothing; between, in proportion to the
            time). Relative, so a question nothing answers well does not hand the top rank to the
            newest record.
        same_fact: two records of the band whose cosine is at least this are versions of one
            fact; a record with no such partner in the band gains no recency (a newer, unrelated
            fact about the same subject is not lifted over the one that answers).
            Questions asking when something happened ("When did ...") get no band: they ask
            for the moment of an event, not for the current state.
        newer_after: how much later a near-duplicate must be recorded to count as newer.
        recency_span: in-band recency is measured over at least this long.
        spread: for questions that take every piece of evidence (a count, an order, a change:
            "how many", "before", "switched"), among the best ``spread_window`` candidates each
            session's best keeps its score and the session's next ones lose ``spread`` of it
            per place — so every session carrying a matching fact reaches the top k. 0: never.
        spread_window: how many of the best candidates take part in the spread.
        session_gap: records whose ``occurred_at`` lie within this of each other (in time
            order) belong to one session.
    """

    window: int = 10
    similarity: float = 0.7
    demote: float = 0.0
    inherit: float = 0.0
    band: float = 0.3
    band_weight: float = 0.3
    same_fact: float = 0.52
    newer_after: timedelta = timedelta(hours=12)
    recency_span: timedelta = timedelta(days=1)
    spread: float = 0.0
    spread_window: int = 30
    session_gap: timedelta = timedelta(hours=1)

    def __post_init__(self) -> None:
        if self.newer_after < timedelta() or self.recency_span <= timedelta():
            raise ConfigError("versions.newer_after must be >= 0 and recency_span positive")
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 2:
            raise ConfigError("versions.window must be an integer >= 2")
        if not 0.0 < self.similarity <= 1.0 or not 0.0 <= self.demote < 1.0:
            raise ConfigError("versions.similarity must be in (0, 1] and demote in [0, 1)")
        if not -1.0 <= self.same_fact <= 1.0:
            raise ConfigError(f"versions.same_fact must be in [-1, 1]; got {self.same_fact}")
        for name in ("inherit", "band", "band_weight"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ConfigError(f"versions.{name} must be finite and >= 0")
        if not 0.0 <= self.spread < 1.0:
            raise ConfigError(f"versions.spread must be in [0, 1); got {self.spread}")
        if isinstance(self.spread_window, bool) or not isinstance(self.spread_window, int):
            raise ConfigError("versions.spread_window must be an integer")
        if self.spread_window < 1 or self.session_gap <= timedelta():
            raise ConfigError("versions.spread_window must be >= 1 and session_gap positive")
        if self.band > 1.0:
            raise ConfigError(
                f"versions.band is a fraction of the best score, in [0, 1]; got {self.band}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringConfig:
    """Everything that decides a score. See DESIGN §2 for the stages.

    Attributes:
        name: the preset name shown in explanations.
        relevance: dense, lexical or hybrid. Without a query vector, dense degrades to lexical.
        dense_share: in hybrid mode, ``relevance = dense_share * dense + (1 - dense_share) *
            lexical`` after normalisation, in [0, 1] ...
        dense_floor: ... but never below ``dense_floor * dense``, in [0, 1]: evidence that
            shares no word with the question keeps that much of its dense relevance instead of
            ``dense_share`` of it. At or below ``dense_share`` it changes nothing.
        recency: elapsed (time since last access) or ordinal (code compatibility).
        recency_decay: per ``recency_unit`` (elapsed) or per position (ordinal), in (0, 1].
        recency_unit: the time unit of the decay (the paper: one hour).
        normalisation: minmax or fixed.
        weights: the episodic score weights.
        exclude_key: records whose embedding key contains this substring are not candidates
            (the Generative Agents code drops every memory whose ``embedding_key`` contains
            "idle"). A record's embedding key is ``metadata["ga_embedding_key"]`` when it has
            one (the importer keeps it), else its text.
        exclude_kinds: kinds that are never candidates for this preset.
        listed_after: ordinal recency only: among candidates last accessed at the same instant,
            records of these kinds come after every other record, and within each group the
            most recently written comes first (the code concatenates its event list and its
            thought list, each newest first, and sorts them stably by last access).
        sequential_touch: the default for ``recall_many``: touch after each query (the code's
            behaviour) instead of scoring every query on one snapshot.
        touch_backwards: touching sets ``last_accessed_at = as_of`` even when that is earlier
            than the stored access (the code stamps the simulation's current time, also when
            its clock went back). ``False`` (every other preset): access times never move back.
        default_k: how many hits a read returns when it does not say (the code: 30).
        float64_cosines: compute cosines in float64 from the stored float32 vectors (as the
            code computes them from its own vectors): slower, and scores then differ from the
            code's by the float32 storage alone.
        lifecycle: staleness decay and feedback push-down (DESIGN §2 step 5).
        causal: the causal boost applied when a read names a crisis (DESIGN §4).
        bm25_half: the BM25 at which fixed lexical relevance is 0.5 (``bm25 / (bm25 + half)``).
        versions: version-aware ranking of the best candidates, or ``None``.
        passages: a record's dense relevance is the best cosine of the record and its passages
            (sentences embedded on their own, see ``Memory.open(passages=...)``).
        speaker_weight: relevance gained by the transcript lines (``"Name: words"``) of the
            speaker a question favours: the other party's when it asks what was said to the
            asker ("you recommended ...", "remind me ..."), a named speaker's when it asks what
            they said ("What did Melanie suggest"), else the asker's own (``asker``) when it
            speaks in the first person (``retrieval/cues.py``).
        speaker_cues: which of those readings apply: ``"other"`` (what was said to the asker),
            ``"named"`` (what a named speaker said), ``"self"`` (the asker's own lines).
        time_prior: how much of its score a record can lose for lying outside the window of a
            time reference in the question ("a couple of days ago", "in March"), in [0, 1); 0
            reads no time references. Records in the window (or nearest it) keep their score.
    """

    name: str = "custom"
    relevance: RelevanceMode = RelevanceMode.HYBRID
    dense_share: float = 0.5
    dense_floor: float = 0.0
    recency: RecencyMode = RecencyMode.ELAPSED
    recency_decay: float = 0.995
    recency_unit: timedelta = timedelta(hours=1)
    normalisation: Normalisation = Normalisation.MINMAX
    weights: Weights = field(default_factory=Weights)
    exclude_key: str | None = None
    exclude_kinds: frozenset[Kind] = frozenset()
    listed_after: frozenset[Kind] = frozenset()
    sequential_touch: bool = False
    touch_backwards: bool = False
    default_k: int = 10
    float64_cosines: bool = False
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    causal: CausalConfig = field(default_factory=CausalConfig)
    bm25_half: float = 2.0
    versions: VersionConfig | None = None
    passages: bool = False
    speaker_weight: float = 0.0
    speaker_cues: frozenset[str] = SPEAKER_CUES
    time_prior: float = 0.0

    def __post_init__(self) -> None:
        # Accept plain strings for the enums, so configs read from JSON or flags validate here.
        for attr, enum in (
            ("relevance", RelevanceMode),
            ("recency", RecencyMode),
            ("normalisation", Normalisation),
        ):
            value = getattr(self, attr)
            try:
                object.__setattr__(self, attr, enum(value))
            except ValueError:
                choices = ", ".join(e.value for e in enum)
                raise ConfigError(f"{attr} must be one of {choices}; got {value!r}") from None
        if not (0.0 < self.recency_decay <= 1.0):
            raise ConfigError(f"recency_decay must be in (0, 1]; got {self.recency_decay}")
        if self.recency_unit <= timedelta():
            raise ConfigError(f"recency_unit must be positive; got {self.recency_unit}")
        if not math.isfinite(self.speaker_weight) or self.speaker_weight < 0:
            raise ConfigError(f"speaker_weight must be finite and >= 0; got {self.speaker_weight}")
        object.__setattr__(self, "speaker_cues", frozenset(self.speaker_cues))
        if not self.speaker_cues <= SPEAKER_CUES:
            unknown = ", ".join(sorted(self.speaker_cues - SPEAKER_CUES))
            raise ConfigError(f"speaker_cues are some of other, named, self; got {unknown}")
        if not 0.0 <= self.time_prior < 1.0:
            raise ConfigError(f"time_prior must be in [0, 1); got {self.time_prior}")
        if not math.isfinite(self.bm25_half) or self.bm25_half <= 0:
            raise ConfigError(f"bm25_half must be finite and positive; got {self.bm25_half}")
        if not (0.0 <= self.dense_floor <= 1.0):
            raise ConfigError(f"dense_floor must be in [0, 1]; got {self.dense_floor}")
        if not (0.0 <= self.dense_share <= 1.0):
            raise ConfigError(f"dense_share must be in [0, 1]; got {self.dense_share}")
        for name in ("relevance", "recency", "importance"):
            w = getattr(self.weights, name)
            if not math.isfinite(w) or w < 0:
                raise ConfigError(f"weights.{name} must be finite and >= 0; got {w}")
        for name in ("exclude_kinds", "listed_after"):
            object.__setattr__(self, name, frozenset(Kind(k) for k in getattr(self, name)))
        if isinstance(self.default_k, bool) or not isinstance(self.default_k, int):
            raise ConfigError(f"default_k must be an integer; got {self.default_k!r}")
        if self.default_k < 1:
            raise ConfigError(f"default_k must be at least 1; got {self.default_k}")


# Long-horizon conversational memory: hybrid relevance carries the ranking (the best of a
# record's and its passages' cosines, BM25 that can raise relevance but costs evidence without
# shared words at most 0.4 of its cosine, the lines of the speaker the question is about); a time
# reference in the question prefers its window; recency and importance only break near-ties;
# among the best candidates, later versions of a fact win, and questions that take every piece of
# evidence reach every session. Fixed normalisation keeps scores comparable.
_DEFAULT = ScoringConfig(
    name="default",
    relevance=RelevanceMode.HYBRID,
    dense_share=0.5,
    recency=RecencyMode.ELAPSED,
    recency_decay=0.99,
    recency_unit=timedelta(days=1),
    normalisation=Normalisation.FIXED,
    weights=Weights(relevance=1.0, recency=0.05, importance=0.05),
    dense_floor=0.6,
    bm25_half=8.0,
    versions=VersionConfig(spread=0.1),
    passages=True,
    speaker_weight=0.1,
    time_prior=0.3,
)

PRESETS: Mapping[str, ScoringConfig] = MappingProxyType(
    {
        "default": _DEFAULT,
        # The paper (Park et al. 2023, §4.1): recency 0.995 per game hour since last access,
        # importance and relevance, each min-max normalised, equal weights.
        "generative-agents": ScoringConfig(
            name="generative-agents",
            relevance=RelevanceMode.DENSE,
            recency=RecencyMode.ELAPSED,
            recency_decay=0.995,
            recency_unit=timedelta(hours=1),
            normalisation=Normalisation.MINMAX,
            weights=Weights(relevance=1.0, recency=1.0, importance=1.0),
        ),
        # Compatibility mode reproducing the authors' code (reverie retrieve.new_retrieve):
        # ordinal recency over events then thoughts (each newest first) sorted stably by last
        # access ascending (scratch decay 0.99), global weights recency 0.5 / relevance 3 /
        # importance 2, memories whose embedding key contains "idle" skipped, chats not
        # retrieved, 30 nodes per focal point, focal points touched one after another with the
        # read's instant even when it is earlier than the last access.
        "generative-agents-code": ScoringConfig(
            name="generative-agents-code",
            relevance=RelevanceMode.DENSE,
            recency=RecencyMode.ORDINAL,
            recency_decay=0.99,
            normalisation=Normalisation.MINMAX,
            weights=Weights(relevance=3.0, recency=0.5, importance=2.0),
            exclude_key="idle",
            exclude_kinds=frozenset({Kind.CHAT}),
            listed_after=frozenset({Kind.THOUGHT, Kind.REFLECTION, Kind.PLAN}),
            sequential_touch=True,
            touch_backwards=True,
            default_k=30,
            float64_cosines=True,
            lifecycle=NO_LIFECYCLE,
        ),
        # For assistants whose memory is mostly facts that change: a wider, stronger preference
        # for the latest among the best candidates (within 40% of the best score, the most recent
        # record gains up to 0.4 × it). Ranks the newest value first even more often, at a cost in
        # top ranks on general conversational QA (docs/benchmarks.md).
        "current-facts": replace(
            _DEFAULT,
            name="current-facts",
            versions=VersionConfig(band=0.4, band_weight=0.4, spread=0.1),
        ),
        # CivilizationOS (TCMF): recency decays 0.02 per simulation tick (here: per hour), fixed
        # normalisation, causal fusion on crisis reads (additive, as its code settled on).
        "tcmf": ScoringConfig(
            name="tcmf",
            relevance=RelevanceMode.DENSE,
            recency=RecencyMode.ELAPSED,
            recency_decay=0.98,
            recency_unit=timedelta(hours=1),
            normalisation=Normalisation.FIXED,
            weights=Weights(relevance=1.0, recency=0.5, importance=0.5),
        ),
    }
)


def resolve_preset(preset: str | ScoringConfig) -> ScoringConfig:
    """The config for a preset name (or the config itself)."""
    if isinstance(preset, ScoringConfig):
        return preset
    try:
        if not isinstance(preset, str):
            raise KeyError(preset)
        return PRESETS[preset]
    except KeyError:
        known = ", ".join(sorted(PRESETS))
        raise ConfigError(f"unknown preset {preset!r}; known presets: {known}") from None
