"""Prompt-ready context blocks (DESIGN §4): the question, the ranked evidence and the causal chain,
as stable text and as data, fitted to a token budget.

Pure: hits, events and links in, a :class:`ContextBlock` out. Hits whose relevance falls below
a fraction of the best hit's are left out (:func:`relevant`), unless a cause of the crisis lifted
them. Under a budget the lowest-ranked evidence and the links farthest from the crisis go first,
so the proximate causes stay longest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chronomem.model.event import Event, Link
from chronomem.model.record import Hit, Record
from chronomem.text import wide_chars

__all__ = [
    "ChainLink",
    "ContextBlock",
    "EvidenceItem",
    "Relevant",
    "TokenCounter",
    "approximate_tokens",
    "build_block",
    "chain_links",
    "record_markers",
    "relevant",
]

TokenCounter = Callable[[str], int]


def approximate_tokens(text: str) -> int:
    """The default token count: one token per four characters, and one per wide character
    (Hangul, kana, hanzi), rounded up — close to BPE tokenisers on English prose and on Korean,
    Japanese and Chinese text; pass your model's tokeniser for exact budgets."""
    wide = wide_chars(text)
    return wide + math.ceil((len(text) - wide) / 4)


def record_markers(r: Record) -> list[str]:
    """Lifecycle markers of a record: superseded, closed, pushed down, evidence flags."""
    marks = []
    if r.status.value == "superseded" and r.superseded_at is not None:
        marks.append(f"superseded by {r.superseded_by} on {r.superseded_at:%Y-%m-%d}")
    elif r.status.value == "closed" and r.superseded_at is not None:
        marks.append(f"closed on {r.superseded_at:%Y-%m-%d}: {r.closed_reason}")
    if r.feedback_score < 0:
        marks.append(f"pushed down ({r.feedback_score:g})")
    if r.evidence_status.value != "ok":
        marks.append(r.evidence_status.value.replace("_", " "))
    return marks


@dataclass(frozen=True, slots=True)
class Relevant:
    """The hits a block keeps: ``kept`` (in rank order), the relevance ``floor`` they were held
    to (``None``: none) and how many hits fell below it (``omitted``)."""

    kept: list[Hit]
    floor: float | None
    omitted: int


def lifted(hit: Hit) -> bool:
    """Whether a true cause of the crisis lifted the hit (its witness or a memory about it)."""
    causal = None if hit.breakdown is None else hit.breakdown.causal
    return causal is not None and causal.boost > 0.0 and not causal.fallback


def relevance(hit: Hit) -> float:
    """The hit's relevance component as the read scored it (0 without an explanation)."""
    return 0.0 if hit.breakdown is None else hit.breakdown.relevance


