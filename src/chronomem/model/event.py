"""The causal graph's values: events, links and ancestors (DESIGN §4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["Ancestor", "Event", "EventKind", "Link", "Provenance"]


class EventKind(StrEnum):
    CRISIS = "crisis"
    DECISION = "decision"
    OUTCOME = "outcome"
    HAPPENING = "happening"


class Provenance(StrEnum):
    """``explicit``: asserted by a caller; ``inferred``: proposed by ``auto_link`` (similarity
    and time); ``inferred-llm``: proposed by a model reading a conversation (``extract``). An
    inferred link of either kind never replaces an explicit one."""

    EXPLICIT = "explicit"
    INFERRED = "inferred"
    INFERRED_LLM = "inferred-llm"


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """A node of the space-wide causal graph. ``scope`` groups events (an institution, a
    district) for the scope fallback."""

    id: str
    space: str
    text: str
    kind: EventKind
    occurred_at: datetime
    recorded_at: datetime
    scope: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    has_embedding: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "space": self.space,
            "text": self.text,
            "kind": self.kind.value,
            "occurred_at": self.occurred_at.isoformat(),
            "recorded_at": self.recorded_at.isoformat(),
            "scope": self.scope,
            "metadata": dict(self.metadata),
            "has_embedding": self.has_embedding,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A directed causal edge ``cause -> effect`` with a weight in (0, 1]. Inferred links keep the
    similarity that proposed them."""

    cause: str
    effect: str
    weight: float
    provenance: Provenance
    created_at: datetime
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "effect": self.effect,
            "weight": self.weight,
            "provenance": self.provenance.value,
            "created_at": self.created_at.isoformat(),
            "similarity": self.similarity,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Ancestor:
    """An event upstream of another. ``depth`` is the fewest links between them (within the
    bound); ``strength`` the best product of link weights over paths within the bound; ``path``
    the event ids of that best path, from this ancestor to the event asked about."""

    event: Event
    depth: int
    strength: float
    path: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.event.to_dict(),
            "depth": self.depth,
            "strength": self.strength,
            "path": list(self.path),
        }
