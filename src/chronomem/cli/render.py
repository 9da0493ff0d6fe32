"""How the CLI shows values: hits with their explanation, records, lifecycle markers, JSON.

Pure functions from values to text, shared by the commands and the demo."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from chronomem.context.block import record_markers
from chronomem.model.record import Hit, Record

__all__ = [
    "format_hit",
    "format_record",
    "lifecycle_marker",
    "print_json",
    "print_record_line",
    "short_time",
]


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def short_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M")


def _age(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400 * 2:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


def format_hit(rank: int, hit: Hit) -> str:
    """One hit as text (and its breakdown when present)."""
    r = hit.record
    holders = ",".join(dict.fromkeys(hit.holders or (r.agent,)))
    marker = lifecycle_marker(r)
    line = (
        f"{rank:>3}  {hit.score:8.4f}  [{holders}] {short_time(r.occurred_at)}  "
        f"imp {r.importance:g}  {r.id}{marker}\n     {r.text}"
    )
    b = hit.breakdown
    if b is None:
        return line
    rel = f"relevance {b.relevance:.3f} ({b.relevance_mode}"
    if b.relevance_dense is not None:
        rel += f", cosine {b.relevance_dense:.3f}"
    elif b.preselected is False:
        rel += ", not pre-selected by pgvector: cosine counted as 0"
    if b.relevance_lexical is not None:
        rel += f", bm25 {b.relevance_lexical:.3f}"
    if b.speaker is not None:
        rel += f", the asker's own line ({b.speaker})"
    rel += ")"
    w = b.weights
    factors = "".join(f"  x {name} {value:.3f}" for name, value in b.factors.items())
    return (
        f"{line}\n     {rel} x{w.relevance:g}  |  recency {b.recency:.3f} "
        f"(raw {b.recency_raw:.4f}, {b.recency_mode}, age {_age(b.age.total_seconds())}) "
        f"x{w.recency:g}  |  importance {b.importance:.3f} (raw {b.importance_raw:g}) "
        f"x{w.importance:g}  =  {b.episodic:.4f}{factors}  [{b.preset}, {b.normalisation}]"
    )


def lifecycle_marker(r: Record) -> str:
    """A short marker for records that are not plainly open and sound."""
    return "".join(f" [{m}]" for m in record_markers(r))


def format_record(r: Record) -> str:
    rows = r.to_dict()
    width = max(len(k) for k in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows.items())


def print_record_line(r: Record) -> None:
    print(f"{r.id}  {short_time(r.occurred_at)}  [{r.kind.value}]{lifecycle_marker(r)}  {r.text}")
