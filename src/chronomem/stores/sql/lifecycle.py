"""Lifecycle updates of record rows (DESIGN §3): closing, verifying, ratings, passages backfill,
dependants, deletion with tombstones, and evidence flags. Each call is one transaction, or joins
the one the caller opened with ``write()``; each bumps the space's ``change_seq``."""

from __future__ import annotations

from collections.abc import Sequence

from chronomem.arrays import F32
from chronomem.errors import ConflictError
from chronomem.model.audit import Closure
from chronomem.model.change import ChangeRow
from chronomem.model.record import Dependant
from chronomem.stores.sql import changes, fulltext
from chronomem.stores.sql.backend import (
    SQLBackend,
    bump,
    by_ids,
    check_vector_model,
    chunks,
    instant_param,
    marks,
    vector_blob,
)

__all__ = [
    "add_feedback",
    "close_records",
    "delete_records",
    "dependants",
    "expiring",
    "flag_evidence",
    "refresh_expiry",
    "set_embeddings",
    "set_passages",
    "set_verified",
]


def close_records(db: SQLBackend, space: str, closures: Sequence[Closure]) -> None:
    if not closures:
        return
    with db.write():
        seq = bump(db, space)
        for c in closures:
            cur = db._execute(
                "UPDATE records SET status = ?, superseded_by = ?, superseded_at = ?,"
                " valid_until = ?, valid_until_before = ?, closed_reason = ?, change_seq = ?"
                f" WHERE id = ? AND {db._hint('space')} = ? AND status = 'open'",
                (
                    c.status.value, c.superseded_by, instant_param(db, c.superseded_at),
                    instant_param(db, c.valid_until), instant_param(db, c.valid_until_before),
                    c.reason, seq, c.record_id, space,
                ),
            )  # fmt: skip
            if cur.rowcount != 1:
                raise ConflictError(
                    f"record {c.record_id} is no longer open (changed concurrently)",
                    record_id=c.record_id,
                )


def expiring(db: SQLBackend, space: str, now_us: int) -> list[str]:
    """The open records whose time to live ran out by ``now_us`` (an index probe: only open
    records with an expiry are in ``records_expiring``)."""
    rows = db._query(
        "SELECT id FROM records WHERE space = ? AND status = 'open'"
        " AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at, id",
        (space, db._bind(now_us)),
    )
    return [r[0] for r in rows]


def refresh_expiry(db: SQLBackend, space: str, ids: Sequence[str], now_us: int) -> int:
    """Move the expiry of each record of ``ids`` still open and unexpired at ``now_us`` to
    ``now_us`` plus its ``ttl``; returns how many moved. An expired record is not revived."""
    if not ids:
        return 0
    rows = [
        row
        for row in by_ids(db, "SELECT id, ttl, expires_at, status FROM records", space, ids)
        if row[1] is not None and row[3] == "open" and (db._read(row[2]) or 0) > now_us
    ]
    if not rows:
        return 0
    with db.write():
        seq = bump(db, space)
        db._executemany(
            "UPDATE records SET expires_at = ?, change_seq = ?"
            f" WHERE id = ? AND {db._hint('space')} = ? AND status = 'open'",
            [(db._bind(now_us + round(float(ttl) * 1_000_000)), seq, rid, space)
             for rid, ttl, _, _ in rows],
        )  # fmt: skip
    return len(rows)


def set_verified(db: SQLBackend, space: str, record_id: str, at_us: int) -> None:
    at = db._bind(at_us)
    with db.write():
        seq = bump(db, space)
        db._execute(
            "UPDATE records SET last_verified_at ="
            f" {db._greatest('COALESCE(last_verified_at, ?)', '?')},"
            f" change_seq = ? WHERE id = ? AND {db._hint('space')} = ?",
            (at, at, seq, record_id, space),
        )


def set_passages(db: SQLBackend, space: str, items: Sequence[tuple[str, F32]]) -> None:
    if not items:
        return
    with db.write():
        check_vector_model(db)
        seq = bump(db, space)
        db._executemany(
            f"UPDATE records SET passages = ?, change_seq = ? WHERE id = ?"
            f" AND {db._hint('space')} = ?",
            [(vector_blob(m), seq, rid, space) for rid, m in items],
        )


