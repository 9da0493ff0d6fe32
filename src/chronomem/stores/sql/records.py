"""Record rows: conversion between :class:`~chronomem.model.Record` and the ``records`` table,
inserts (with their postings, vector-index rows and the reflection trigger), touches, reads by
id and in insertion order."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from chronomem.analysis.analyser import default_analyser
from chronomem.arrays import F32
from chronomem.model.record import (
    INSTANT_FIELDS,
    EvidenceStatus,
    Kind,
    Record,
    Sensitivity,
    Status,
)
from chronomem.stores.base import StoredRecord, Touch
from chronomem.stores.sql import changes, fulltext
from chronomem.stores.sql.backend import (
    SQLBackend,
    bump,
    by_ids,
    check_vector_model,
    chunks,
    in_insertion_order,
    instant_param,
    json_text,
    json_tuple,
    marks,
    passages_from_blob,
    read_instant,
    vector_blob,
    vector_from_blob,
)

__all__ = [
    "RECORD_COLUMNS",
    "accumulated_importance",
    "agents",
    "existing_ids",
    "get_embedding",
    "get_records",
    "insert_records",
    "iter_records",
    "select_record",
    "stored_sources",
    "set_accumulated_importance",
    "to_record",
    "touch",
]

RECORD_COLUMNS = (
    "id", "space", "agent", "kind", "text", "importance", "occurred_at", "recorded_at",
    "last_accessed_at", "last_verified_at", "valid_from", "valid_until", "status",
    "superseded_by", "superseded_at", "valid_until_before", "closed_reason", "supersedes",
    "domain", "tags", "metadata", "evidence", "depth", "event_id", "sensitivity",
    "evidence_status", "feedback_score", "speaker", "session", "expires_at", "ttl", "source_id",
)  # fmt: skip
_INSTANTS = frozenset(INSTANT_FIELDS)
_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}
_SENSITIVITIES = {s.value: s for s in Sensitivity}
_EVIDENCE_STATUSES = {s.value: s for s in EvidenceStatus}
#: The record columns and whether the row has a vector, in the order :func:`to_record` reads.
select_record = ", ".join(RECORD_COLUMNS) + ", embedding IS NOT NULL"


def _params(db: SQLBackend, r: Record) -> tuple[Any, ...]:
    return tuple(
        instant_param(db, getattr(r, name)) if name in _INSTANTS else value
        for name, value in zip(
            RECORD_COLUMNS,
            (
                r.id, r.space, r.agent, r.kind.value, r.text, float(r.importance),
                r.occurred_at, r.recorded_at, r.last_accessed_at, r.last_verified_at,
                r.valid_from, r.valid_until, r.status.value, r.superseded_by, r.superseded_at,
                r.valid_until_before, r.closed_reason, json_text(list(r.supersedes)), r.domain,
                json_text(list(r.tags)), json_text(dict(r.metadata)),
                json_text(list(r.evidence)), r.depth, r.event_id, r.sensitivity.value,
                r.evidence_status.value, float(r.feedback_score), r.speaker, r.session,
                r.expires_at, r.ttl, r.source_id,
            ),
            strict=True,
        )
    )  # fmt: skip


def to_record(db: SQLBackend, row: Sequence[Any]) -> Record:
    """A record from a row of :data:`select_record`."""
    v = dict(zip(RECORD_COLUMNS, row, strict=False))
    return Record(
        id=v["id"],
        space=v["space"],
        agent=v["agent"],
        kind=_KINDS[v["kind"]],
        text=v["text"],
        importance=float(v["importance"]),
        occurred_at=read_instant(db, v["occurred_at"]),  # type: ignore[arg-type]
        recorded_at=read_instant(db, v["recorded_at"]),  # type: ignore[arg-type]
        last_accessed_at=read_instant(db, v["last_accessed_at"]),  # type: ignore[arg-type]
        last_verified_at=read_instant(db, v["last_verified_at"]),
        valid_from=read_instant(db, v["valid_from"]),
        valid_until=read_instant(db, v["valid_until"]),
        status=_STATUSES[v["status"]],
        superseded_by=v["superseded_by"],
        superseded_at=read_instant(db, v["superseded_at"]),
        valid_until_before=read_instant(db, v["valid_until_before"]),
        closed_reason=v["closed_reason"],
        supersedes=json_tuple(v["supersedes"]),
        domain=v["domain"],
        tags=json_tuple(v["tags"]),
        metadata={} if v["metadata"] == "{}" else json.loads(v["metadata"]),
        evidence=json_tuple(v["evidence"]),
        depth=int(v["depth"]),
        event_id=v["event_id"],
        sensitivity=_SENSITIVITIES[v["sensitivity"]],
        evidence_status=_EVIDENCE_STATUSES[v["evidence_status"]],
        feedback_score=float(v["feedback_score"]),
        has_embedding=bool(row[len(RECORD_COLUMNS)]),
        speaker=v["speaker"],
        session=v["session"],
        expires_at=read_instant(db, v["expires_at"]),
        ttl=None if v["ttl"] is None else float(v["ttl"]),
        source_id=v["source_id"],
    )


def insert_records(db: SQLBackend, space: str, items: Sequence[StoredRecord]) -> None:
    if not items:
        return
    columns = ", ".join((*RECORD_COLUMNS, "embedding", "passages", "change_seq", "doc_len"))
    terms = [default_analyser().terms(item.record.read_text) for item in items]
    with db.write():
        if any(i.embedding is not None for i in items):
            check_vector_model(db)
        seq = bump(db, space)
        db._executemany(
            "INSERT INTO agents (space, agent) VALUES (?, ?) ON CONFLICT DO NOTHING",
            sorted({(space, item.record.agent) for item in items}),
        )
        db._executemany(
            f"INSERT INTO records ({columns}) VALUES ({marks(len(RECORD_COLUMNS) + 4)})",
            [
                (
                    *_params(db, i.record),
                    vector_blob(i.embedding),
                    vector_blob(i.passages),
                    seq,
                    len(t),
                )
                for i, t in zip(items, terms, strict=True)
            ],
        )
        pks = dict(
            db._execute(
                "SELECT id, pk FROM records WHERE space = ? AND change_seq = ?", (space, seq)
            ).fetchall()
        )
        fulltext.add_documents(
            db,
            space,
            [(pks[i.record.id], i.record.agent, t) for i, t in zip(items, terms, strict=True)],
        )
        db._index_vectors(
            space,
            [
                (pks[i.record.id], i.record.agent, i.embedding)
                for i in items
                if i.embedding is not None
            ],
        )
        # The reflection trigger (DESIGN §5): perceived importance accumulates per agent;
        # reflections themselves do not count.
        added: dict[str, float] = {}
        for item in items:
            if item.record.kind is not Kind.REFLECTION:
                agent = item.record.agent
                added[agent] = added.get(agent, 0.0) + float(item.record.importance)
        db._executemany(
            "UPDATE agents SET importance_accumulated = importance_accumulated + ?"
            " WHERE space = ? AND agent = ?",
            [(amount, space, agent) for agent, amount in sorted(added.items())],
        )
        changes.append_changes(db, space, [changes.written(i.record) for i in items])


def touch(db: SQLBackend, space: str, touches: Sequence[Touch]) -> tuple[int, int]:
    """Stamp the touches; returns how many records moved, and the ``change_seq`` the write took
    (0: nothing to touch, no write)."""
    touches = [t for t in touches if t.ids]
    if not touches:
        return 0, 0
    changed = 0
    with db.write():
        seq = bump(db, space)
        for t in touches:
            at = db._bind(t.at_us)
            moves = "<>" if t.backwards else "<"  # backwards: the reference code's stamping
            for chunk in chunks(list(t.ids)):
                cur = db._execute(
                    "UPDATE records SET last_accessed_at = ?, change_seq = ?"
                    f" WHERE id IN ({marks(len(chunk))}) AND {db._hint('space')} = ?"
                    f" AND last_accessed_at {moves} ?",
                    (at, seq, *chunk, space, at),
                )
                changed += cur.rowcount
    return changed, seq


def stored_sources(
    db: SQLBackend, space: str, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], str]:
    """The ids of the records already made from these ``(agent, source_id)`` pairs."""
    found: dict[tuple[str, str], str] = {}
    by_agent: dict[str, list[str]] = {}
    for agent, source in keys:
        by_agent.setdefault(agent, []).append(source)
    for agent, sources in by_agent.items():
        for chunk in chunks(sources):
            rows = db._query(
                "SELECT source_id, id FROM records WHERE space = ? AND agent = ?"
                f" AND source_id IN ({marks(len(chunk))})",
                (space, agent, *chunk),
            )
            found.update(((agent, r[0]), r[1]) for r in rows)
    return found


def get_records(db: SQLBackend, space: str, ids: Sequence[str]) -> list[Record]:
    rows = by_ids(db, f"SELECT {select_record} FROM records", space, ids)
    return [to_record(db, row) for row in rows]


def get_embedding(db: SQLBackend, space: str, record_id: str) -> F32 | None:
    rows = db._query(
        f"SELECT embedding FROM records WHERE id = ? AND {db._hint('space')} = ?",
        (record_id, space),
    )
    return vector_from_blob(rows[0][0]) if rows else None


def iter_records(db: SQLBackend, space: str) -> Iterator[StoredRecord]:
    columns = f"{select_record}, embedding, passages"
    for row in in_insertion_order(db, columns, "records", space):
        vector = vector_from_blob(row[-2])
        width = None if vector is None else vector.shape[0]
        yield StoredRecord(
            record=to_record(db, row[:-2]),
            embedding=vector,
            passages=passages_from_blob(row[-1], width, db.location),
        )


def existing_ids(db: SQLBackend, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunks(list(ids)):
        rows = db._query(f"SELECT id FROM records WHERE id IN ({marks(len(chunk))})", chunk)
        found.update(r[0] for r in rows)
    return found


def agents(db: SQLBackend, space: str) -> list[str]:
    rows = db._query("SELECT agent FROM agents WHERE space = ?", (space,))
    return sorted(r[0] for r in rows)  # code-point order on every store, whatever the collation


def accumulated_importance(db: SQLBackend, space: str, agent: str) -> float:
    rows = db._query(
        "SELECT importance_accumulated FROM agents WHERE space = ? AND agent = ?",
        (space, agent),
    )
    return float(rows[0][0]) if rows else 0.0


def set_accumulated_importance(db: SQLBackend, space: str, agent: str, value: float) -> None:
    with db.write():
        db._execute("INSERT INTO spaces (space) VALUES (?) ON CONFLICT DO NOTHING", (space,))
        db._execute(
            "INSERT INTO agents (space, agent, importance_accumulated) VALUES (?, ?, ?)"
            " ON CONFLICT (space, agent) DO UPDATE SET importance_accumulated = excluded."
            "importance_accumulated",
            (space, agent, value),
        )