def relevant(hits: Sequence[Hit], min_relevance: float | None) -> Relevant:
    """The hits whose relevance reaches ``min_relevance ×`` the best hit's, or that a cause of
    the crisis lifted; the first hit always stays (hits explained; ``None`` or 0: every hit)."""
    best = max((relevance(h) for h in hits), default=0.0)
    if not min_relevance or best <= 0.0:
        return Relevant(list(hits), None, 0)
    floor = min_relevance * best
    kept = [h for i, h in enumerate(hits) if i == 0 or lifted(h) or relevance(h) >= floor]
    return Relevant(kept, floor, len(hits) - len(kept))


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceItem:
    """One memory of the block; ``relevance`` is its relevance component (``None``: not
    known), ``lifted`` whether a cause of the crisis lifted it."""

    rank: int
    record_id: str
    holders: tuple[str, ...]
    occurred_at: datetime
    importance: float
    text: str
    score: float
    markers: tuple[str, ...]
    relevance: float | None = None
    lifted: bool = False

    def line(self) -> str:
        marks = "".join(f" [{m}]" for m in self.markers)
        return (
            f"{self.rank:>2}. [{', '.join(self.holders)}] {self.occurred_at:%Y-%m-%d} · "
            f"importance {self.importance:g} · {self.record_id}{marks} — {self.text}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "record_id": self.record_id,
            "holders": list(self.holders),
            "occurred_at": self.occurred_at.isoformat(),
            "importance": self.importance,
            "text": self.text,
            "score": self.score,
            "markers": list(self.markers),
            "relevance": self.relevance,
            "lifted": self.lifted,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainLink:
    """One causal link of the chain; ``depth`` is how many links the cause is from the crisis
    (1: a proximate cause)."""

    cause: Event
    effect: Event
    weight: float
    provenance: str
    depth: int
    effect_is_crisis: bool

    def line(self) -> str:
        crisis = " [crisis]" if self.effect_is_crisis else ""
        inferred = "" if self.provenance == "explicit" else f", {self.provenance}"
        return (
            f" - {self.cause.text} ({self.cause.occurred_at:%Y-%m-%d}) "
            f"—{self.weight:.2f}{inferred}→ {self.effect.text} "
            f"({self.effect.occurred_at:%Y-%m-%d}){crisis}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause.to_dict(),
            "effect": self.effect.to_dict(),
            "weight": self.weight,
            "provenance": self.provenance,
            "depth": self.depth,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBlock:
    """A context block: ``text`` for the prompt, and the same content as data.
    ``relevance_floor`` is the relevance the evidence was held to (``None``: none) and
    ``omitted_irrelevant`` how many hits fell below it; ``omitted_evidence`` and
    ``omitted_links`` are what the token budget left out."""

    text: str
    question: str
    as_of: datetime
    crisis: Event | None
    evidence: tuple[EvidenceItem, ...]
    chain: tuple[ChainLink, ...]
    tokens: int
    budget_tokens: int | None
    omitted_evidence: int = 0
    omitted_links: int = 0
    relevance_floor: float | None = None
    omitted_irrelevant: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "as_of": self.as_of.isoformat(),
            "crisis": None if self.crisis is None else self.crisis.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "chain": [c.to_dict() for c in self.chain],
            "tokens": self.tokens,
            "budget_tokens": self.budget_tokens,
            "omitted_evidence": self.omitted_evidence,
            "omitted_links": self.omitted_links,
            "relevance_floor": self.relevance_floor,
            "omitted_irrelevant": self.omitted_irrelevant,
            "text": self.text,
        }


def _render(
    question: str,
    as_of: datetime,
    crisis: Event | None,
    evidence: Sequence[EvidenceItem],
    chain: Sequence[ChainLink],
    omitted: tuple[int, int],
    irrelevant: int = 0,
) -> str:
    lines = [f"Question: {question}", f"As of: {as_of:%Y-%m-%d %H:%M} UTC"]
    if crisis is not None:
        lines.append(f"Crisis: {crisis.text} ({crisis.occurred_at:%Y-%m-%d}) [{crisis.id}]")
    lines += ["", "Evidence (most relevant first):"]
    lines += [e.line() for e in evidence] or [" (no memories)"]
    if irrelevant:
        lines.append(f" ({irrelevant} less relevant memories left out)")
    if crisis is not None:
        lines += ["", "Causal chain (root → crisis, link weights):"]
        lines += [c.line() for c in chain] or [" (no known causes)"]
    if any(omitted):
        lines += [
            "",
            f"({omitted[0]} more evidence item(s) and {omitted[1]} more distant link(s) omitted "
            f"for the token budget)",
        ]
    return "\n".join(lines) + "\n"


def chain_links(
    crisis: Event, links: Sequence[Link], depth_of: Mapping[str, int], events: Mapping[str, Event]
) -> list[ChainLink]:
    """The links among the crisis and its ancestors, root first (deepest cause first, then by
    time)."""
    inside = {crisis.id, *depth_of}
    chosen = [
        ChainLink(
            cause=events[x.cause],
            effect=crisis if x.effect == crisis.id else events[x.effect],
            weight=x.weight,
            provenance=x.provenance.value,
            depth=depth_of[x.cause],
            effect_is_crisis=x.effect == crisis.id,
        )
        for x in links
        if x.cause in depth_of
        and x.effect in inside
        and x.cause in events
        and (x.effect == crisis.id or x.effect in events)
        and (x.effect == crisis.id or depth_of[x.effect] < depth_of[x.cause])
    ]
    return sorted(
        chosen,
        key=lambda c: (
            -c.depth,
            c.cause.occurred_at,
            c.cause.id,
            c.effect.occurred_at,
            c.effect.id,
        ),
    )


def build_block(
    *,
    question: str,
    as_of: datetime,
    hits: Sequence[Hit],
    crisis: Event | None = None,
    chain: Sequence[ChainLink] = (),
    budget_tokens: int | None = None,
    count_tokens: TokenCounter = approximate_tokens,
    cut: Relevant | None = None,
) -> ContextBlock:
    """Render the block, dropping the lowest-ranked evidence and the most distant links
    (alternately) until it fits ``budget_tokens``. The top evidence item and the proximate
    links (depth 1) are dropped last. ``cut``: how :func:`relevant` chose ``hits``."""
    evidence = [
        EvidenceItem(
            rank=i,
            record_id=h.record.id,
            holders=tuple(dict.fromkeys(h.holders or (h.record.agent,))),
            occurred_at=h.record.occurred_at,
            importance=h.record.importance,
            text=h.record.text,
            score=h.score,
            markers=tuple(record_markers(h.record)),
            relevance=None if h.breakdown is None else relevance(h),
            lifted=lifted(h),
        )
        for i, h in enumerate(hits, start=1)
    ]
    links = list(chain)
    dropped_evidence = dropped_links = 0

    irrelevant = 0 if cut is None else cut.omitted

    def text() -> str:
        return _render(
            question, as_of, crisis, evidence, links, (dropped_evidence, dropped_links), irrelevant
        )

    rendered = text()
    drop_link_next = True
    while budget_tokens is not None and count_tokens(rendered) > budget_tokens:
        distant = bool(links) and links[0].depth > 1
        can_drop_evidence = len(evidence) > 1
        if distant and (drop_link_next or not can_drop_evidence):
            links.pop(0)
            dropped_links += 1
        elif can_drop_evidence:
            evidence.pop()
            dropped_evidence += 1
        elif links and len(links) > 1:
            links.pop(0)
            dropped_links += 1
        elif evidence:
            evidence.pop()
            dropped_evidence += 1
        elif links:
            links.pop(0)
            dropped_links += 1
        else:
            break
        drop_link_next = not drop_link_next
        rendered = text()
    return ContextBlock(
        text=rendered,
        question=question,
        as_of=as_of,
        crisis=crisis,
        evidence=tuple(evidence),
        chain=tuple(links),
        tokens=count_tokens(rendered),
        budget_tokens=budget_tokens,
        omitted_evidence=dropped_evidence,
        omitted_links=dropped_links,
        relevance_floor=None if cut is None else cut.floor,
        omitted_irrelevant=irrelevant,
    )
