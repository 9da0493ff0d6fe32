"""Stable, time-sortable ids.

An id is 26 Crockford base-32 characters: 12 for the instant (microseconds since 0001-01-01 UTC, so
simulated pasts and far futures both fit) and 14 random (70 bits). Ids of one process are strictly
increasing when their instants are; ids never change, including across export and import.
"""

from __future__ import annotations

import secrets
import threading
from datetime import UTC, datetime, timedelta

from chronomem.clock import require_aware

__all__ = ["IdFactory", "id_instant"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
_TIME_CHARS = 12
_RANDOM_CHARS = 14
_RANDOM_BITS = 5 * _RANDOM_CHARS
_ORIGIN = datetime(1, 1, 1, tzinfo=UTC)


def _encode(value: int, width: int) -> str:
    chars = []
    for _ in range(width):
        value, digit = divmod(value, 32)
        chars.append(_ALPHABET[digit])
    return "".join(reversed(chars))


def _micros_since_origin(instant: datetime) -> int:
    delta = require_aware(instant) - _ORIGIN
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class IdFactory:
    """Makes ids; monotonic within one instant (the random part is incremented)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_time = -1
        self._last_random = 0

    def new_id(self, instant: datetime) -> str:
        """A new id whose time part is ``instant``."""
        micros = _micros_since_origin(instant)
        with self._lock:
            if micros == self._last_time:
                rand = (self._last_random + 1) % (1 << _RANDOM_BITS)
            else:
                rand = secrets.randbits(_RANDOM_BITS - 1)  # headroom for increments
            self._last_time, self._last_random = micros, rand
        return _encode(micros, _TIME_CHARS) + _encode(rand, _RANDOM_CHARS)


def id_instant(record_id: str) -> datetime:
    """The instant encoded in an id (to the microsecond)."""
    micros = 0
    for char in record_id[:_TIME_CHARS]:
        micros = micros * 32 + _DECODE[char]
    return _ORIGIN + timedelta(microseconds=micros)
