"""How the CLI shows values: hits with their explanation, records, lifecycle markers, JSON.

Pure functions from values to text, shared by the commands and the demo."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from chronomem.context.block import record_markers
from chronomem.model.event import Event, Link
from chronomem.model.record import Breakdown, Hit, Record
from chronomem.text import display_width

__all__ = [
    "explanation",
    "print_items",
    "format_event",
    "format_hit",
    "format_link",
    "jsonable",
    "format_record",
    "lifecycle_marker",
    "print_json",
    "print_record_line",
    "short_time",
    "unique_prefixes",
]


def print_json(value: Any) -> None:
    """One JSON document on stdout (what ``--json`` prints, for every command)."""
    print(json.dumps(jsonable(value), ensure_ascii=False, indent=2, default=str))


def print_items(
    items: Sequence[Any], as_json: bool, line: Callable[[Any], None], empty: str
) -> int:
    """A list answer: with ``--json`` one JSON array of the items, else one ``line`` each, or
    ``empty`` when there are none. Returns the exit code (0)."""
    if as_json:
        print_json([item.to_dict() for item in items])
    else:
        for item in items:
            line(item)
        if not items:
            print(empty)
    return 0


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


def format_hit(rank: int, hit: Hit, *, ids: Mapping[str, str] | None = None) -> str:
    """One hit as text, and with a breakdown its explanation: one line per part of the score,
    each with its operations, the parts adding up to the score (``Breakdown.contributions``).
    ``ids`` maps full ids to the (unique) prefixes to show; default: full ids."""
    r = hit.record
    holders = ",".join(dict.fromkeys(hit.holders or (r.agent,)))
    marker = lifecycle_marker(r)
    shown = (ids or {}).get(r.id, r.id)
    line = (
        f"{rank:>3}  {hit.score:8.4f}  [{holders}] {short_time(r.occurred_at)}  "
        f"imp {r.importance:g}  {shown}{marker}\n     {r.text}"
    )
    if hit.breakdown is None:
        return line
    return f"{line}\n" + "\n".join(explanation(hit.breakdown))


def _relevance_note(b: Breakdown) -> str:
    note = b.relevance_mode
    if b.relevance_dense is not None:
        note += f", cosine {b.relevance_dense:.3f}"
    elif b.preselected is False:
        note += ", not pre-selected by pgvector: cosine counted as 0"
    if b.relevance_lexical is not None:
        note += f", bm25 {b.relevance_lexical:.3f}"
    if b.speaker is not None:
        note += f", {b.speaker}'s line: the question {b.cues.get('speaker', 'favours it')}"
    return note


def explanation(b: Breakdown) -> list[str]:
    """The lines explaining a score: ``relevance``, ``+ recency``, ``+ importance`` (each
    component × its weight × the multiplicative factors), ``+`` the causal boost and version
    bonuses, ``= score``. Each line ends with its part; the parts add up to the score (to the
    printed precision). ``×`` multiplies, ``÷`` divides, ``+`` adds."""
    w, f = b.weights, b.factors
    scale = "".join(
        f" × {name.replace('_', ' ')} {f[name]:.3f}"
        for name in ("decay", "feedback", "time_window", "older_version", "same_session")
        if name in f
    )
    session = f" (scaled by same session {f['same_session']:.3f})" if "same_session" in f else ""
    additive = b.causal is not None and b.causal.fusion == "additive"
    if additive:
        scale += f" ÷ {w.relevance + w.recency + w.importance:g} (the weights' sum)"
    notes = {
        "relevance": f"relevance {b.relevance:.3f} ({_relevance_note(b)}) × {w.relevance:g}",
        "recency": f"recency {b.recency:.3f} (raw {b.recency_raw:.4f}, {b.recency_mode}, "
        f"age {_age(b.age.total_seconds())}) × {w.recency:g}",
        "importance": f"importance {b.importance:.3f} (raw {b.importance_raw:g}) "
        f"× {w.importance:g}",
    }
    rows = []
    for i, (name, part) in enumerate(b.contributions().items()):
        op = "  " if i == 0 else "+ "
        if name in notes:
            text = notes[name] + scale
        elif name == "causal boost" and b.causal is not None:
            c = b.causal
            how = (
                f"weight {c.weight:g} × boost {c.boost:.3f}"
                if additive
                else f"(the parts above) × weight {c.weight:g} × boost {c.boost:.3f}"
            )
            text = f"causal boost ({c.fusion}): {how}"
        else:
            text = f"{name} bonus{session}"
        rows.append((f"   {op}{text}", part))
    width = max(display_width(t) for t, _ in rows)
    lines = [f"{pad(t, width)}  = {part:8.4f}" for t, part in rows]
    lines.append(f"{pad('   = score', width)}    {b.final:8.4f}  [{b.preset}, {b.normalisation}]")
    cues = [f"   ({b.cues[name]})" for name in ("time", "every_piece") if name in b.cues]
    if b.filter is not None:
        cues.insert(0, f"   (filter: {b.filter})")
    if b.source is not None:
        cues.insert(0, f"   ({b.source})")
    return [*cues, *lines]


def unique_prefixes(ids: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """Each id's shortest prefix of at least ``minimum`` characters that no other of ``ids``
    shares (the full id when one id is a prefix of another). Ids made together share their
    time part, so a fixed cut would print two identical ids."""
    ordered = sorted(set(ids))
    out = {}
    for i, full in enumerate(ordered):
        common = 0
        for j in (i - 1, i + 1):  # in sorted order the longest shared prefix is a neighbour's
            if 0 <= j < len(ordered):
                common = max(common, _shared(full, ordered[j]))
        out[full] = full[: max(minimum, common + 1)]
    return out


def _shared(a: str, b: str) -> int:
    """The length of the prefix ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    return next((k for k in range(n) if a[k] != b[k]), n)


def lifecycle_marker(r: Record) -> str:
    """A short marker for records that are not plainly open and sound."""
    return "".join(f" [{m}]" for m in record_markers(r))


def pad(text: str, columns: int) -> str:
    """``text`` padded with spaces to ``columns`` terminal columns (a wide character is two)."""
    return text + " " * max(0, columns - display_width(text))


def format_record(r: Record) -> str:
    rows = r.to_dict()
    width = max(len(k) for k in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows.items())


def print_record_line(r: Record, *, agent: bool = False) -> None:
    """One record on one line: id, ``occurred_at``, (agent,) kind, lifecycle markers, text."""
    who = f"{r.agent} " if agent else ""
    when = short_time(r.occurred_at)
    print(f"{r.id}  {when}  [{who}{r.kind.value}]{lifecycle_marker(r)}  {r.text}")


def format_event(e: Event) -> str:
    """One event on one line: id, when, kind, text and scope."""
    scope = f"  ({e.scope})" if e.scope else ""
    return f"{e.id}  {short_time(e.occurred_at)}  [{e.kind.value}] {e.text}{scope}"


def format_link(link: Link, texts: Mapping[str, str]) -> str:
    """``cause -> effect  weight (provenance)``, then the two events' texts."""
    return (
        f"{link.cause} -> {link.effect}  weight {link.weight:g}  ({link.provenance.value})\n"
        f"    {texts.get(link.cause, '?')}  ->  {texts.get(link.effect, '?')}"
    )
