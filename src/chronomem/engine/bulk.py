"""Changes by filter (DESIGN §3; docs/filters.md, "Changing many records"): close, verify or
forget every record a filter selects, in one store transaction with one audit entry per record
(and, for a purge, one scrub after it), or with ``dry_run`` list what would change and change
nothing. The rules are the single-record verbs' (``engine/lifecycle.py``): a closure plans its
window the same way, and forgetting still refuses a record something outside the selection
depends on, unless it is purged."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from chronomem.clock import to_micros
from chronomem.engine import browse
from chronomem.engine.handle import Handle
from chronomem.errors import DependentsExistError
from chronomem.lifecycle.rules import plan_closures
from chronomem.model.audit import BulkResult
from chronomem.model.filter import Filter
from chronomem.model.record import EvidenceStatus, Kind, Record, Sensitivity, Status

__all__ = ["close_where", "forget_where", "verify_where"]

#: How many refused records an error names (its ``dependants`` list holds every dependant).
_NAMED = 10


def _selected(
    h: Handle, where: Filter, agents: Sequence[str] | None, now: datetime, *, every: bool
) -> list[Record]:
    """The records the filter selects among these agents' (all: every agent's), of every kind
    (core blocks too): the open ones (whatever their validity window), or with ``every``
    whatever their state."""
    return browse.records(
        h, agents=agents, kinds=frozenset(Kind), domain=None, include_history=True, since=None,
        until=None, as_of=now, limit=sys.maxsize, offset=0,
        status=None if every else Status.OPEN, where=where,
    )  # fmt: skip


def _detail(where: Filter, *, purge: bool = False) -> dict[str, Any]:
    """What an audit entry says of the change: the filter, or for a purge only the fields it
    named — a purge's audit keeps no content, and a filter's values may be what it erases."""
    if purge:
        return {"filter_fields": sorted(where.fields())}
    return {"filter": where.describe()}


def close_where(
    h: Handle,
    where: Filter,
    *,
    agents: Sequence[str] | None,
    now: datetime,
    reason: str,
    valid_until: datetime | None,
    actor: str | None,
    dry_run: bool,
) -> BulkResult:
    with h.writing(now):
        records = _selected(h, where, agents, now, every=False)
        ids = tuple(r.id for r in records)
        if not dry_run and records:
            plans = plan_closures(
                records, at=now, successor=None, reason=reason, valid_until=valid_until
            )
            h.store.close_records(h.space, plans)
            h.store.flag_evidence(h.space, list(ids), EvidenceStatus.SUPERSEDED.value)
            for record_id in ids:
                h.audit(now, "close", record_id, actor, reason, _detail(where))
    return BulkResult(action="close", dry_run=dry_run, record_ids=ids)


def verify_where(
    h: Handle,
    where: Filter,
    *,
    agents: Sequence[str] | None,
    now: datetime,
    reason: str | None,
    actor: str | None,
    dry_run: bool,
) -> BulkResult:
    with h.writing(now):
        ids = tuple(r.id for r in _selected(h, where, agents, now, every=False))
        if not dry_run:
            at = to_micros(now)
            for record_id in ids:
                h.store.set_verified(h.space, record_id, at)
                h.audit(now, "verify", record_id, actor, reason, _detail(where))
    return BulkResult(action="verify", dry_run=dry_run, record_ids=ids)


def forget_where(
    h: Handle,
    where: Filter,
    *,
    agents: Sequence[str] | None,
    now: datetime,
    reason: str,
    purge: bool,
    actor: str | None,
    dry_run: bool,
) -> BulkResult:
    """Forget the selected records, whatever their state. Refused as a whole (nothing written,
    dry run or not) when a record that is not purged has a dependant outside the selection."""
    with h.writing(now):
        records = _selected(h, where, agents, now, every=True)
        ids = tuple(r.id for r in records)
        chosen = set(ids)
        purged = tuple(r.id for r in records if purge or r.sensitivity is not Sensitivity.NORMAL)
        scrubbed = set(purged)
        kept = [r.id for r in records if r.id not in scrubbed]
        blocked = {
            record_id: outside
            for record_id in kept
            if (outside := [(i, why) for i, why in h.store.dependants(h.space, record_id)
                            if i not in chosen])
        }  # fmt: skip
        if blocked:
            shown = sorted(blocked.items())[:_NAMED]
            named = "; ".join(
                f"{rid}: " + ", ".join(f"{i} ({why})" for i, why in deps) for rid, deps in shown
            ) + (f"; and {len(blocked) - _NAMED} more" if len(blocked) > _NAMED else "")
            raise DependentsExistError(
                f"cannot forget {len(blocked)} of the {len(ids)} selected records: records "
                f"outside the selection depend on them ({named}); close them instead, widen "
                f"the filter, or purge",
                record_id=min(blocked),
                dependants=sorted({i for deps in blocked.values() for i, _ in deps}),
            )
        if dry_run:
            return BulkResult(action="forget", dry_run=True, record_ids=ids, purged=purged)
        flagged = (
            h.store.flag_evidence(h.space, list(purged), EvidenceStatus.MISSING.value)
            if purged
            else []
        )
        if kept:
            h.store.delete_records(h.space, kept, purge=False)
        if purged:
            h.store.delete_records(h.space, list(purged), purge=True)
        for record_id in ids:
            purged_now = record_id in scrubbed
            action = "purge" if purged_now else "forget"
            h.audit(now, action, record_id, actor, reason, _detail(where, purge=purged_now))
    remains = h.store.scrub() if purged else None
    flagged_after = tuple(i for i in flagged if i not in chosen)
    return BulkResult(
        action="forget", dry_run=False, record_ids=ids, purged=purged, flagged=flagged_after,
        scrubbed=remains is None, remains=remains,
    )  # fmt: skip
