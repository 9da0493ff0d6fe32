"""Values of the lifecycle: audit entries and what a forget did."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chronomem.model.record import Status

__all__ = ["AuditEntry", "BulkResult", "Closure", "ForgetResult", "ScrubResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One lifecycle change, appended and never edited (DESIGN §3).

    ``action`` is one of ``supersede``, ``close``, ``verify``, ``feedback``, ``forget``, ``purge``,
    ``flag``. For forgets and purges the entry keeps the id and the reason, never the content.
    """

    seq: int
    at: datetime
    action: str
    record_id: str
    actor: str | None = None
    reason: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at": self.at.isoformat(),
            "action": self.action,
            "record_id": self.record_id,
            "actor": self.actor,
            "reason": self.reason,
            "detail": dict(self.detail),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetResult:
    """What ``forget`` did: ``purged`` when the bytes were scrubbed (secret/personal records or
    ``purge=True``); ``flagged`` the dependants now marked ``evidence_missing``; ``scrubbed``
    whether the store could also erase the bytes physically right away, and when it could not,
    ``remains`` says where they may linger and what completes the erasure (SQLite: a write-ahead
    log another process still reads; PostgreSQL: old row versions, WAL, replicas, backups)."""

    record_id: str
    purged: bool
    flagged: tuple[str, ...] = ()
    scrubbed: bool = True
    remains: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BulkResult:
    """What a change by filter did (``close_where``, ``verify_where``, ``forget_where``), or
    with ``dry_run`` what it would do, changing nothing: ``record_ids`` the records it selected
    and changed, in one transaction; for ``forget``, ``purged`` those whose bytes were scrubbed
    (``purge=True``, or secret and personal records), ``flagged`` the records citing a purged
    one (now ``evidence_missing``), and ``scrubbed`` / ``remains`` as :class:`ForgetResult`'s."""

    action: str
    dry_run: bool
    record_ids: tuple[str, ...]
    purged: tuple[str, ...] = ()
    flagged: tuple[str, ...] = ()
    scrubbed: bool = True
    remains: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScrubResult:
    """What ``scrub`` did: ``scrubbed`` when no byte of a purged record is left in the store's
    files; otherwise ``remains`` says where copies may still be and what removes them
    (PostgreSQL: WAL segments until the server recycles them, WAL archives, replicas and
    backups)."""

    scrubbed: bool
    remains: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Closure:
    """How one record is closed: the fields to write."""

    record_id: str
    status: Status
    superseded_by: str | None
    superseded_at: datetime
    valid_until: datetime | None
    valid_until_before: datetime | None
    reason: str | None
