"""A parsed filter (``model/filter.py``) as a mask over the loaded agents' rows: one vectorised
pass per condition, before anything is scored (DESIGN §2 step 1), so a narrow filter narrows what
a read computes and never empties a top-N after the fact.

Conditions on the scoring columns (kind, sensitivity, status, importance, the instants, speaker,
domain and event ids) compare arrays. Conditions on tags and metadata test each row's parsed value
once and keep the result as a column of the agent's arrays (``AgentArrays.column``): kept across
writes (a new row is tested when it arrives) and removals, so a filter asked for again costs an
array lookup.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import reduce
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import Mask
from chronomem.clock import to_micros
from chronomem.model.filter import AllOf, AnyOf, Condition, Filter, Not
from chronomem.model.record import Kind
from chronomem.retrieval.codes import KIND_CODES, SENSITIVITY_CODES, STATUS_CODES, domain_key
from chronomem.retrieval.columns import Columns
from chronomem.retrieval.index import AgentArrays
from chronomem.stores.base import NEVER, SINCE_EVER
from chronomem.text import event_key

__all__ = ["filter_mask"]

_OPEN = STATUS_CODES["open"]
# The instants whose open end is stored as a sentinel (an absent value), and which sentinel.
_OPEN_ENDS = {"last_verified_at": SINCE_EVER, "valid_from": SINCE_EVER, "valid_until": NEVER}
_MISSING = object()


def filter_mask(cols: Columns, f: Filter, *, as_of_us: int) -> Mask:
    """The rows of ``cols`` that ``f`` selects, at the read's instant (for ``status``)."""
    parts = [_mask(a, f, as_of_us) for a in cols.arrays]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _mask(a: AgentArrays, f: Filter, at: int) -> Mask:
    if isinstance(f, AllOf):
        return reduce(np.logical_and, (_mask(a, p, at) for p in f.parts))
    if isinstance(f, AnyOf):
        return reduce(np.logical_or, (_mask(a, p, at) for p in f.parts))
    if isinstance(f, Not):
        return ~_mask(a, f.part, at)
    return _condition(a, f, at)


def _condition(a: AgentArrays, c: Condition, at: int) -> Mask:
    n = a.n
    field, op, value = c.field, c.op, c.value
    if field == "agent":
        return np.full(n, _test(a.agent, op, value), dtype=np.bool_)
    if field == "id":
        return _by_id(a, op, value)
    if field == "kind":
        return _codes(a.kind[:n], op, value, {k.value: v for k, v in KIND_CODES.items()})
    if field == "sensitivity":
        return _codes(a.sensitivity[:n], op, value, SENSITIVITY_CODES)
    if field == "status":
        state = np.where(a.superseded_at[:n] <= at, a.state[:n], _OPEN)
        return _codes(state, op, value, STATUS_CODES)
    if field in ("importance", "feedback_score"):
        return _ordered(getattr(a, field)[:n], op, value)
    if field in ("occurred_at", "recorded_at", "last_accessed_at", *_OPEN_ENDS):
        return _instants(a, field, op, value)
    if field == "speaker":
        return _coded(*a.speakers(), op, _folded(value))
    if field == "session":
        return _coded(*a.sessions(), op, value)
    if field in ("domain", "event_id") and op in ("$eq", "$ne", "$in", "$nin", "$exists"):
        keys = a.domain_keys() if field == "domain" else a.event_keys()
        return _hashed(keys, op, value, domain_key if field == "domain" else _event_key)
    if field == "metadata" and op in ("$eq", "$ne", "$in", "$nin", "$exists"):
        encoded = _encoded(a, c)
        if encoded is not None:
            return encoded
    # tags, metadata, and substrings of a domain or an event id: tested row by row, kept
    key = ("filter", c.name, op, _typed(value))
    return a.column(key, lambda arrays, start: _tested(arrays, c, start))


# -- metadata values as codes ------------------------------------------------------------------
_ABSENT, _NOT_SCALAR = -1, -2


