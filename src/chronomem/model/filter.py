"""The filter grammar of reads, listings and bulk changes (docs/filters.md): which records a call
may see, as a small tree parsed once from JSON-shaped data.

``{"kind": "fact"}``, ``{"tags": {"$contains": "billing"}}``,
``{"metadata.user": {"$in": ["ana", "ben"]}}``, ``{"$or": [{...}, {...}]}``, ``{"$not": {...}}``.
A mapping of several fields is their AND. Operators: ``$eq $ne $lt $lte $gt $gte $in $nin
$contains $exists``; a bare value is ``$eq`` (``None``: the field is absent). A list-valued field
(``tags``, a metadata list) matches ``$eq`` / ``$in`` when any element does, ``$ne`` / ``$nin``
when none does (MongoDB's rule), and ``$contains`` tests membership; on a string ``$contains`` is a
substring test. Open ends compare as infinities: a record valid ``until`` nobody knows when is
valid after any instant.

Parsing checks every part against the field it names, so a bad filter is an
:class:`~chronomem.errors.InvalidInputError` whose ``field`` is the path of the bad part
(``filter.$or[1].importance.$gt``); nothing is read. Evaluation is elsewhere: vectorised masks
over the in-memory arrays (``retrieval/filtering.py``). :func:`from_mem0` maps Mem0's spelling
onto this grammar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from chronomem.checks import parse_instant, shown
from chronomem.errors import InvalidInputError
from chronomem.model.record import Kind, Sensitivity, Status

__all__ = [
    "FIELDS",
    "OPERATORS",
    "AllOf",
    "AnyOf",
    "Condition",
    "Filter",
    "FilterSpec",
    "Not",
    "from_mem0",
    "parse_filter",
]


class Shape(StrEnum):
    """What a field holds, which decides the operators it takes and how values are read."""

    TEXT = "text"  # an optional string: eq ne in nin contains exists
    CODE = "code"  # one of an enumeration: eq ne in nin
    NUMBER = "number"  # a float: every comparison, in nin
    INSTANT = "instant"  # an instant (offset required): every comparison
    LIST = "list"  # strings (tags): eq ne in nin contains exists
    ANY = "any"  # a metadata value: whatever JSON holds


_ENUMS: dict[str, type[StrEnum]] = {
    "kind": Kind, "sensitivity": Sensitivity, "status": Status,
}  # fmt: skip

#: The record fields a filter can name (``metadata.<path>`` besides), and what each holds.
#: ``status`` is the lifecycle state at the read's instant (``as_of``), like ``records(status=)``.
FIELDS: dict[str, Shape] = {
    "id": Shape.TEXT, "agent": Shape.TEXT, "kind": Shape.CODE, "domain": Shape.TEXT,
    "tags": Shape.LIST, "speaker": Shape.TEXT, "session": Shape.TEXT, "event_id": Shape.TEXT,
    "sensitivity": Shape.CODE,
    "status": Shape.CODE, "importance": Shape.NUMBER, "feedback_score": Shape.NUMBER,
    "occurred_at": Shape.INSTANT, "recorded_at": Shape.INSTANT,
    "last_accessed_at": Shape.INSTANT, "last_verified_at": Shape.INSTANT,
    "valid_from": Shape.INSTANT, "valid_until": Shape.INSTANT,
}  # fmt: skip

_ORDERED = frozenset({"$lt", "$lte", "$gt", "$gte"})
#: The comparison operators, and the shapes each applies to.
OPERATORS: dict[str, frozenset[Shape]] = {
    "$eq": frozenset(Shape), "$ne": frozenset(Shape),
    **{op: frozenset({Shape.NUMBER, Shape.INSTANT, Shape.ANY}) for op in sorted(_ORDERED)},
    "$in": frozenset(Shape), "$nin": frozenset(Shape),
    "$contains": frozenset({Shape.TEXT, Shape.LIST, Shape.ANY}),
    "$exists": frozenset({Shape.TEXT, Shape.LIST, Shape.ANY, Shape.INSTANT}),
}  # fmt: skip
_LOGICAL = ("$and", "$or", "$not")
#: The most nodes one filter may hold, and how deep it may nest (a request, not a program).
MAX_NODES = 1_000
MAX_DEPTH = 32
_METADATA = "metadata"


@dataclass(frozen=True, slots=True)
class Condition:
    """One comparison: ``field`` (a record field, or ``metadata`` with ``path``) ``op`` ``value``.

    ``value`` is normalised: an enumeration member's string, a float, an instant, a tuple for
    ``$in`` / ``$nin``, a bool for ``$exists``."""

    field: str
    op: str
    value: Any
    path: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return ".".join((self.field, *self.path))

    def fields(self) -> set[str]:
        """The fields this filter names (no values)."""
        return {self.name}

    def to_spec(self) -> dict[str, Any]:
        """The JSON spelling that parses back to this condition."""
        value = self.value
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = [v.isoformat() if isinstance(v, datetime) else v for v in value]
        return {self.name: {self.op: value}}

    def describe(self) -> str:
        value = self.value
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, tuple):
            value = list(value)
        return f"{self.name} {self.op} {value!r}"


@dataclass(frozen=True, slots=True)
class AllOf:
    parts: tuple[Filter, ...]

    def to_spec(self) -> dict[str, Any]:
        return {"$and": [p.to_spec() for p in self.parts]}

    def fields(self) -> set[str]:
        return set().union(*(p.fields() for p in self.parts))

    def describe(self) -> str:
        return " AND ".join(_grouped(p) for p in self.parts)


@dataclass(frozen=True, slots=True)
class AnyOf:
    parts: tuple[Filter, ...]

    def to_spec(self) -> dict[str, Any]:
        return {"$or": [p.to_spec() for p in self.parts]}

    def fields(self) -> set[str]:
        return set().union(*(p.fields() for p in self.parts))

    def describe(self) -> str:
        return " OR ".join(_grouped(p) for p in self.parts)


@dataclass(frozen=True, slots=True)
class Not:
    part: Filter

    def to_spec(self) -> dict[str, Any]:
        return {"$not": self.part.to_spec()}

    def fields(self) -> set[str]:
        return self.part.fields()

    def describe(self) -> str:
        return f"NOT {_grouped(self.part)}"


Filter = Condition | AllOf | AnyOf | Not
#: What callers pass: a parsed filter, or its JSON-shaped spelling.
FilterSpec = Filter | Mapping[str, Any]


def _grouped(part: Filter) -> str:
    return f"({part.describe()})" if isinstance(part, AllOf | AnyOf) else part.describe()


def parse_filter(spec: object, name: str = "filter") -> Filter | None:
    """The parsed filter of ``spec`` (``None`` or ``{}``: no filter; a parsed filter as is).

    Raises:
        InvalidInputError: ``field`` is the path of the first bad part.
    """
    if spec is None or isinstance(spec, Condition | AllOf | AnyOf | Not):
        return spec
    if isinstance(spec, Mapping) and not spec:
        return None
    return _Parser().node(spec, name)


class _Parser:
    def __init__(self) -> None:
        self.nodes = 0

    def _count(self, where: str) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise InvalidInputError(
                f"{where}: a filter holds at most {MAX_NODES} parts", field=where
            )

    def node(self, spec: object, where: str, depth: int = 0) -> Filter:
        if depth > MAX_DEPTH:
            raise InvalidInputError(
                f"{where}: a filter nests at most {MAX_DEPTH} levels deep", field=where
            )
        if not isinstance(spec, Mapping):
            raise InvalidInputError(
                f'{where} must be an object of fields and operators, e.g. {{"kind": "fact"}};'
                f" got {shown(spec)}",
                field=where,
            )
        self._count(where)
        parts: list[Filter] = []
        for key, value in spec.items():
            if not isinstance(key, str):
                raise InvalidInputError(f"{where}: keys must be strings; got {key!r}", field=where)
            at = f"{where}.{key}"
            if key in ("$and", "$or"):
                parts.append(self._group(key, value, at, depth))
            elif key == "$not":
                parts.append(Not(self.node(value, at, depth + 1)))
            elif key.startswith("$"):
                raise InvalidInputError(
                    f"{at}: unknown operator {key!r} here (logical: $and, $or, $not; "
                    f'comparisons go under a field, e.g. {{"importance": {{"$gt": 5}}}})',
                    field=at,
                )
            else:
                parts.extend(self._field(key, value, at))
        if not parts:  # {} below the top, or {"metadata": {}}: no condition at all
            raise InvalidInputError(f"{where} must hold at least one condition", field=where)
        return parts[0] if len(parts) == 1 else AllOf(tuple(parts))

    def _group(self, key: str, value: object, where: str, depth: int) -> Filter:
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
            raise InvalidInputError(f"{where} must be a list of filters", field=where)
        if not value:
            raise InvalidInputError(f"{where} must hold at least one filter", field=where)
        parts = tuple(self.node(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value))
        return AllOf(parts) if key == "$and" else AnyOf(parts)

    def _field(self, key: str, value: object, where: str) -> list[Filter]:
        if key == _METADATA and isinstance(value, Mapping) and not _operators(value):
            return [
                c
                for sub, v in value.items()
                for c in self._field(f"{key}.{sub}", v, f"{where}.{sub}")
            ]
        field, path = _field_of(key, where)
        shape = Shape.ANY if field == _METADATA else FIELDS[field]
        if isinstance(value, Mapping) and _operators(value):
            return [
                self._compare(field, path, shape, op, v, f"{where}.{op}") for op, v in value.items()
            ]
        if isinstance(value, Mapping) and value and field == _METADATA:
            # a nested object without operators: each of its fields under the path (LangGraph)
            out: list[Filter] = []
            for sub, inner in value.items():
                out.extend(self._field(f"{key}.{sub}", inner, f"{where}.{sub}"))
            return out
        return [self._compare(field, path, shape, "$eq", value, where)]

    def _compare(
        self, field: str, path: tuple[str, ...], shape: Shape, op: str, value: object, where: str
    ) -> Condition:
        self._count(where)
        if op not in OPERATORS:
            raise InvalidInputError(
                f"{where}: unknown operator {op!r} (use {', '.join(OPERATORS)})", field=where
            )
        if shape not in OPERATORS[op]:
            raise InvalidInputError(
                f"{where}: {field} ({shape.value}) does not take {op}", field=where
            )
        if op == "$exists":
            if not isinstance(value, bool):
                raise InvalidInputError(f"{where} must be true or false", field=where)
            return Condition(field, op, value, path)
        if op in ("$in", "$nin"):
            if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
                raise InvalidInputError(f"{where} must be a list of values", field=where)
            items = tuple(_value(field, shape, v, f"{where}[{i}]") for i, v in enumerate(value))
            return Condition(field, op, items, path)
        if op == "$contains" and shape is not Shape.ANY and not isinstance(value, str):
            raise InvalidInputError(f"{where} must be a string", field=where)
        checked = _value(field, shape, value, where)
        if op in _ORDERED and (checked is None or isinstance(checked, bool)):
            raise InvalidInputError(
                f"{where} must be a number, an instant or a string", field=where
            )
        return Condition(field, op, checked, path)


def _operators(value: Mapping[Any, Any]) -> bool:
    """Whether ``value`` is a field's operators (``{"$gt": 3}``) rather than a nested object."""
    return bool(value) and all(isinstance(k, str) and k.startswith("$") for k in value)


