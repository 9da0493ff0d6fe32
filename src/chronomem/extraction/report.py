"""What an extraction did (issue 29): the changes it applied through the lifecycle, the
proposals it queued for review, and the proposals it refused, each with its reasons."""

from __future__ import annotations

from dataclasses import dataclass

from chronomem.extraction.validate import Rejected

__all__ = ["Applied", "ExtractionReport"]  # JSON by their fields (cli/render.jsonable, pydantic)


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
