"""LangGraph's store filter: its exact meaning (:func:`matches`, as LangGraph's stores apply
it) and the chronomem filter that narrows a read to a superset of it before scoring
(:func:`narrowing`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["matches", "narrowing"]


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter, as its stores apply it: every field equals its condition (nested
    mappings field by field, lists element by element), or satisfies ``{"$eq" | "$ne" | "$gt" |
    "$gte" | "$lt" | "$lte": x, ...}``. A field name with periods that is not a key of the value
    is a path into nested mappings (``"user.name"``), as LangGraph's SQL stores read it. An
    ordering comparison with a value that is not a number is false rather than an error."""
    return all(_compare(_field(value, name), wanted) for name, wanted in (conditions or {}).items())


def narrowing(conditions: Mapping[str, Any] | None) -> dict[str, Any]:
    """chronomem's filter (docs/filters.md) selecting at least every item :func:`matches`
    keeps, so the engine narrows a read before scoring it; :func:`matches` then decides
    exactly. Items only (records with a key); each condition whose LangGraph meaning chronomem's
    grammar holds as a superset: scalars (a boolean or 0 and 1 as JSON's equal numbers too),
    nested mappings as paths, ``$gt`` / ``$gte`` / ``$lt`` / ``$lte`` with a number (strings and
    booleans kept: LangGraph compares them as the numbers they parse to). Lists, ``$ne`` and
    dotted names (a key or a path, depending on the value) narrow nothing."""
    parts: list[dict[str, Any]] = [{"metadata.key": {"$exists": True}}]
    for name, wanted in (conditions or {}).items():
        parts.extend(_narrow(("value", name), wanted))
    return {"$and": parts}


def _narrow(path: tuple[str, ...], wanted: Any) -> list[dict[str, Any]]:
    if any(not step or "." in step or step.startswith("$") for step in path):
        return []
    field = ".".join(("metadata", *path))
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return [c for op, x in wanted.items() for c in _narrow_operator(field, op, x)]
        return [c for k, v in wanted.items() for c in _narrow((*path, str(k)), v)]
    return _narrow_operator(field, "$eq", wanted)


def _narrow_operator(field: str, op: str, x: Any) -> list[dict[str, Any]]:
    if op == "$eq":
        if x is None or isinstance(x, str):
            return [{field: x}]
        if isinstance(x, bool | int | float) and abs(x) < 2**53:  # JSON: true == 1 == 1.0
            same: list[Any] = [x] if x not in (0, 1) else [bool(x), int(x), float(x)]
            return [{field: {"$in": same}}]
        return []
    if op in ("$gt", "$gte", "$lt", "$lte") and not isinstance(x, bool):
        try:
            number = float(x)
        except (TypeError, ValueError, OverflowError):
            return []
        if abs(number) >= 2.0**53:  # LangGraph compares as floats; exact integers differ there
            return []
        return [
            {"$or": [{field: {op: number}}, {field: {"$gte": ""}}, {field: {"$in": [True, False]}}]}
        ]
    return []


def _field(value: Mapping[str, Any], name: str) -> Any:
    if name in value or "." not in name:
        return value.get(name)
    found: Any = value
    for part in name.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _compare(have: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(k).startswith("$") for k in wanted):
            return all(_operator(have, op, x) for op, x in wanted.items())
        return isinstance(have, Mapping) and all(
            _compare(have.get(k), v) for k, v in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(wanted)
            and all(_compare(h, w) for h, w in zip(have, wanted, strict=True))
        )
    return bool(have == wanted)


def _operator(have: Any, op: str, x: Any) -> bool:
    if op == "$eq":
        return bool(have == x)
    if op == "$ne":
        return bool(have != x)
    if op not in ("$gt", "$gte", "$lt", "$lte"):
        raise ValueError(f"unsupported filter operator {op!r} (use $eq, $ne, $gt, $gte, $lt, $lte)")
    try:
        a, b = float(have), float(x)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
