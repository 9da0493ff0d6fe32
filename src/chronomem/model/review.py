"""The review queue and the access log (DESIGN §3): proposals a person or a supervising agent
approves or rejects — nothing is ever removed silently — and who read which record, when, with
which query (opt-in per space)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

__all__ = ["Access", "Proposal", "ProposalStatus", "ReviewAction"]


class ReviewAction(StrEnum):
    """What a proposal asks for; approving applies it through the normal write path."""

    VERIFY = "verify"
    CLOSE = "close"
    SUPERSEDE = "supersede"
    FORGET = "forget"
    ADD = "add"  # an extracted memory (issue 29): ``change`` holds the record to write
    EVENTS = "events"  # extracted events and causes: ``change`` holds them


class ProposalStatus(StrEnum):
    OPEN = "open"
    APPROVED = "approved"
    REJECTED = "rejected"
    OBSOLETE = "obsolete"  # what it proposed no longer applies (the records changed)


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """One proposed change. ``category`` says why it was found (``stale``, ``unused``,
    ``unlinked-version``, ``near-duplicate``, ``pushed-down``, ``flagged-evidence``);
    ``reasons`` say it in words, ``figures`` in numbers (ages in days, cosines, ratings).
    For ``supersede`` the last record is the one that stays; the others are closed as its
    older versions — unless ``change`` holds a replacement (an extraction's proposal, category
    ``extracted``): then the first record is replaced by it, and for ``add`` it is written; the
    other records are the turns it cites. The id is derived from the action, the records and
    their state, so the same proposal has the same id, and a rejected one comes back only when
    something changed."""

    id: str
    action: ReviewAction
    category: str
    agent: str
    record_ids: tuple[str, ...]
    reasons: tuple[str, ...]
    figures: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime
    status: ProposalStatus = ProposalStatus.OPEN
    decided_at: datetime | None = None
    decided_by: str | None = None
    decision_reason: str | None = None
    change: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "action": self.action.value, "category": self.category,
            "agent": self.agent, "record_ids": list(self.record_ids),
            "reasons": list(self.reasons), "figures": dict(self.figures),
            "created_at": self.created_at.isoformat(), "status": self.status.value,
            "decided_at": None if self.decided_at is None else self.decided_at.isoformat(),
            "decided_by": self.decided_by, "decision_reason": self.decision_reason,
            "change": dict(self.change),
        }  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Access:
    """One read that returned a record: when (``at``, the handle's clock), at which instant it
    was evaluated (``as_of``), by whom, through which verb, with which query."""

    seq: int
    at: datetime
    as_of: datetime
    record_id: str
    actor: str | None
    verb: str
    query: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq, "at": self.at.isoformat(), "as_of": self.as_of.isoformat(),
            "record_id": self.record_id, "actor": self.actor, "verb": self.verb,
            "query": self.query,
        }  # fmt: skip
