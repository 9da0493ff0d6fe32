"""What an extraction did (issue 29): the changes it applied through the lifecycle, the
proposals it queued for review, and the proposals it refused, each with its reasons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chronomem.extraction.validate import Rejected

__all__ = ["Applied", "ExtractionReport"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Applied:
    """One change stored: ``op`` (``ADD``, ``SUPERSEDE``, ``CLOSE``), the record written (or
    closed; for a write the gate refused, the record it duplicates, with ``stored`` false and
    the ``reason``), the record it replaced, and the turns it cites."""

    op: str
    record_id: str | None
    replaced: str | None
    turns: tuple[str, ...]
    stored: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractionReport:
    """``turns``: how many new turns were read; ``queued``: the ids of the review proposals;
    ``events`` / ``links``: the events added and the ``(cause, effect)`` links made between them
    (provenance ``inferred-llm``); ``calls``: the model calls made."""

    agent: str
    session: str | None
    turns: int
    applied: tuple[Applied, ...]
    queued: tuple[str, ...]
    rejected: tuple[Rejected, ...]
    calls: int
    events: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent, "session": self.session, "turns": self.turns,
            "applied": [vars_of(a) for a in self.applied], "queued": list(self.queued),
            "rejected": [r.to_dict() for r in self.rejected], "calls": self.calls,
            "events": list(self.events), "links": [list(link) for link in self.links],
        }  # fmt: skip


def vars_of(value: Any) -> dict[str, Any]:
    out = {name: getattr(value, name) for name in value.__dataclass_fields__}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
