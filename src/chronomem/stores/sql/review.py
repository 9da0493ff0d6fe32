"""The review queue's proposals, the access log and per-space settings (DESIGN §3)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chronomem.model.change import ChangeRow
from chronomem.model.review import Access, Proposal, ProposalStatus, ReviewAction
from chronomem.stores.sql import changes
from chronomem.stores.sql.backend import (
    SQLBackend,
    chunks,
    instant_param,
    json_text,
    marks,
    read_instant,
)

__all__ = [
    "access_counts",
    "accesses",
    "decide_proposal",
    "log_access",
    "proposals",
    "put_proposals",
    "set_space_setting",
    "space_setting",
]

_PROPOSAL = (
    "id, action, category, agent, record_ids, reasons, figures, created_at, status, decided_at,"
    " decided_by, decision_reason, change"
)


def _proposal(db: SQLBackend, row: Sequence[Any]) -> Proposal:
    pid, action, category, agent, ids, reasons, figures, created, status, at, by, why, change = row
    return Proposal(
        id=pid, action=ReviewAction(action), category=category, agent=agent,
        record_ids=tuple(json.loads(ids)), reasons=tuple(json.loads(reasons)),
        figures=json.loads(figures), created_at=read_instant(db, created),  # type: ignore[arg-type]
        status=ProposalStatus(status), decided_at=read_instant(db, at), decided_by=by,
        decision_reason=why, change=json.loads(change),
    )  # fmt: skip


def put_proposals(db: SQLBackend, space: str, found: Sequence[Proposal]) -> None:
    """Insert the proposals not stored yet (ids are content-derived: a stored one is the same)."""
    if not found:
        return
    with db.write():
        db._executemany(
            f"INSERT INTO review_proposals (space, {_PROPOSAL}) VALUES (?, {marks(13)})"
            " ON CONFLICT (space, id) DO NOTHING",
            [
                (space, p.id, p.action.value, p.category, p.agent, json_text(list(p.record_ids)),
                 json_text(list(p.reasons)), json_text(dict(p.figures)),
                 instant_param(db, p.created_at), p.status.value, None, None, None,
                 json_text(dict(p.change)))
                for p in found
            ],
        )  # fmt: skip


def proposals(
    db: SQLBackend, space: str, *, ids: Sequence[str] | None = None, status: str | None = None
) -> list[Proposal]:
    sql = f"SELECT {_PROPOSAL} FROM review_proposals WHERE space = ?"
    params: list[Any] = [space]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    if ids is None:
        return [_proposal(db, r) for r in db._query(sql + " ORDER BY created_at, id", params)]
    out = []
    for chunk in chunks(list(ids)):
        rows = db._query(sql + f" AND id IN ({marks(len(chunk))})", [*params, *chunk])
        out += [_proposal(db, r) for r in rows]
    return sorted(out, key=lambda p: (p.created_at, p.id))


def decide_proposal(
    db: SQLBackend,
    space: str,
    proposal_id: str,
    status: ProposalStatus,
    *,
    at_us: int,
    by: str | None,
    reason: str | None,
) -> bool:
    """Close an open proposal (approved, rejected or obsolete); returns whether it was open."""
    with db.write():
        cur = db._execute(
            "UPDATE review_proposals SET status = ?, decided_at = ?, decided_by = ?,"
            " decision_reason = ? WHERE space = ? AND id = ? AND status = 'open'",
            (status.value, db._bind(at_us), by, reason, space, proposal_id),
        )
        if cur.rowcount == 1:
            decision = {"proposal_id": proposal_id, "decision": status.value}
            changes.append_changes(
                db, space, [ChangeRow(kind="review", actor=by, reason=reason, detail=decision)]
            )
    return cur.rowcount == 1


def log_access(db: SQLBackend, space: str, entries: Sequence[Access]) -> None:
    if not entries:
        return
    with db.write():
        db._executemany(
            "INSERT INTO access_log (space, at, as_of, record_id, actor, verb, query)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (space, instant_param(db, e.at), instant_param(db, e.as_of), e.record_id,
                 e.actor, e.verb, e.query)
                for e in entries
            ],
        )  # fmt: skip


def accesses(
    db: SQLBackend, space: str, *, record_id: str | None = None, limit: int = 100
) -> list[Access]:
    """The newest ``limit`` reads (of one record), newest first."""
    sql = "SELECT seq, at, as_of, record_id, actor, verb, query FROM access_log WHERE space = ?"
    params: list[Any] = [space]
    if record_id is not None:
        sql += " AND record_id = ?"
        params.append(record_id)
    rows = db._query(sql + " ORDER BY seq DESC LIMIT ?", [*params, limit])
    return [
        Access(seq=int(r[0]), at=read_instant(db, r[1]), as_of=read_instant(db, r[2]),  # type: ignore[arg-type]
               record_id=r[3], actor=r[4], verb=r[5], query=r[6])
        for r in rows
    ]  # fmt: skip


def access_counts(db: SQLBackend, space: str, *, since_us: int) -> dict[str, int]:
    """Reads per record since ``since_us``."""
    rows = db._query(
        "SELECT record_id, COUNT(*) FROM access_log WHERE space = ? AND at >= ? GROUP BY record_id",
        (space, db._bind(since_us)),
    )
    return {r[0]: int(r[1]) for r in rows}


def space_setting(db: SQLBackend, space: str, key: str) -> str | None:
    rows = db._query("SELECT value FROM space_settings WHERE space = ? AND key = ?", (space, key))
    return str(rows[0][0]) if rows else None


def set_space_setting(db: SQLBackend, space: str, key: str, value: str | None) -> None:
    with db.write():
        if value is None:
            db._execute("DELETE FROM space_settings WHERE space = ? AND key = ?", (space, key))
        else:
            db._execute(
                "INSERT INTO space_settings (space, key, value) VALUES (?, ?, ?)"
                " ON CONFLICT (space, key) DO UPDATE SET value = excluded.value",
                (space, key, value),
            )
