"""Records and the values reads and writes return (DESIGN §1, §3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar

from chronomem.text import spoken

__all__ = [
    "EMBEDDING_KEY",
    "INSTANT_FIELDS",
    "Breakdown",
    "CausalPart",
    "Dependant",
    "EvidenceStatus",
    "Hit",
    "Kind",
    "Record",
    "Sensitivity",
    "Status",
    "Weights",
    "WriteResult",
]


#: The metadata key holding the text a record's vector was computed from when that is not the
#: record's text: the Generative Agents code's ``embedding_key`` (its ``idle`` filter reads it).
#: The importer keeps it; users migrating a simulation through ``remember`` may set it.
EMBEDDING_KEY = "ga_embedding_key"


class Kind(StrEnum):
    """What a record is. Serialised the same in SQL, JSON and CLI flags.

    ``core`` records are an agent's core memory blocks (the MemGPT pattern: named text always in
    its context, edited by supersession); reads leave them out unless ``kinds`` names them."""

    OBSERVATION = "observation"
    CHAT = "chat"
    THOUGHT = "thought"
    REFLECTION = "reflection"
    PLAN = "plan"
    FACT = "fact"
    INSTRUCTION = "instruction"
    DECISION = "decision"
    CORE = "core"


class Sensitivity(StrEnum):
    """``secret`` and ``personal`` records are purged (not merely deleted) when forgotten."""

    NORMAL = "normal"
    PERSONAL = "personal"
    SECRET = "secret"


class Status(StrEnum):
    """Lifecycle status. Closed and superseded records stay readable by id and in history."""

    OPEN = "open"
    SUPERSEDED = "superseded"
    CLOSED = "closed"


class EvidenceStatus(StrEnum):
    """Integrity of a record's cited evidence (meaningful for reflections)."""

    OK = "ok"
    SUPERSEDED = "evidence_superseded"
    MISSING = "evidence_missing"


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One memory, with every field of DESIGN §1/§3. Instants are aware UTC.

    ``superseded_at`` is the instant the record stopped being open, whether a successor replaced it
    (``status == "superseded"``, ``superseded_by`` set) or ``close()`` closed it. Closing also
    ends the world-time window (``valid_until``); ``valid_until_before`` keeps the end it had
    before, so a read as of an earlier instant sees the window as it was then. ``speaker`` is who
    said it; ``session`` the conversation, thread or run it belongs to (``None``: none).

    ``expires_at`` (a time to live): an open record is closed at that instant — every read at or
    after it treats it as closed then (:meth:`closing_at`), and the next write on the space
    writes the close (``closed_reason`` ``"expired"``, audited). ``ttl`` is the span in seconds
    a refreshing read (``refresh_ttl``) extends it by, from that read's instant.

    ``source_id`` is the id of what the record was made from (a message): the agent holds at
    most one record of each, so a retried write never lands twice.
    """

    id: str
    space: str
    agent: str
    kind: Kind
    text: str
    importance: float
    occurred_at: datetime
    recorded_at: datetime
    last_accessed_at: datetime
    last_verified_at: datetime | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    status: Status = Status.OPEN
    superseded_by: str | None = None
    superseded_at: datetime | None = None
    valid_until_before: datetime | None = None
    closed_reason: str | None = None
    supersedes: tuple[str, ...] = ()
    domain: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    evidence: tuple[str, ...] = ()
    depth: int = 0
    event_id: str | None = None
    sensitivity: Sensitivity = Sensitivity.NORMAL
    evidence_status: EvidenceStatus = EvidenceStatus.OK
    feedback_score: float = 0.0
    has_embedding: bool = False
    speaker: str | None = None
    session: str | None = None
    expires_at: datetime | None = None
    ttl: float | None = None
    source_id: str | None = None

    @property
    def read_text(self) -> str:
        """The text as the embedding model and the full-text index read it: one shape whatever
        shape it was written in, with its speaker named (:func:`chronomem.text.spoken`)."""
        return spoken(self.text, self.speaker)

    def is_visible(self, as_of: datetime, *, include_history: bool = False) -> bool:
        """Whether a read at ``as_of`` may return this record (DESIGN §2 step 1, per record)."""
        if self.recorded_at > as_of:
            return False
        if include_history:
            return True
        return self.is_valid(as_of, as_of)

    def is_valid(self, valid_at: datetime, as_of: datetime) -> bool:
        """Whether the world-time window, as known at ``as_of``, contains ``valid_at``."""
        closing = self.closing_at
        if closing is not None and closing <= as_of:
            until = self.valid_until if self.superseded_at is not None else self.expiry_end()
        else:
            until = self.valid_until_before_close()
        if self.valid_from is not None and valid_at < self.valid_from:
            return False
        return until is None or valid_at < until

    @property
    def closing_at(self) -> datetime | None:
        """When the record stopped (or will stop) being open: its close or supersession, else
        its expiry."""
        return self.superseded_at if self.superseded_at is not None else self.expires_at

    def expiry_end(self) -> datetime | None:
        """The end of the world-time window once the record has expired: an expiry ends it, as
        a close does, never later than it already ended."""
        if self.expires_at is None or self.valid_until is None:
            return self.expires_at or self.valid_until
        return min(self.valid_until, self.expires_at)

    def valid_until_before_close(self) -> datetime | None:
        return self.valid_until if self.superseded_at is None else self.valid_until_before

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; instants as ISO 8601 with offset, enums as their values."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[name] = value
        return out


#: The fields of :class:`Record` that hold instants.
INSTANT_FIELDS = (
    "occurred_at",
    "recorded_at",
    "last_accessed_at",
    "last_verified_at",
    "valid_from",
    "valid_until",
    "superseded_at",
    "valid_until_before",
    "expires_at",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteResult:
    """The outcome of one write. ``stored=False`` carries a ``reason`` and no id."""

    stored: bool
    id: str | None
    reason: str | None = None
    duplicate_of: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Weights:
    """Weights of the episodic score (DESIGN §2 step 4)."""

    relevance: float = 1.0
    recency: float = 1.0
    importance: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CausalPart:
    """Why a crisis read lifted a record (DESIGN §4): the event that gave the largest boost,
    how the record is associated with it (``witness``: it names the event; ``cosine``: similar
    enough), the event's depth and path strength upstream of the crisis, and the fusion used.
    ``event_id`` is ``None`` when no causal event is associated with the record. ``gate``: for a
    scope-fallback event under additive fusion, the record's episodic part (clipped to [0, 1])
    that multiplied the event's contribution, so the fallback amplifies what answers the
    question and cannot lift what does not."""

    boost: float
    fusion: str
    weight: float
    event_id: str | None = None
    association: float = 0.0
    via: str | None = None
    depth: int | None = None
    path_strength: float | None = None
    effective_strength: float | None = None
    fallback: bool = False
    path: tuple[str, ...] = ()
    gate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "boost": self.boost,
            "fusion": self.fusion,
            "weight": self.weight,
            "event_id": self.event_id,
            "association": self.association,
            "via": self.via,
            "depth": self.depth,
            "path_strength": self.path_strength,
            "effective_strength": self.effective_strength,
            "fallback": self.fallback,
            "path": list(self.path),
            "gate": self.gate,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakdown:
    """Why a hit scored what it did: raw and normalised components, weights and factors.

    ``relevance_dense`` is the raw cosine, ``relevance_lexical`` the raw BM25 (higher is better);
    either is ``None`` when that signal was not used. ``preselected`` is ``None`` when every
    record was scored exactly; after pgvector pre-selection (PostgreSQL, large namespaces) it
    says whether this record's cosine was computed (it was among the nearest, or it matches a
    query term) — if not, it counted as 0 (``relevance_dense`` is ``None``). ``recency_raw`` is
    ``decay ** (age / unit)`` for elapsed recency, or ``decay ** position`` for the
    code-compatible ordinal recency. With a preset using passages, ``relevance_dense`` is the
    best cosine of the record and its passages. ``speaker`` names the record's speaker when it is
    the read's asker and the query speaks in the first person (``relevance`` then includes the
    preset's ``speaker_weight``). ``unread_language`` names the language of the question or of the
    record when the embedding model does not read it: the cosine did not count, relevance is the
    words' (DESIGN §9). ``filter`` is the read's filter the record passed, as text (the
    candidates, and so the normalisation ranges, were the records it selects). ``source`` says
    where an extracted memory came from: the model and the conversation turns it cites.
    """

    preset: str
    normalisation: str
    relevance_mode: str
    relevance_dense: float | None
    relevance_lexical: float | None
    relevance: float
    recency_mode: str
    age: timedelta
    recency_raw: float
    recency: float
    importance_raw: float
    importance: float
    weights: Weights
    episodic: float
    factors: Mapping[str, float]
    final: float
    causal: CausalPart | None = None
    preselected: bool | None = None
    speaker: str | None = None
    cues: Mapping[str, str] = field(default_factory=dict)
    unread_language: str | None = None
    filter: str | None = None
    source: str | None = None

    def contributions(self) -> dict[str, float]:
        """The score as a sum (it adds up to ``final``, to float rounding): each weighted
        component after every multiplicative factor (the lifecycle's decay and feedback, an
        older version's demotion), then the causal boost (additive fusion: its own term;
        multiplicative: what the ``1 + weight * boost`` factor added to the components) and the
        version bonuses. What the web UI draws as bars."""
        w, f = self.weights, self.factors
        scale = f.get("decay", 1.0) * f.get("feedback", 1.0) * f.get("time_window", 1.0)
        demoted = f.get("older_version", 1.0)
        boost, lift = None, None
        if self.causal is not None:  # a crisis read: the fusion applies to every hit
            if self.causal.fusion == "additive":
                scale /= (w.relevance + w.recency + w.importance) or 1.0
                boost = self.causal.weight * self.causal.boost * demoted
            else:
                lift = self.causal.weight * self.causal.boost
        scale *= demoted
        parts = {
            "relevance": w.relevance * self.relevance * scale,
            "recency": w.recency * self.recency * scale,
            "importance": w.importance * self.importance * scale,
        }
        if lift:
            boost = sum(parts.values()) * lift
        if boost:
            parts["causal boost"] = boost
        if f.get("newer_version_bonus"):
            parts["newer version"] = f["newer_version_bonus"]
        if f.get("recent_in_band_bonus"):
            parts["latest in its band"] = f["recent_in_band_bonus"]
        if "same_session" in f:  # after its session's better hits: the whole score scaled
            parts = {name: value * f["same_session"] for name, value in parts.items()}
        return parts

    def to_dict(self) -> dict[str, Any]:
        return {
            "causal": None if self.causal is None else self.causal.to_dict(),
            "preselected": self.preselected,
            "preset": self.preset,
            "normalisation": self.normalisation,
            "relevance_mode": self.relevance_mode,
            "relevance_dense": self.relevance_dense,
            "relevance_lexical": self.relevance_lexical,
            "speaker": self.speaker,
            "cues": dict(self.cues),
            "unread_language": self.unread_language,
            "filter": self.filter,
            "source": self.source,
            "relevance": self.relevance,
            "recency_mode": self.recency_mode,
            "age_seconds": self.age.total_seconds(),
            "recency_raw": self.recency_raw,
            "recency": self.recency,
            "importance_raw": self.importance_raw,
            "importance": self.importance,
            "weights": {
                "relevance": self.weights.relevance,
                "recency": self.weights.recency,
                "importance": self.weights.importance,
            },
            "episodic": self.episodic,
            "factors": dict(self.factors),
            "final": self.final,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Dependant:
    """A record that depends on another: ``relation`` says how (:attr:`CITES`, "supersedes
    it", "is superseded by it")."""

    CITES: ClassVar[str] = "cites it as evidence"

    record_id: str
    relation: str

    def to_dict(self) -> dict[str, Any]:
        return {"record_id": self.record_id, "relation": self.relation}


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """One result of a read. ``holders`` lists every agent holding the same text (multi-agent
    reads collapse duplicates into one hit); ``record_ids`` the matching record of each holder.
    ``similarity`` is the raw cosine of the query's vector and the record's (the best of its
    passages' under a preset with passages), in [-1, 1] — the number vector stores call a score
    and users threshold on; ``None`` when the read had no query vector or the record has none.
    ``score`` is chronomem's final score, by which hits are ranked."""

    record: Record
    score: float
    breakdown: Breakdown | None = None
    holders: tuple[str, ...] = ()
    record_ids: tuple[str, ...] = ()
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "record": self.record.to_dict(),
            "score": self.score,
            "similarity": self.similarity,
            "holders": list(self.holders),
            "record_ids": list(self.record_ids),
            "breakdown": None if self.breakdown is None else self.breakdown.to_dict(),
        }