def _scalar_key(value: Any) -> tuple[Any, ...] | None:
    """A JSON scalar's identity: numbers equal across int and float, booleans apart from them;
    ``None`` for a value that is not a scalar (a list, an object)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, str):
        return ("string", value)
    return None


def _encoded(a: AgentArrays, c: Condition) -> Mask | None:
    """An equality, membership or presence test on a metadata path whose values are all
    scalars, as a comparison of codes: each path's values are coded once per agent (a column
    kept like the filters' own, its vocabulary only growing), so a filter on another value of
    the same path — another user, another thread — costs an array comparison, not a pass over
    the rows. ``None`` when the path holds lists or objects (their rule is MongoDB's: tested row
    by row)."""
    vocabulary = a.vocabularies.setdefault(c.path, {})

    def codes_from(arrays: AgentArrays, start: int) -> npt.NDArray[np.int32]:
        out = np.empty(arrays.n - start, dtype=np.int32)
        for i, value in enumerate(_values(arrays, c, start)):
            if value is _MISSING:
                out[i] = _ABSENT
            elif (key := _scalar_key(value)) is None:
                out[i] = _NOT_SCALAR
            else:
                out[i] = vocabulary.setdefault(key, len(vocabulary))
        return out

    codes = a.column(("codes", c.path), codes_from)
    if np.any(codes == _NOT_SCALAR):
        return None
    if c.op == "$exists":
        present: Mask = (codes != _ABSENT) == c.value
        return present
    wanted = c.value if c.op in ("$in", "$nin") else (c.value,)
    if any(isinstance(w, tuple) for w in wanted):  # a whole list: equal to no scalar
        chosen: list[int] = []
    else:
        chosen = [vocabulary[k] for w in wanted if (k := _scalar_key(w)) in vocabulary]
    found = np.isin(codes, chosen)
    if None in wanted:
        found |= codes == _ABSENT  # absent equals None
    return found if c.op in ("$eq", "$in") else ~found


def _typed(value: Any) -> Any:
    """``value`` with each part's type, so conditions that differ only in True and 1 (equal in
    Python, not in JSON) keep separate columns."""
    if isinstance(value, tuple):
        return tuple(_typed(v) for v in value)
    return (type(value).__name__, value)


def _test(have: Any, op: str, value: Any) -> bool:
    """One optional string (an agent, a domain, a speaker) against a condition."""
    if op == "$exists":
        return (have is not None) is value
    if op == "$eq":
        return bool(have == value)
    if op == "$ne":
        return bool(have != value)
    if op == "$in":
        return have in value
    if op == "$nin":
        return have not in value
    return have is not None and value in have  # $contains


def _codes(codes: npt.NDArray[Any], op: str, value: Any, table: dict[str, int]) -> Mask:
    if op in ("$in", "$nin"):
        found = np.isin(codes, [table[v] for v in value])
        return found if op == "$in" else ~found
    equal: Mask = codes == table[value]
    return equal if op == "$eq" else ~equal


def _ordered(values: npt.NDArray[Any], op: str, value: Any) -> Mask:
    if op in ("$in", "$nin"):
        found = np.isin(values, list(value))
        return found if op == "$in" else ~found
    compare: dict[str, Callable[[Any, Any], Mask]] = {
        "$eq": np.equal, "$ne": np.not_equal, "$lt": np.less, "$lte": np.less_equal,
        "$gt": np.greater, "$gte": np.greater_equal,
    }  # fmt: skip
    return compare[op](values, value)


def _instants(a: AgentArrays, field: str, op: str, value: Any) -> Mask:
    values = getattr(a, field)[: a.n]
    absent = _OPEN_ENDS.get(field)
    if op == "$exists":
        return np.full(a.n, value) if absent is None else (values != absent) == value
    if value is None:  # $eq / $ne None: absent
        none: Mask = np.zeros(a.n, np.bool_) if absent is None else values == absent
        return none if op == "$eq" else ~none
    if op in ("$in", "$nin"):
        return _ordered(values, op, [_micros(v, absent) for v in value])
    return _ordered(values, op, _micros(value, absent))


def _micros(value: datetime | None, absent: int | None) -> int:
    if value is None:
        return NEVER if absent is None else absent
    return to_micros(value)


def _coded(codes: npt.NDArray[np.int32], names: list[str], op: str, value: Any) -> Mask:
    """A column of codes into names (-1: none): who says a record as reads see it (its
    ``speaker``, or the name of a transcript or prose line, case-folded), its session."""
    if op == "$exists":
        exists: Mask = (codes >= 0) == value
        return exists
    if op == "$contains":
        return np.isin(codes, [i for i, name in enumerate(names) if value in name])
    wanted = (value,) if op in ("$eq", "$ne") else value  # $in / $nin: a tuple
    chosen = [i for i, name in enumerate(names) if name in wanted]
    found = np.isin(codes, chosen)
    if None in wanted:  # None: a record naming none
        found |= codes < 0
    return found if op in ("$eq", "$in") else ~found


def _by_id(a: AgentArrays, op: str, value: Any) -> Mask:
    """Records by id: the named rows found through the arrays' position index (every record
    has an id; none is ``None``)."""
    if op == "$exists":
        return np.full(a.n, bool(value), dtype=np.bool_)
    if op == "$contains":
        return np.char.find(a.ids[: a.n], value) >= 0
    wanted = (value,) if op in ("$eq", "$ne") else value
    found = np.zeros(a.n, dtype=np.bool_)
    found[[a.position[i] for i in wanted if isinstance(i, str) and i in a.position]] = True
    return found if op in ("$eq", "$in") else ~found


def _folded(value: Any) -> Any:
    if isinstance(value, tuple):
        return tuple(_folded(v) for v in value)
    return value.casefold() if isinstance(value, str) else value


def _event_key(event_id: str | None) -> int:
    return 0 if event_id is None else event_key(event_id)


def _hashed(keys: npt.NDArray[np.int64], op: str, value: Any, key: Callable[[Any], int]) -> Mask:
    if op == "$exists":
        exists: Mask = (keys != 0) == value
        return exists
    if op in ("$in", "$nin"):
        found = np.isin(keys, [key(v) for v in value])
        return found if op == "$in" else ~found
    equal: Mask = keys == key(value)
    return equal if op == "$eq" else ~equal


# -- tested row by row ------------------------------------------------------------------------
def _tested(a: AgentArrays, c: Condition, start: int) -> Mask:
    values = _values(a, c, start)
    match = _matcher(c)
    return np.fromiter((match(v) for v in values), dtype=np.bool_, count=a.n - start)


def _values(a: AgentArrays, c: Condition, start: int) -> Iterable[Any]:
    if c.field in ("domain", "event_id"):
        column = a.domains if c.field == "domain" else a.event_ids
        return column[start : a.n]
    if c.field == "tags":
        return a.column(("parsed", "tags"), _parsed_tags)[start:]
    parsed = a.column(("parsed", "metadata"), _parsed_metadata)[start:]
    if not c.path:
        return parsed
    return (_at(value, c.path) for value in parsed)


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        value = value.get(step, _MISSING) if isinstance(value, dict) else _MISSING
    return value


def _objects(values: list[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _parsed_tags(a: AgentArrays, start: int) -> npt.NDArray[np.object_]:
    """Each row's tags as a tuple, parsed once (a column kept like the filters' own)."""
    return _objects([() if t is None else tuple(json.loads(t)) for t in a.tags[start : a.n]])


def _parsed_metadata(a: AgentArrays, start: int) -> npt.NDArray[np.object_]:
    """Each row's metadata as a mapping (absent: none), parsed once."""
    return _objects([_MISSING if m is None else json.loads(m) for m in a.metadata[start : a.n]])


