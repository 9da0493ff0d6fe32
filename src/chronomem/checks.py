"""Argument checks shared by every edge that takes input: the engine's verbs, read options, the
archive reader and the importers. Each returns the value in its normal form or raises
:class:`~chronomem.errors.InvalidInputError` naming the field.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from chronomem.clock import require_aware
from chronomem.errors import InvalidInputError

__all__ = [
    "check_text",
    "flag",
    "id_list",
    "metadata_dict",
    "number_in",
    "optional_instant",
    "optional_text",
    "record_items",
    "parse_instant",
    "path_value",
    "positive_duration",
    "positive_int",
    "MAX_ID_CHARS",
    "MAX_METADATA_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_TEXT_CHARS",
    "SHOWN_CHARS",
    "bounded_text",
    "require_chronomem_id",
    "require_id",
    "shown",
    "require_text",
    "string_tuple",
    "to_enum",
]

_E = TypeVar("_E", bound=Enum)
#: chronomem ids: 26 characters of Crockford's base 32 (``chronomem.model.ids``).
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(value: str, name: str) -> str:
    """``value`` when every character can be stored on every store: no NUL (PostgreSQL refuses
    it in text) and no lone surrogate (not encodable as UTF-8). The one text rule of the API
    edge: every string that reaches a store or a model passes here."""
    if "\x00" in value:
        raise InvalidInputError(
            f"{name} must not contain NUL characters (\\x00); got {_preview(value)}", field=name
        )
    if _SURROGATE.search(value):
        raise InvalidInputError(
            f"{name} contains a lone surrogate (not valid Unicode text); got {_preview(value)}",
            field=name,
        )
    return value


def _preview(value: str) -> str:
    return ascii(value if len(value) <= 40 else value[:37] + "...")


#: The most characters of a caller's value an error message quotes.
SHOWN_CHARS = 60
#: The longest id (record, event, proposal, key) any verb accepts: chronomem's are 26.
MAX_ID_CHARS = 128
#: The longest text of a record or an event. A memory is a statement, a turn, a passage: the
#: embedding model reads its first 256 tokens (about 1,000 characters), so much longer texts are
#: found only by their words. Split documents into records (one per paragraph or section).
MAX_TEXT_CHARS = 100_000
#: The longest query.
MAX_QUERY_CHARS = 10_000
#: The largest ``metadata`` of one record or event, as JSON.
MAX_METADATA_CHARS = 1_000_000


def bounded_text(value: object, name: str, limit: int = MAX_TEXT_CHARS) -> str:
    """:func:`require_text` of at most ``limit`` characters."""
    text = require_text(value, name)
    if len(text) > limit:
        raise InvalidInputError(
            f"{name} has {len(text):,} characters; at most {limit:,} are accepted "
            f"(split a long text into several records): {shown(text)}",
            field=name,
        )
    return text


def shown(value: object) -> str:
    """A caller's value as an error message quotes it: its ``repr``, cut to a short prefix with
    the full length said (an error never echoes a large input whole)."""
    text = repr(value)
    if len(text) <= SHOWN_CHARS:
        return text
    size = (
        f"{len(value):,} characters"
        if isinstance(value, str)
        else f"{len(text):,} characters as text"
    )
    return f"{text[: SHOWN_CHARS - 1]}… ({size})"


def require_id(value: object, name: str) -> str:
    """An id argument: a non-empty string of at most :data:`MAX_ID_CHARS` characters (nothing is
    looked up for a longer one: no id is that long)."""
    text = require_text(value, name)
    if len(text) > MAX_ID_CHARS:
        raise InvalidInputError(
            f"{name} is not an id: {shown(text)} (ids are at most {MAX_ID_CHARS} characters)",
            field=name,
        )
    return text


def require_text(value: object, name: str) -> str:
    """A non-empty (not only whitespace) string that passes :func:`check_text`."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return check_text(value, name)


def optional_text(value: object, name: str) -> str | None:
    """``None`` or a non-empty string."""
    return None if value is None else require_text(value, name)


def require_chronomem_id(value: object, name: str = "id") -> str:
    """A chronomem id (26 characters of Crockford's base 32)."""
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise InvalidInputError(
            f"{name} must be a 26-character chronomem id; got {shown(value)}", field=name
        )
    return value


def optional_instant(value: object, name: str) -> datetime | None:
    """``None`` or an aware datetime (as UTC)."""
    return None if value is None else require_aware(value, name)


