"""The lifecycle verbs (DESIGN §3): supersede, close a record, history, verify, feedback and
forget. The rules (what a closure sets, what a rating is worth) are ``lifecycle/rules.py``; each
function here applies them in one store transaction with its audit entry."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from chronomem.clock import to_micros
from chronomem.engine import write
from chronomem.engine.handle import Handle
from chronomem.errors import DependentsExistError
from chronomem.lifecycle.rules import inherited, plan_closures, signal_value
from chronomem.model.audit import ForgetResult
from chronomem.model.record import EvidenceStatus, Record, Sensitivity, WriteResult

__all__ = ["close_record", "feedback", "forget", "history", "supersede", "verify"]


def supersede(
    h: Handle,
    old_ids: Sequence[str],
    fields: Mapping[str, Any],
    *,
    now: datetime,
    reason: str | None,
    actor: str | None,
) -> WriteResult:
    """Store ``fields`` (remember's, with the text) as the replacement of ``old_ids``; what they
    leave unset (``None``) comes from the old records (``lifecycle.rules.inherited``)."""
    olds = [h.record(i) for i in old_ids]
    item = {**inherited(olds), **{k: v for k, v in fields.items() if v is not None}}
    item["supersedes"] = list(old_ids)
    return write.write(h, [item], now=now, actor=actor, reason=reason)[0]


def close_record(
    h: Handle,
    record_id: str,
    *,
    now: datetime,
    reason: str,
    valid_until: datetime | None,
    actor: str | None,
) -> Record:
    with h.writing(now):
        record = h.record(record_id)
        plans = plan_closures(
            [record], at=now, successor=None, reason=reason, valid_until=valid_until
        )
        h.store.close_records(h.space, plans)
        h.store.flag_evidence(h.space, [record_id], EvidenceStatus.SUPERSEDED.value)
        h.audit(now, "close", record_id, actor, reason)
    return h.record(record_id)


def history(h: Handle, record_id: str) -> list[Record]:
    """The supersession chain through ``record_id``, both directions, oldest first."""
    start = h.record(record_id)
    seen = {start.id: start}
    frontier = [start]
    while frontier:
        linked = {
            i
            for r in frontier
            for i in (*r.supersedes, *([r.superseded_by] if r.superseded_by else ()))
            if i not in seen
        }
        frontier = h.records(sorted(linked))
        seen.update((r.id, r) for r in frontier)
    return sorted(seen.values(), key=lambda r: (r.recorded_at, r.id))


def verify(
    h: Handle, record_id: str, *, now: datetime, actor: str | None, reason: str | None
) -> Record:
    with h.writing(now):
        h.record(record_id)
        h.store.set_verified(h.space, record_id, to_micros(now))
        h.audit(now, "verify", record_id, actor, reason)
    return h.record(record_id)


def feedback(
    h: Handle,
    record_id: str,
    signal: str | float,
    *,
    now: datetime,
    reason: str | None,
    actor: str | None,
) -> Record:
    value = signal_value(signal)
    with h.writing(now):
        h.record(record_id)
        total = h.store.add_feedback(h.space, record_id, value)
        h.audit(now, "feedback", record_id, actor, reason, {"signal": value, "score": total})
    return h.record(record_id)


def forget(
    h: Handle, record_id: str, *, now: datetime, reason: str, purge: bool, actor: str | None
) -> ForgetResult:
    with h.writing(now):
        record = h.record(record_id)
        purge = purge or record.sensitivity is not Sensitivity.NORMAL
        dependants = h.store.dependants(h.space, record_id)
        if dependants and not purge:
            named = ", ".join(f"{i} ({why})" for i, why in dependants)
            raise DependentsExistError(
                f"cannot forget {record_id}: {named} depend(s) on it; close it instead, "
                f"or purge it if it must go",
                record_id=record_id,
                dependants=[i for i, _ in dependants],
            )
        flagged = (
            h.store.flag_evidence(h.space, [record_id], EvidenceStatus.MISSING.value)
            if purge
            else []
        )
        h.store.delete_records(h.space, [record_id], purge=purge)
        h.audit(now, "purge" if purge else "forget", record_id, actor, reason, {"flagged": flagged})
    remains = h.store.scrub() if purge else None
    return ForgetResult(
        record_id=record_id,
        purged=purge,
        flagged=tuple(flagged),
        scrubbed=remains is None,
        remains=remains,
    )
