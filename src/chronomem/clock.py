"""Instants and clocks.

Every instant at the API is a timezone-aware ``datetime``; chronomem converts it to UTC and rejects
naive values (DESIGN §1). Internally instants are integer microseconds since the Unix epoch, which
round-trips exactly through SQLite and numpy.

The engine asks its :class:`Clock` for "now" once per call; scoring and lifecycle functions take
``as_of`` as an argument and never read a clock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from chronomem.errors import InvalidInputError

__all__ = [
    "EPOCH",
    "Clock",
    "SimClock",
    "SystemClock",
    "Ticks",
    "from_micros",
    "require_aware",
    "to_micros",
]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICRO = timedelta(microseconds=1)


def require_aware(value: object, name: str = "instant") -> datetime:
    """Return ``value`` as an aware UTC datetime, or raise :class:`InvalidInputError`.

    Args:
        value: the instant to check.
        name: the argument's name, used in the error message.
    """
    if not isinstance(value, datetime):
        raise InvalidInputError(
            f"{name} must be a timezone-aware datetime, got {type(value).__name__}", field=name
        )
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InvalidInputError(
            f"{name} is a naive datetime ({value.isoformat()}); chronomem needs aware instants, "
            f"e.g. datetime(..., tzinfo=timezone.utc)",
            field=name,
        )
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise InvalidInputError(
            f"{name} ({value.isoformat()}) is outside the range of UTC instants", field=name
        ) from None


def to_micros(value: datetime) -> int:
    """Microseconds since the Unix epoch for an aware datetime (exact, integer arithmetic)."""
    return (require_aware(value) - EPOCH) // _ONE_MICRO


def from_micros(micros: int) -> datetime:
    """The aware UTC datetime ``micros`` microseconds after the Unix epoch."""
    return EPOCH + timedelta(microseconds=int(micros))


@runtime_checkable
class Clock(Protocol):
    """Something that tells the current instant."""

    def now(self) -> datetime:
        """The current instant, aware UTC."""
        ...


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class SimClock:
    """A clock the caller controls, for simulations and tests.

    Example:
        >>> clock = SimClock(datetime(2023, 2, 13, 8, tzinfo=UTC))
        >>> clock.advance(hours=2).isoformat()
        '2023-02-13T10:00:00+00:00'
    """

    def __init__(self, start: datetime) -> None:
        self._now = require_aware(start, "start")
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._now

    def set(self, instant: datetime) -> datetime:
        """Jump to ``instant`` (forwards or backwards) and return it."""
        value = require_aware(instant, "instant")
        with self._lock:
            self._now = value
        return value

    def advance(
        self,
        delta: timedelta | None = None,
        *,
        days: float = 0,
        hours: float = 0,
        minutes: float = 0,
        seconds: float = 0,
        microseconds: float = 0,
    ) -> datetime:
        """Move forward by ``delta`` (or the keyword amounts) and return the new instant."""
        step = (delta or timedelta()) + timedelta(
            days=days, hours=hours, minutes=minutes, seconds=seconds, microseconds=microseconds
        )
        if step < timedelta():
            raise InvalidInputError(
                "SimClock.advance() only moves forward; use set()", field="delta"
            )
        with self._lock:
            self._now = self._now + step
            return self._now

    def __repr__(self) -> str:
        return f"SimClock({self._now.isoformat()})"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ticks:
    """Maps integer simulation ticks to instants: tick ``n`` is ``start + n * step``.

    Example:
        >>> ticks = Ticks(start=datetime(2024, 1, 1, tzinfo=UTC), step=timedelta(hours=1))
        >>> ticks.instant(3).hour
        3
        >>> ticks.tick(ticks.instant(42))
        42
    """

    start: datetime
    step: timedelta = timedelta(hours=1)

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", require_aware(self.start, "start"))
        if self.step <= timedelta():
            raise InvalidInputError("Ticks.step must be positive", field="step")

    def instant(self, tick: int) -> datetime:
        """The instant of ``tick`` (ticks may be negative: before ``start``)."""
        return self.start + self.step * int(tick)

    def tick(self, instant: datetime) -> int:
        """The tick containing ``instant`` (floor)."""
        return (require_aware(instant) - self.start) // self.step
