"""The change feed's rows (docs/design/change-feed.md): appended by the store methods that make
each change, in their transaction, numbered per space in commit order; read from a position."""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence

from chronomem.clock import SystemClock, to_micros
from chronomem.model.audit import AuditEntry
from chronomem.model.change import Change, ChangeRow
from chronomem.model.record import Record, Sensitivity
from chronomem.stores.sql.backend import SQLBackend, json_text, read_instant
from chronomem.telemetry.requests import current_request_id

__all__ = ["append_changes", "audited", "changes", "feed_head", "new_change_id", "written"]

#: Records whose text a feed never shows, even while they are stored.
_WITHHELD = (Sensitivity.SECRET.value, Sensitivity.PERSONAL.value)


def new_change_id() -> str:
    return "chg_" + secrets.token_hex(13)


def written(record: Record) -> ChangeRow:
    """The change a record's insertion makes (never its text: see :func:`changes`)."""
    detail = {"kind": record.kind.value, "session": record.session, "source_id": record.source_id}
    return ChangeRow(
        kind="write", record_id=record.id, agent=record.agent,
        detail={k: v for k, v in detail.items() if v is not None},
    )  # fmt: skip


def audited(entry: AuditEntry) -> ChangeRow:
    """The change an audit entry records (its action is the change's kind)."""
    return ChangeRow(
        kind=entry.action, record_id=entry.record_id, actor=entry.actor, reason=entry.reason,
        detail=entry.detail,
    )  # fmt: skip


def append_changes(db: SQLBackend, space: str, rows: Sequence[ChangeRow]) -> None:
    """Append ``rows`` to ``space``'s feed inside the caller's write transaction.

    The numbers come from the same upsert on the ``spaces`` row as ``change_seq`` (one row lock
    in PostgreSQL), so a space's changes commit in ``seq`` order. While a request of the
    service is served, each names it in its detail (``request_id``)."""
    if not rows:
        return
    request = current_request_id()
    with db.write():
        last = int(
            db._execute(
                "INSERT INTO spaces (space, feed_seq) VALUES (?, ?) ON CONFLICT (space)"
                " DO UPDATE SET feed_seq = spaces.feed_seq + excluded.feed_seq"
                " RETURNING feed_seq",
                (space, len(rows)),
            ).fetchone()[0]
        )
        at = db._bind(to_micros(SystemClock().now()))
        first = last - len(rows) + 1
        db._executemany(
            "INSERT INTO changes (space, seq, id, at, kind, record_id, agent, actor, reason,"
            " detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (space, first + i, new_change_id(), at, r.kind, r.record_id, r.agent, r.actor,
                 r.reason, json_text(_detail(r, request)))
                for i, r in enumerate(rows)
            ],
        )  # fmt: skip


def _detail(row: ChangeRow, request: str | None) -> dict[str, object]:
    detail = dict(row.detail)
    if request is not None:
        detail.setdefault("request_id", request)
    return detail


def feed_head(db: SQLBackend, space: str) -> int:
    """The ``seq`` of the space's newest change (0: none yet)."""
    rows = db._query("SELECT feed_seq FROM spaces WHERE space = ?", (space,))
    return int(rows[0][0]) if rows else 0


def changes(db: SQLBackend, space: str, after: int, limit: int) -> list[Change]:
    """At most ``limit`` changes of ``space`` with ``seq > after``, oldest first; a ``write``
    carries its record's text while the record is stored and is neither secret nor personal."""
    rows = db._query(
        "SELECT c.seq, c.id, c.at, c.kind, c.record_id, c.agent, c.actor, c.reason, c.detail,"
        " r.text, r.sensitivity FROM changes c LEFT JOIN records r"
        " ON c.kind = 'write' AND r.id = c.record_id AND r.space = c.space"
        " WHERE c.space = ? AND c.seq > ? ORDER BY c.seq LIMIT ?",
        (space, after, limit),
    )
    return [
        Change(
            seq=int(r[0]), id=r[1], space=space, at=read_instant(db, r[2]),  # type: ignore[arg-type]
            kind=r[3], record_id=r[4], agent=r[5], actor=r[6], reason=r[7],
            detail=json.loads(r[8]), text=None if r[10] in _WITHHELD else r[9],
        )
        for r in rows
    ]  # fmt: skip
