"""How the CLI shows values: hits with their explanation, records, lifecycle markers, JSON.

Pure functions from values to text, shared by the commands and the demo."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from chronomem.context.block import record_markers
from chronomem.model.event import Link
from chronomem.model.record import Hit, Record

__all__ = [
    "format_hit",
    "format_link",
    "jsonable",
    "format_record",
    "lifecycle_marker",
    "print_json",
    "print_record_line",
    "short_time",
]


def print_json(value: Any) -> None:
    """One JSON document on stdout (what ``--json`` prints, for every command)."""
    print(json.dumps(jsonable(value), ensure_ascii=False, indent=2, default=str))


def jsonable(value: Any) -> Any:
    """A value as JSON-ready data: a model's own ``to_dict()``, else a dataclass's fields;
    instants as ISO 8601, enums as their values, tuples as lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Enum):
        return value.value
    return value


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


def print_record_line(r: Record, *, agent: bool = False) -> None:
    """One record on one line: id, ``occurred_at``, (agent,) kind, lifecycle markers, text."""
    who = f"{r.agent} " if agent else ""
    when = short_time(r.occurred_at)
    print(f"{r.id}  {when}  [{who}{r.kind.value}]{lifecycle_marker(r)}  {r.text}")


def format_link(link: Link, texts: Mapping[str, str]) -> str:
    """``cause -> effect  weight (provenance)``, then the two events' texts."""
    return (
        f"{link.cause} -> {link.effect}  weight {link.weight:g}  ({link.provenance.value})\n"
        f"    {texts.get(link.cause, '?')}  ->  {texts.get(link.effect, '?')}"
    )