def _field_of(key: str, where: str) -> tuple[str, tuple[str, ...]]:
    if key == _METADATA or key.startswith(_METADATA + "."):
        path = tuple(key.split(".")[1:])
        if not path or any(not p for p in path):
            raise InvalidInputError(
                f'{where}: name a metadata path, e.g. "metadata.user" or "metadata.a.b"',
                field=where,
            )
        return _METADATA, path
    if key not in FIELDS:
        raise InvalidInputError(
            f"{where}: unknown field {key!r} (fields: {', '.join(FIELDS)}, metadata.<path>)",
            field=where,
        )
    return key, ()


def _value(field: str, shape: Shape, value: object, where: str) -> Any:
    """A comparison's value, checked against the field's shape and normalised."""
    if value is None:
        if shape in (Shape.CODE, Shape.NUMBER):
            raise InvalidInputError(f"{where}: {field} always has a value", field=where)
        return None
    if shape is Shape.CODE:
        enum = _ENUMS[field]
        try:
            return enum(str(value)).value
        except ValueError:
            allowed = ", ".join(m.value for m in enum)
            raise InvalidInputError(
                f"{where}: {shown(value)} is not a {field} (one of {allowed})", field=where
            ) from None
    if shape is Shape.NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidInputError(f"{where} must be a number; got {shown(value)}", field=where)
        return float(value)
    if shape is Shape.INSTANT:
        return parse_instant(value, where)
    listed = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
    if shape is Shape.LIST and listed:  # the whole list: {"tags": ["a", "b"]}
        return tuple(value)  # type: ignore[arg-type]
    if shape in (Shape.TEXT, Shape.LIST):
        if not isinstance(value, str):
            raise InvalidInputError(f"{where} must be a string; got {shown(value)}", field=where)
        return value
    if isinstance(value, str | bool | int | float):  # metadata: JSON scalars (lists for $eq)
        return value
    if isinstance(value, Sequence) and all(isinstance(v, str | bool | int | float) for v in value):
        return tuple(value)
    raise InvalidInputError(
        f"{where} must be a string, number, boolean, null or a list of them; got {shown(value)}",
        field=where,
    )