def _matcher(c: Condition) -> Callable[[Any], bool]:
    op, x = c.op, c.value
    if op == "$exists":
        return lambda v: (v is not _MISSING and v != ()) == x
    if op == "$eq":
        return lambda v: _equal(v, x)
    if op == "$ne":
        return lambda v: not _equal(v, x)
    if op == "$in":
        return lambda v: any(_equal(v, item) for item in x)
    if op == "$nin":
        return lambda v: not any(_equal(v, item) for item in x)
    if op == "$contains":
        return lambda v: (
            (isinstance(v, str) and isinstance(x, str) and x in v)
            or (isinstance(v, list | tuple) and any(_same(e, x) for e in v))
        )
    return lambda v: _ordered_value(v, op, x)


def _equal(v: Any, x: Any) -> bool:
    """JSON equality, with a list equal to a scalar it holds (MongoDB's rule) and absent equal
    to ``None``."""
    if x is None:
        return v is _MISSING or v is None or v == ()  # () : a record without tags
    if isinstance(x, tuple):
        return isinstance(v, list | tuple) and len(v) == len(x) and all(map(_same, v, x))
    if isinstance(v, list | tuple):
        return any(_same(e, x) for e in v)
    return _same(v, x)


def _same(v: Any, x: Any) -> bool:
    if isinstance(v, bool) or isinstance(x, bool):
        return type(v) is type(x) and v == x
    if isinstance(v, int | float) and isinstance(x, int | float):
        return bool(v == x)
    return type(v) is type(x) and v == x


def _ordered_value(v: Any, op: str, x: Any) -> bool:
    if isinstance(x, datetime):
        x = x.isoformat()
    numbers = (
        isinstance(v, int | float)
        and not isinstance(v, bool)
        and isinstance(x, int | float)
        and not isinstance(x, bool)
    )
    if not numbers and not (isinstance(v, str) and isinstance(x, str)):
        return False
    if op == "$lt":
        return bool(v < x)
    if op == "$lte":
        return bool(v <= x)
    if op == "$gt":
        return bool(v > x)
    return bool(v >= x)


def kinds_named(f: Filter | None) -> frozenset[Kind] | None:
    """The kinds ``f`` requires outright (a ``kind`` equality or ``$in`` ANDed at the top, at
    any depth of ANDs), so a read asking for core blocks through its filter is not refused them
    by the default exclusion."""
    if isinstance(f, AllOf):
        for part in f.parts:
            if (named := kinds_named(part)) is not None:
                return named
        return None
    if isinstance(f, Condition) and f.field == "kind" and f.op in ("$eq", "$in"):
        values = (f.value,) if f.op == "$eq" else f.value
        return frozenset(Kind(v) for v in values)
    return None
