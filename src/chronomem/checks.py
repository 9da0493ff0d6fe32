"""Argument checks shared by every edge that takes input: the engine's verbs, read options, the
archive reader and the importers. Each returns the value in its normal form or raises
:class:`~chronomem.errors.InvalidInputError` naming the field.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from chronomem.clock import require_aware
from chronomem.errors import InvalidInputError

__all__ = [
    "metadata_dict",
    "number_in",
    "optional_instant",
    "optional_text",
    "record_items",
    "parse_instant",
    "positive_int",
    "require_id",
    "require_text",
    "string_tuple",
    "to_enum",
]

_E = TypeVar("_E", bound=Enum)
#: chronomem ids: 26 characters of Crockford's base 32 (``chronomem.model.ids``).
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def require_text(value: object, name: str) -> str:
    """A non-empty (not only whitespace) string."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return value


def optional_text(value: object, name: str) -> str | None:
    """``None`` or a non-empty string."""
    return None if value is None else require_text(value, name)


def require_id(value: object, name: str = "id") -> str:
    """A chronomem id (26 characters of Crockford's base 32)."""
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise InvalidInputError(
            f"{name} must be a 26-character chronomem id; got {value!r}", field=name
        )
    return value


def optional_instant(value: object, name: str) -> datetime | None:
    """``None`` or an aware datetime (as UTC)."""
    return None if value is None else require_aware(value, name)


def parse_instant(value: object, name: str) -> datetime:
    """An aware instant from ISO 8601 text with an offset (or an aware datetime)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInputError(
                f"{name} is not an ISO 8601 instant: {value!r}", field=name
            ) from None
    return require_aware(value, name)


def number_in(
    value: object, name: str, low: float, high: float, *, low_open: bool = False, what: str = ""
) -> float:
    """A finite real number in ``[low, high]`` (``(low, high]`` with ``low_open``); booleans
    are not numbers. ``what`` replaces the range in the message (e.g. "1 (mundane) to 10")."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not (low < value if low_open else low <= value)
        or not value <= high
    ):
        bracket = "(" if low_open else "["
        span = what or f"in {bracket}{low:g}, {high:g}]"
        raise InvalidInputError(f"{name} must be a number {span}; got {value!r}", field=name)
    return float(value)


def positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """An ``int`` of at least ``minimum`` (1: a positive integer; not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
        raise InvalidInputError(f"{name} must be {what}; got {value!r}", field=name)
    return value


def to_enum(enum: type[_E], value: object, name: str) -> _E:
    """A member of ``enum`` from itself or its value."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(e.value) for e in enum)
        raise InvalidInputError(
            f"{name} must be one of {choices}; got {value!r}", field=name
        ) from None


def string_tuple(value: object, name: str) -> tuple[str, ...]:
    """A list of non-empty strings (a lone string is refused: it is a common slip)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    items = tuple(value)
    if not all(isinstance(v, str) and v.strip() for v in items):
        raise InvalidInputError(f"{name} must contain only non-empty strings", field=name)
    return items


def metadata_dict(value: object, name: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable mapping (``None`` is an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping", field=name)
    metadata = dict(value)
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be JSON-serialisable: {exc}", field=name) from None
    return metadata


def record_items(items: Iterable[object]) -> list[dict[str, Any]]:
    """A batch of new records: each item a text (``{"text": item}``) or a mapping of
    ``remember``'s fields (copied), in order."""
    out = []
    for position, item in enumerate(items):
        if isinstance(item, str):
            out.append({"text": item})
        elif isinstance(item, Mapping):
            out.append(dict(item))
        else:
            raise InvalidInputError(
                f"item {position}: each item must be a text or a mapping of remember fields; "
                f"got {type(item).__name__}",
                field="items",
            )
    return out
