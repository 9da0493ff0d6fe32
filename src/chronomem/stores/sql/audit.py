"""The audit log (DESIGN §3): every lifecycle change, appended, read oldest first."""

from __future__ import annotations

import json
from collections.abc import Sequence

from chronomem.model.audit import AuditEntry
from chronomem.stores.sql import changes
from chronomem.stores.sql.backend import SQLBackend, instant_param, json_text, read_instant
from chronomem.telemetry.requests import current_request_id

__all__ = ["append_audit", "audit"]


def append_audit(db: SQLBackend, space: str, entries: Sequence[AuditEntry]) -> None:
    """Append ``entries``; while a request of the service is served, each names it in its
    detail (``request_id``), unless it names one already."""
    if not entries:
        return
    request = current_request_id()
    with db.write():
        db._executemany(
            "INSERT INTO audit_log (space, at, action, record_id, actor, reason, detail)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (space, instant_param(db, e.at), e.action, e.record_id, e.actor, e.reason,
                 json_text(_detail(e, request)))
                for e in entries
            ],
        )  # fmt: skip
        changes.append_changes(db, space, [changes.audited(e) for e in entries])


def _detail(entry: AuditEntry, request: str | None) -> dict[str, object]:
    detail = dict(entry.detail)
    if request is not None:
        detail.setdefault("request_id", request)
    return detail


def audit(db: SQLBackend, space: str, record_id: str | None = None) -> list[AuditEntry]:
    sql = "SELECT seq, at, action, record_id, actor, reason, detail FROM audit_log"
    sql += " WHERE space = ?" + (" AND record_id = ?" if record_id else "") + " ORDER BY seq"
    rows = db._query(sql, (space, record_id) if record_id else (space,))
    return [
        AuditEntry(
            seq=int(r[0]), at=read_instant(db, r[1]), action=r[2],  # type: ignore[arg-type]
            record_id=r[3], actor=r[4], reason=r[5], detail=json.loads(r[6]),
        )
        for r in rows
    ]  # fmt: skip