def set_embeddings(db: SQLBackend, space: str, items: Sequence[tuple[str, F32, F32 | None]]) -> int:
    """Give records written without a vector their vector and passages (a record that has
    one meanwhile keeps it); returns how many changed."""
    if not items:
        return 0
    changed = 0
    with db.write():
        check_vector_model(db)
        seq = bump(db, space)
        for rid, vector, parts in items:
            row = db._execute(
                "UPDATE records SET embedding = ?, passages = COALESCE(?, passages),"
                f" change_seq = ? WHERE id = ? AND {db._hint('space')} = ?"
                " AND embedding IS NULL RETURNING pk, agent",
                (vector_blob(vector), vector_blob(parts), seq, rid, space),
            ).fetchall()
            if row:
                db._index_vectors(space, [(int(row[0][0]), row[0][1], vector)])
                changed += 1
    return changed


def add_feedback(db: SQLBackend, space: str, record_id: str, signal: float) -> float:
    with db.write():
        seq = bump(db, space)
        row = db._execute(
            "UPDATE records SET feedback_score = feedback_score + ?, change_seq = ?"
            f" WHERE id = ? AND {db._hint('space')} = ? RETURNING feedback_score",
            (signal, seq, record_id, space),
        ).fetchone()
    return float(row[0])


def dependants(db: SQLBackend, space: str, record_id: str) -> list[tuple[str, str]]:
    hint = db._hint
    rows = db._query(
        f"SELECT r.id, '{Dependant.CITES}' FROM records r, {db._json_each('r.evidence')}"
        " WHERE r.space = ? AND e.value = ?"
        " UNION ALL SELECT superseded_by, 'supersedes it' FROM records"
        f" WHERE id = ? AND {hint('space')} = ? AND superseded_by IS NOT NULL"
        " UNION ALL SELECT e.value, 'is superseded by it' FROM records r,"
        f" {db._json_each('r.supersedes')} WHERE r.id = ? AND {hint('r.space')} = ?",
        (space, record_id, record_id, space, record_id, space),
    )
    return [(r[0], r[1]) for r in rows]


def delete_records(db: SQLBackend, space: str, ids: Sequence[str]) -> None:
    """Delete rows, vectors, postings and the access log's rows, leaving a tombstone (id and
    agent) for other processes' arrays."""
    if not ids:
        return
    with db.write():
        seq = bump(db, space)
        for chunk in chunks(list(ids)):
            where = f"WHERE id IN ({marks(len(chunk))}) AND {db._hint('space')} = ?"
            params = (*chunk, space)
            db._execute(
                "INSERT INTO tombstones (space, record_id, agent, change_seq)"
                f" SELECT space, id, agent, ? FROM records {where}",
                (seq, *params),
            )
            fulltext.remove_documents(db, space, where, params)
            db._execute(  # a switch's pending vector goes with its record (docs/design/reembed.md)
                f"DELETE FROM reembed_vectors WHERE kind = 'r' AND pk IN (SELECT pk FROM records"
                f" {where})",
                params,
            )
            db._execute(f"DELETE FROM records {where}", params)
            db._execute(
                f"DELETE FROM access_log WHERE record_id IN ({marks(len(chunk))}) AND space = ?",
                params,
            )


def flag_evidence(db: SQLBackend, space: str, cited_ids: Sequence[str], status: str) -> list[str]:
    if not cited_ids:
        return []
    # "missing" is the stronger flag: a record citing a purged record stays missing.
    weaker = "" if status == "evidence_missing" else " AND r.evidence_status = 'ok'"
    with db.write():
        found: set[str] = set()
        for chunk in chunks(list(cited_ids)):  # a change by filter cites many at once
            rows = db._execute(
                f"SELECT DISTINCT r.id FROM records r, {db._json_each('r.evidence')}"
                f" WHERE r.space = ? AND e.value IN ({marks(len(chunk))}){weaker}",
                (space, *chunk),
            ).fetchall()
            found.update(r[0] for r in rows)
        flagged = sorted(found)
        if flagged:
            seq = bump(db, space)
            db._executemany(
                "UPDATE records SET evidence_status = ?, change_seq = ? WHERE id = ?",
                [(status, seq, rid) for rid in flagged],
            )
            rows = [ChangeRow(kind="flag", record_id=rid, detail={"evidence_status": status})
                    for rid in flagged]  # fmt: skip
            changes.append_changes(db, space, rows)
    return flagged
