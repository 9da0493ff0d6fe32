"""Simulated time on the command line (``--now``, ``CHRONOMEM_NOW``): a command runs with its
handle's clock fixed at that instant. A write stamped before what the space already holds would
move the store's time backwards — an as-of read between the two instants would see the later
write and miss the earlier one — so writing commands refuse it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from chronomem.errors import InvalidInputError
from chronomem.model.record import Kind

if TYPE_CHECKING:
    from chronomem.engine import Memory

__all__ = ["check_not_backwards", "newest_write"]

#: Later than any instant a store holds: browse every record whatever its recorded_at.
_END_OF_TIME = datetime(9999, 1, 1, tzinfo=UTC)


def newest_write(memory: Memory) -> datetime | None:
    """The latest instant the space's history was stamped with: the newest ``recorded_at`` of a
    record (any kind, closed and superseded ones included) or event, or audit entry."""
    found: list[datetime] = []
    records = memory.records(kinds=list(Kind), include_history=True, as_of=_END_OF_TIME, limit=1)
    found.extend(r.recorded_at for r in records)
    events = memory.events(as_of=_END_OF_TIME, limit=1 << 31)
    found.extend(e.recorded_at for e in events)
    audit = memory.audit()
    if audit:
        found.append(max(e.at for e in audit))
    return max(found, default=None)


def check_not_backwards(memory: Memory, now: datetime) -> None:
    """Raise :class:`InvalidInputError` (field ``now``) when ``now`` is before the space's newest
    write."""
    newest = newest_write(memory)
    if newest is not None and now < newest:
        raise InvalidInputError(
            f"--now {now.isoformat()} is before the newest write in space {memory.space!r} "
            f"({newest.isoformat()}): a write may not move the store's time backwards; use "
            f"--now {newest.isoformat()} or later (reads may use any --now, or --as-of)",
            field="now",
        )
