"""The columnar feed of the in-memory scoring arrays (``retrieval/index.py``): every record of
some agents, or only those changed after a ``change_seq``, and the tombstones of deletions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from chronomem.arrays import I64
from chronomem.errors import StoreError
from chronomem.model.record import EMBEDDING_KEY, Status
from chronomem.stores.base import NEVER, SINCE_EVER, RecordColumns
from chronomem.stores.sql.backend import SQLBackend, marks, passages_from_blob
from chronomem.text import spoken

__all__ = ["change_seq", "load_columns", "removed_since"]


def change_seq(db: SQLBackend, space: str) -> int:
    rows = db._query("SELECT change_seq FROM spaces WHERE space = ?", (space,))
    return int(rows[0][0]) if rows else 0


def load_columns(
    db: SQLBackend, space: str, agents: Sequence[str], *, after_seq: int | None = None
) -> RecordColumns:
    if not agents:
        return _columns([], db.location)
    us = db._us
    sql = (
        f"SELECT pk, id, agent, kind, text, importance, {us('recorded_at')},"
        f" {us('last_accessed_at')}, COALESCE({us('last_verified_at')}, {SINCE_EVER}),"
        f" COALESCE({us('valid_from')}, {SINCE_EVER}), COALESCE({us('valid_until')}, {NEVER}),"
        f" COALESCE({us('superseded_at')}, {NEVER}), feedback_score,"
        f" COALESCE(CASE WHEN superseded_at IS NULL THEN {us('valid_until')}"
        f" ELSE {us('valid_until_before')} END, {NEVER}),"
        f" domain, event_id, embedding, passages,"
        f" NULLIF(metadata, '{{}}'), {us('occurred_at')}, speaker, NULLIF(tags, '[]'),"
        f" sensitivity, status, session, COALESCE({us('expires_at')}, {NEVER}) FROM records"
        f" WHERE space = ? AND agent IN ({marks(len(agents))})"
    )
    params: list[Any] = [space, *agents]
    if after_seq is None:
        return _columns(db._query(sql + " ORDER BY pk", params), db.location)
    # A few changed rows, found through (space, agent, change_seq) and ordered here: asking the
    # database for pk order lets a planner without statistics walk the agent's index.
    rows = db._query(sql + " AND change_seq > ?", [*params, after_seq])
    return _columns(sorted(rows, key=lambda row: row[0]), db.location)


def removed_since(db: SQLBackend, space: str, after_seq: int) -> list[tuple[str, str]]:
    rows = db._query(
        "SELECT record_id, agent FROM tombstones WHERE space = ? AND change_seq > ?",
        (space, after_seq),
    )
    return [(r[0], r[1]) for r in rows]


def _columns(rows: list[Any], location: str) -> RecordColumns:
    n = len(rows)
    if n == 0:
        empty_i = np.empty(0, np.int64)
        return RecordColumns(
            pk=empty_i, ids=[], agents=[], kinds=[], texts=[],
            importance=np.empty(0, np.float64), recorded_at=empty_i, occurred_at=empty_i,
            last_accessed_at=empty_i,
            last_verified_at=empty_i, valid_from=empty_i, valid_until=empty_i,
            superseded_at=empty_i, feedback_score=np.empty(0, np.float64),
            valid_until_before=empty_i, domains=[], event_ids=[],
            has_embedding=np.empty(0, np.bool_), embeddings=None, passages=[],
            embedding_keys=[], tags=[], metadata=[], sensitivity=[], status=[], sessions=[],
            speakers=[],
        )  # fmt: skip
    cols = list(zip(*rows, strict=True))
    blobs = [None if b is None else bytes(b) for b in cols[16]]
    has = np.fromiter((b is not None for b in blobs), dtype=np.bool_, count=n)
    embeddings = None
    if has.any():
        sizes = {len(b) for b in blobs if b is not None}
        if len(sizes) != 1:
            raise StoreError(f"{location}: stored embeddings have mixed dimensions {sorted(sizes)}")
        zero = bytes(sizes.pop())
        buf = b"".join(b if b is not None else zero for b in blobs)
        embeddings = np.frombuffer(buf, dtype="<f4").reshape(n, -1).astype(np.float32)
    dim = None if embeddings is None else embeddings.shape[1]
    superseded_at = np.asarray(cols[11], dtype=np.int64)
    valid_until = np.asarray(cols[10], dtype=np.int64)
    status = list(cols[23])
    _expire(np.asarray(cols[25], dtype=np.int64), superseded_at, valid_until, status)
    return RecordColumns(
        pk=np.asarray(cols[0], dtype=np.int64),
        ids=list(cols[1]),
        agents=list(cols[2]),
        kinds=list(cols[3]),
        texts=[spoken(t, who) for t, who in zip(cols[4], cols[20], strict=True)],
        importance=np.asarray(cols[5], dtype=np.float64),
        recorded_at=np.asarray(cols[6], dtype=np.int64),
        occurred_at=np.asarray(cols[19], dtype=np.int64),
        last_accessed_at=np.asarray(cols[7], dtype=np.int64),
        last_verified_at=np.asarray(cols[8], dtype=np.int64),
        valid_from=np.asarray(cols[9], dtype=np.int64),
        valid_until=valid_until,
        superseded_at=superseded_at,
        feedback_score=np.asarray(cols[12], dtype=np.float64),
        valid_until_before=np.asarray(cols[13], dtype=np.int64),
        domains=list(cols[14]),
        event_ids=list(cols[15]),
        has_embedding=has,
        embeddings=embeddings,
        passages=[passages_from_blob(b, dim, location) for b in cols[17]],
        embedding_keys=[_embedding_key(m) for m in cols[18]],
        tags=list(cols[21]),
        metadata=list(cols[18]),
        sensitivity=list(cols[22]),
        status=status,
        sessions=list(cols[24]),
        speakers=list(cols[20]),
    )


def _expire(expires_at: I64, superseded_at: I64, valid_until: I64, status: list[str]) -> None:
    """An open record with a time to live, as every read treats it: closed at its expiry, its
    window ending there (``valid_until_before``, the window before the close, is its stored end).
    The close the next write stores (``lifecycle.rules.expiry_closures``) writes these values."""
    expiring = np.flatnonzero((expires_at < NEVER) & (superseded_at == NEVER))
    if expiring.size == 0:
        return
    superseded_at[expiring] = expires_at[expiring]
    valid_until[expiring] = np.minimum(valid_until[expiring], expires_at[expiring])
    for row in expiring.tolist():
        status[row] = Status.CLOSED.value


def _embedding_key(metadata: str | None) -> str | None:
    """``metadata[EMBEDDING_KEY]`` of a row (parsed only where the metadata mentions it)."""
    if metadata is None or EMBEDDING_KEY not in metadata:
        return None
    key = json.loads(metadata).get(EMBEDDING_KEY)
    return key if isinstance(key, str) else None