# -- Mem0's spelling ------------------------------------------------------------------------
_MEM0_LOGICAL = {"AND": "$and", "OR": "$or", "NOT": "$not"}
_MEM0_OPERATORS = {
    "eq": "$eq", "ne": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte",
    "in": "$in", "nin": "$nin", "contains": "$contains",
}  # fmt: skip
# Mem0's entity ids and timestamps, as chronomem names them; any other key is metadata.
_MEM0_FIELDS = {
    "user_id": "agent", "agent_id": "agent", "created_at": "recorded_at",
    "updated_at": "recorded_at", "categories": "tags",
}  # fmt: skip


def from_mem0(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Mem0's filter spelling (``{"AND": [{"user_id": "ana"}, {"created_at": {"gte": ...}}]}``)
    in this grammar: ``AND`` / ``OR`` / ``NOT``, operators without ``$``, ``user_id`` and
    ``agent_id`` as ``agent``, ``created_at`` / ``updated_at`` as ``recorded_at``,
    ``categories`` as ``tags``, any other key as a metadata path, ``*`` (any value) as
    ``$exists``. Several keys are ANDed, never merged (``user_id`` and ``agent_id`` both name
    the agent); ``NOT`` of several conditions negates their AND."""
    parts = [_from_mem0({key: value}) for key, value in spec.items()]
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _from_mem0(spec: Mapping[str, Any]) -> dict[str, Any]:
    """One key of a Mem0 filter in this grammar."""
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key in _MEM0_LOGICAL:
            if key == "NOT":
                items = value if isinstance(value, list) else [value]
                inner = [from_mem0(v) for v in items]
                out["$not"] = inner[0] if len(inner) == 1 else {"$and": inner}
            else:
                out[_MEM0_LOGICAL[key]] = [from_mem0(v) for v in value]
            continue
        name = _MEM0_FIELDS.get(key) or (key if key in FIELDS else f"{_METADATA}.{key}")
        if value == "*":
            out[name] = {"$exists": True}
        elif isinstance(value, Mapping):
            out[name] = {_MEM0_OPERATORS.get(op, op): v for op, v in value.items()}
        else:
            out[name] = value
    return out
