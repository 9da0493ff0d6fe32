"""Lifecycle rules (DESIGN §2 step 5, §3): pure functions that decide; the engine applies.

- *Staleness decay* demotes facts and instructions that nobody used or verified for a long time:
  ``max(floor, 0.5 ** (staleness / half_life))`` with ``staleness = as_of - max(last_accessed_at,
  last_verified_at)``. It never reaches zero and never deletes.
- *Feedback* pushes a record down (or up) by a factor ``2 ** (strength * clamp(score, lo, hi))``
  where ``score`` is the sum of the ratings it received (helpful +1, harmful -1).
- *Supersession* closes old records: ``superseded_by``, ``superseded_at`` and
  ``valid_until = min(valid_until, successor's valid_from)``; the replacement inherits what it
  does not set (:func:`inherited`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F64, I64
from chronomem.config import LifecycleConfig
from chronomem.errors import ConflictError, InvalidInputError
from chronomem.model.audit import Closure
from chronomem.model.record import Record, Sensitivity, Status

__all__ = [
    "EXPIRED",
    "Closure",
    "closed_view",
    "decay_factor",
    "expiry_closures",
    "feedback_factor",
    "inherited",
    "plan_closures",
    "settled",
    "signal_value",
]

#: The ``closed_reason`` of a record closed by its time to live.
EXPIRED = "expired"

_ONE_US = timedelta(microseconds=1)
# From least to most sensitive: a replacement never becomes less sensitive than what it replaces.
_SENSITIVITY = (Sensitivity.NORMAL, Sensitivity.PERSONAL, Sensitivity.SECRET)


def inherited(olds: Sequence[Record]) -> dict[str, Any]:
    """The fields a replacement takes from the records it supersedes when it does not set them:
    the first old record's agent, kind, domain, importance, tags, metadata, speaker and session,
    and the most sensitive of the old records' sensitivities — a ``personal`` fact corrected
    stays ``personal``, so forgetting it still purges it. World time (``occurred_at``, the validity
    window), evidence and the witnessed event describe the new statement and are not
    inherited."""
    first = olds[0]
    return {
        "agent": first.agent,
        "kind": first.kind,
        "domain": first.domain,
        "importance": first.importance,
        "tags": list(first.tags),
        "metadata": dict(first.metadata),
        "speaker": first.speaker,
        "session": first.session,
        "sensitivity": max((r.sensitivity for r in olds), key=_SENSITIVITY.index),
    }


def decay_factor(
    last_accessed_us: I64,
    last_verified_us: I64,
    as_of_us: int,
    decays: npt.NDArray[np.bool_],
    config: LifecycleConfig,
) -> F64:
    """Staleness decay per row; 1 for rows whose kind does not decay. In ``[floor, 1]``."""
    fresh = np.maximum(last_accessed_us, last_verified_us)
    staleness = np.maximum(np.int64(as_of_us) - fresh, 0).astype(np.float64)
    half_life_us = config.half_life / _ONE_US
    factor = np.exp2(-staleness / half_life_us)
    np.maximum(factor, config.floor, out=factor)
    factor[~decays] = 1.0
    return factor


def feedback_factor(score: F64, config: LifecycleConfig) -> F64:
    """The push-down (or lift) of summed ratings."""
    if config.feedback_strength == 0.0:
        return np.ones(score.shape[0], dtype=np.float64)
    clamped = np.clip(score, config.feedback_min, config.feedback_max)
    return np.exp2(config.feedback_strength * clamped)


def signal_value(signal: str | float) -> float:
    """``"helpful"`` → +1, ``"harmful"`` → -1, or a number in [-1, 1]."""
    if isinstance(signal, str):
        values = {"helpful": 1.0, "harmful": -1.0}
        if signal not in values:
            raise InvalidInputError(
                f"signal must be 'helpful', 'harmful' or a number in [-1, 1]; got {signal!r}",
                field="signal",
            )
        return values[signal]
    if isinstance(signal, bool) or not isinstance(signal, int | float):
        raise InvalidInputError(
            f"signal must be a string or a number; got {signal!r}", field="signal"
        )
    if not math.isfinite(signal) or not -1.0 <= signal <= 1.0:
        raise InvalidInputError(
            f"a numeric signal must be in [-1, 1]; got {signal}", field="signal"
        )
    return float(signal)


def plan_closures(
    old: Sequence[Record],
    *,
    at: datetime,
    successor: Record | None,
    reason: str | None,
    valid_until: datetime | None = None,
) -> list[Closure]:
    """Close ``old`` at ``at``: superseded by ``successor`` or simply closed.

    The world-time window of each closed record ends where the successor's begins (or at
    ``valid_until``, default ``at``, for a plain close), never later than it already ended.

    Raises:
        ConflictError: a record is already closed or superseded.
        InvalidInputError: a record would supersede itself.
    """
    end = successor.valid_from if successor is not None else (valid_until or at)
    plans = []
    for record in old:
        if record.status is not Status.OPEN:
            by = f" by {record.superseded_by}" if record.superseded_by else ""
            raise ConflictError(
                f"record {record.id} is already {record.status.value}{by} "
                f"(at {record.superseded_at}); nothing was changed",
                record_id=record.id,
            )
        if successor is not None and successor.id == record.id:
            raise InvalidInputError("a record cannot supersede itself", field="supersedes")
        until = end if record.valid_until is None or end is None else min(record.valid_until, end)
        plans.append(
            Closure(
                record_id=record.id,
                status=Status.SUPERSEDED if successor is not None else Status.CLOSED,
                superseded_by=None if successor is None else successor.id,
                superseded_at=at,
                valid_until=until,
                valid_until_before=record.valid_until,
                reason=reason,
            )
        )
    return plans


def expiry_closures(records: Sequence[Record]) -> list[Closure]:
    """The closes of open records whose time to live has run out: each at its own
    ``expires_at`` (the instant every read already treats it as closed), its window ending
    there, reason :data:`EXPIRED`."""
    return [
        plan_closures([r], at=r.expires_at, successor=None, reason=EXPIRED)[0]
        for r in records
        if r.status is Status.OPEN and r.expires_at is not None
    ]


def closed_view(record: Record, closure: Closure) -> Record:
    """``record`` as ``closure`` leaves it."""
    return dataclasses.replace(
        record,
        status=closure.status,
        superseded_by=closure.superseded_by,
        superseded_at=closure.superseded_at,
        valid_until=closure.valid_until,
        valid_until_before=closure.valid_until_before,
        closed_reason=closure.reason,
    )


def settled(records: Sequence[Record], now: datetime) -> list[Record]:
    """The records as they stand at ``now``: one whose time to live ran out by then is shown
    closed at its expiry, as the next write will store it (DESIGN §3)."""
    due = [
        r
        for r in records
        if r.status is Status.OPEN and r.expires_at is not None and r.expires_at <= now
    ]
    if not due:
        return list(records)
    ended = {c.record_id: c for c in expiry_closures(due)}
    return [closed_view(r, ended[r.id]) if r.id in ended else r for r in records]