def parse_instant(value: object, name: str) -> datetime:
    """An aware instant from ISO 8601 text with an offset (or an aware datetime). Text without
    an offset is refused with the same instant spelled two ways that are accepted."""
    if isinstance(value, str):
        text = value
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"{name} is not an ISO 8601 instant: {shown(text)} (e.g. "
                f"2024-01-31T09:00:00Z or 2024-01-31T09:00:00+02:00)",
                field=name,
            ) from None
        if value.tzinfo is None:
            spelled = value.isoformat()
            raise InvalidInputError(
                f"{name} {shown(text)} has no UTC offset (a naive instant); add one, e.g. "
                f"{spelled}Z or {spelled}+02:00",
                field=name,
            )
    return require_aware(value, name)


def number_in(
    value: object, name: str, low: float, high: float, *, low_open: bool = False, what: str = ""
) -> float:
    """A finite real number in ``[low, high]`` (``(low, high]`` with ``low_open``); booleans
    are not numbers. ``what`` replaces the range in the message (e.g. "1 (mundane) to 10")."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (isinstance(value, int) or math.isfinite(value))  # ints are finite (any size)
        or not (low < value if low_open else low <= value)
        or not value <= high
    ):
        bracket = "(" if low_open else "["
        span = what or f"in {bracket}{low:g}, {high:g}]"
        raise InvalidInputError(f"{name} must be a number {span}; got {shown(value)}", field=name)
    try:
        return float(value)
    except OverflowError:
        raise InvalidInputError(f"{name} is too large; got {shown(value)}", field=name) from None


def flag(value: object, name: str) -> bool:
    """``True`` or ``False`` itself (a truthy string or number is a slip, not a choice)."""
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be true or false; got {shown(value)}", field=name)
    return value


def path_value(value: object, name: str = "path") -> str | os.PathLike[str]:
    """A file path: a string or an ``os.PathLike``."""
    if isinstance(value, str) and value and "\x00" not in value:
        return value
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return value
    raise InvalidInputError(f"{name} must be a file path; got {shown(value)}", field=name)


def id_list(value: object, name: str) -> tuple[str, ...]:
    """One id or a non-empty list of them."""
    items = string_tuple([value] if isinstance(value, str) else value, name)
    if not items:
        raise InvalidInputError(f"{name} must name at least one record", field=name)
    return items


def positive_duration(value: object, name: str) -> timedelta:
    """A ``timedelta`` longer than zero."""
    if not isinstance(value, timedelta) or value <= timedelta():
        raise InvalidInputError(
            f"{name} must be a positive timedelta; got {shown(value)}", field=name
        )
    return value


#: The largest integer a store column holds (SQLite's and PostgreSQL's 64-bit integers).
MAX_INT = 2**63 - 1


def positive_int(value: object, name: str, *, minimum: int = 1) -> int:
    """An ``int`` of at least ``minimum`` (1: a positive integer; not a boolean) that a store
    can hold (at most :data:`MAX_INT`)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INT:
        what = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
        raise InvalidInputError(
            f"{name} must be {what} of at most 2**63 - 1; got {value!r:.40}", field=name
        )
    return value


def to_enum(enum: type[_E], value: object, name: str) -> _E:
    """A member of ``enum`` from itself or its value."""
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(str(e.value) for e in enum)
        raise InvalidInputError(
            f"{name} must be one of {choices}; got {shown(value)}", field=name
        ) from None


def string_tuple(value: object, name: str) -> tuple[str, ...]:
    """A list of non-empty strings (a lone string is refused: it is a common slip)."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    items = tuple(value)
    if not all(isinstance(v, str) and v.strip() for v in items):
        raise InvalidInputError(f"{name} must contain only non-empty strings", field=name)
    for item in items:
        check_text(item, name)
    return items


def metadata_dict(value: object, name: str = "metadata") -> dict[str, Any]:
    """A JSON-serialisable mapping (``None`` is an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{name} must be a mapping", field=name)
    metadata = dict(value)
    try:
        encoded = json.dumps(metadata, allow_nan=False)
        _check_strings(metadata, name)
    except (TypeError, ValueError, RecursionError) as exc:
        if isinstance(exc, InvalidInputError):
            raise
        raise InvalidInputError(f"{name} must be JSON-serialisable: {exc}", field=name) from None
    if len(encoded) > MAX_METADATA_CHARS:
        raise InvalidInputError(
            f"{name} is {len(encoded):,} characters as JSON; at most {MAX_METADATA_CHARS:,} are "
            f"accepted",
            field=name,
        )
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
                f"items[{position}] must be a text or a mapping of remember fields; got "
                f"{type(item).__name__}",
                field="items",
            )
    return out


def _check_strings(value: object, name: str) -> None:
    """:func:`check_text` on every key and string inside a JSON value."""
    if isinstance(value, str):
        check_text(value, name)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):  # JSON would turn it into a string, silently
                raise InvalidInputError(
                    f"{name} keys must be strings; got {shown(key)}", field=name
                )
            check_text(key, name)
            _check_strings(item, name)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_strings(item, name)
