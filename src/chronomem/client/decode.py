"""JSON answers back into the engine's own types, without pydantic: a command run through
``--server`` starts in a fraction of the time (importing pydantic's validators costs more than
the request). The types are the engine's frozen dataclasses, enums, instants, durations and
containers of them; anything else is a bug in a call's declared type, reported as such.

Instants come back in :data:`datetime.UTC` and durations from either ISO 8601 (``P1DT2H``, what
the service sends) or seconds, so a value read from the service equals the engine's in every
respect, ``repr`` included.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from typing import Any

from chronomem.errors import ChronomemError

__all__ = ["AnswerError", "decode", "iso_duration", "reader"]

# ISO 8601 durations as pydantic (the service) writes and reads them: a year is 365 days, a
# month 30 days.
_DURATION = re.compile(
    r"(?P<sign>-)?P(?:(?P<years>\d+(?:\.\d+)?)Y)?(?:(?P<months>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<weeks>\d+(?:\.\d+)?)W)?(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?"
)


class AnswerError(ChronomemError):
    """The service's answer does not have the declared shape (another version of chronomem?)."""


def reader(kind: Any) -> Callable[[bytes], Any]:
    """The function that reads a body of JSON as ``kind``."""
    convert = _converter(kind)
    return lambda content: convert(json.loads(content))


def decode(kind: Any, value: Any) -> Any:
    """``value`` (decoded JSON) as ``kind``."""
    return _converter(kind)(value)


@cache
def _converter(kind: Any) -> Callable[[Any], Any]:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return lambda v: v
    if origin in (typing.Union, types.UnionType):
        return _union(args)
    if origin is tuple and len(args) > 1 and args[1] is not Ellipsis:
        each = [_converter(a) for a in args]
        return lambda v: tuple(c(x) for c, x in zip(each, _expect(v, list, kind), strict=True))
    if origin in (list, Sequence, tuple, frozenset, set):
        item = _converter(args[0]) if args else _converter(Any)
        build: Callable[[Any], Any] = list if origin in (list, Sequence) else origin
        return lambda v: build(item(x) for x in _expect(v, list, kind))
    if origin in (dict, Mapping):
        key, val = (_converter(a) for a in args) if args else (str, _converter(Any))
        return lambda v: {key(k): val(x) for k, x in _expect(v, dict, kind).items()}
    if origin is typing.Literal:
        return lambda v: v if v in args else _wrong(v, kind)
    if kind is datetime:
        return _instant
    if kind is timedelta:
        return _duration
    if isinstance(kind, type) and issubclass(kind, Enum):
        return lambda v: _enum(kind, v)
    if kind is float:
        return lambda v: float(_expect(v, int | float, kind))
    if kind in (int, str, bool):
        return lambda v: _expect(v, kind, kind)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _dataclass(kind)
    raise TypeError(f"the client cannot read {kind!r}")


def _union(args: tuple[Any, ...]) -> Callable[[Any], Any]:
    optional = type(None) in args
    rest = [a for a in args if a is not type(None)]
    if len(rest) != 1:  # e.g. str | float: JSON's own types carry the choice
        return lambda v: v
    inner = _converter(rest[0])
    return lambda v: None if v is None and optional else inner(v)


def _dataclass(kind: type) -> Callable[[Any], Any]:
    hints = typing.get_type_hints(kind)
    wanted = [f.name for f in dataclasses.fields(kind) if f.init]
    fields: list[tuple[str, Callable[[Any], Any]]] | None = None  # on first use: types may nest

    def build(value: Any) -> Any:
        nonlocal fields
        body = _expect(value, dict, kind)
        if fields is None:  # built whole, then published in one step: threads share the reader
            fields = [(n, _converter(hints[n])) for n in wanted]
        try:
            return kind(**{n: convert(body[n]) for n, convert in fields if n in body})
        except TypeError as exc:  # a required field missing
            raise AnswerError(f"the service's {kind.__name__} is incomplete: {exc}") from None

    return build


def _enum(kind: type[Enum], value: Any) -> Enum:
    try:
        return kind(value)
    except ValueError:
        return _wrong(value, kind)  # type: ignore[no-any-return]


def _instant(value: Any) -> datetime:
    text = _expect(value, str, datetime)
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return _wrong(value, datetime)  # type: ignore[no-any-return]


def _duration(value: Any) -> timedelta:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    match = _DURATION.fullmatch(_expect(value, str, timedelta))
    if match is None or match.group(0) in ("P", "-P"):
        raise AnswerError(f"the service answered {value!r:.80} where a duration was expected")
    parts = {k: float(v) for k, v in match.groupdict().items() if v and k != "sign"}
    days = parts.pop("years", 0) * 365 + parts.pop("months", 0) * 30 + parts.pop("days", 0)
    span = timedelta(days=days, **parts)
    return -span if match.group("sign") else span


def iso_duration(span: timedelta) -> str:
    """``span`` as ISO 8601 (``P1DT3600.000000S``), what the service reads."""
    sign, span = ("-", -span) if span < timedelta(0) else ("", span)
    return f"{sign}P{span.days}DT{span.seconds}.{span.microseconds:06d}S"


def _expect(value: Any, shape: Any, kind: Any) -> Any:
    if not isinstance(value, shape) or (shape is not bool and isinstance(value, bool)):
        _wrong(value, kind)
    return value


def _wrong(value: Any, kind: Any) -> Any:
    raise AnswerError(f"the service answered {value!r:.80} where {kind!r} was expected")
