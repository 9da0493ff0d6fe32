"""A switch to another embedding model, online (docs/design/reembed.md): the new model's
vectors wait in ``reembed_vectors`` beside the store's own until one cut-over transaction
copies them over and records the new model. Store-wide: every space's records and events."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from chronomem.errors import ConflictError
from chronomem.stores.reembedding import Pending, PendingVector, ReembedState
from chronomem.stores.sql.backend import SQLBackend, bump, put_meta, vector_blob

__all__ = ["cancel", "cut_over", "pending", "put", "start", "state", "todo"]

_KEY = "reembed"
_MISSING = (
    " NOT EXISTS (SELECT 1 FROM reembed_vectors v WHERE v.kind = '{kind}' AND v.pk = {alias}.pk)"
)


def state(db: SQLBackend) -> ReembedState | None:
    """The switch in progress, with how far it is; ``None``: none."""
    rows = db._query("SELECT value FROM store_meta WHERE key = ?", (_KEY,))
    if not rows:
        return None
    target: dict[str, Any] = json.loads(rows[0][0])
    counts = dict(db._query("SELECT kind, COUNT(*) FROM reembed_vectors GROUP BY kind"))
    (records,), (events,) = (
        db._query("SELECT COUNT(*) FROM records")[0],
        db._query("SELECT COUNT(*) FROM events WHERE embedding IS NOT NULL")[0],
    )
    return ReembedState(
        model=str(target["model"]),
        dim=int(target["dim"]),
        started=str(target["started"]),
        done=int(counts.get("r", 0)) + int(counts.get("e", 0)),
        total=int(records) + int(events),
    )


def start(db: SQLBackend, model: str, dim: int, started: str) -> None:
    """Record the target, or continue a switch to the same one (another is refused)."""
    with db.write():
        rows = db._execute("SELECT value FROM store_meta WHERE key = ?", (_KEY,)).fetchall()
        if rows:
            target = json.loads(rows[0][0])
            if (target["model"], int(target["dim"])) != (model, dim):
                raise ConflictError(
                    f"{db.location} is switching to {target['model']!r} (dimension "
                    f"{target['dim']}) since {target['started']}; finish that switch, or cancel "
                    f"it (Memory.cancel_reembed, chronomem reembed --cancel), before another"
                )
            return
        put_meta(db, _KEY, json.dumps({"model": model, "dim": dim, "started": started}))


def todo(db: SQLBackend, limit: int | None) -> list[Pending]:
    """Up to ``limit`` records and events (``None``: all) still without the new model's
    vector, in key order: every record, and every event that has a vector."""
    cap = "" if limit is None else f" LIMIT {int(limit)}"
    records = db._query(
        "SELECT r.pk, r.text, r.speaker, r.passages IS NOT NULL FROM records r WHERE"
        + _MISSING.format(kind="r", alias="r")
        + " ORDER BY r.pk"
        + cap
    )
    out = [
        Pending(kind="r", pk=int(pk), text=t, speaker=s, passages=bool(p))
        for pk, t, s, p in records
    ]
    if limit is not None and len(out) >= limit:
        return out
    events = db._query(
        "SELECT e.pk, e.text FROM events e WHERE e.embedding IS NOT NULL AND"
        + _MISSING.format(kind="e", alias="e")
        + " ORDER BY e.pk"
        + ("" if limit is None else f" LIMIT {int(limit) - len(out)}")
    )
    return out + [
        Pending(kind="e", pk=int(pk), text=t, speaker=None, passages=False) for pk, t in events
    ]


def _insert(db: SQLBackend, rows: Sequence[PendingVector]) -> None:
    # Only for rows that still exist: a record purged meanwhile leaves no vector behind.
    for kind, table in (("r", "records"), ("e", "events")):
        db._executemany(
            "INSERT INTO reembed_vectors (kind, pk, embedding, passages)"
            f" SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM {table} WHERE pk = ?)"
            " ON CONFLICT (kind, pk) DO NOTHING",
            [
                (kind, r.pk, vector_blob(r.embedding), vector_blob(r.passages), r.pk)
                for r in rows
                if r.kind == kind
            ],
        )


def put(db: SQLBackend, rows: Sequence[PendingVector]) -> None:
    """Store a batch of the new model's vectors, in one transaction."""
    if rows:
        with db.write():
            _insert(db, rows)


def pending(db: SQLBackend) -> int:
    return int(db._query("SELECT COUNT(*) FROM reembed_vectors")[0][0])


def cut_over(
    db: SQLBackend,
    model: str,
    dim: int,
    stragglers: Callable[[list[Pending]], list[PendingVector]],
) -> int:
    """In one write transaction: embed what was written since the last batch (``stragglers``),
    copy every pending vector over the store's, record the new model and dimension, drop the
    pending rows and the target, and bump every space (their arrays reload). Returns how many
    stragglers it embedded."""
    with db.write():
        # First the model (waits for writes of old vectors in flight: check_vector_model), then
        # every space (their writers wait for the cut-over), then what was written meanwhile.
        put_meta(db, "embedding_model", model)
        put_meta(db, "embedding_dim", str(dim))
        seqs = [
            (space, bump(db, space, graph=True))
            for (space,) in db._query("SELECT space FROM spaces ORDER BY space")
        ]
        rest = todo(db, None)
        _insert(db, stragglers(rest) if rest else [])
        for space, seq in seqs:
            db._execute(
                "UPDATE records SET"
                " embedding = (SELECT v.embedding FROM reembed_vectors v"
                "  WHERE v.kind = 'r' AND v.pk = records.pk),"
                " passages = (SELECT v.passages FROM reembed_vectors v"
                "  WHERE v.kind = 'r' AND v.pk = records.pk),"
                f" change_seq = ? WHERE {db._hint('space')} = ?",
                (seq, space),
            )
        db._execute(
            "UPDATE events SET embedding = (SELECT v.embedding FROM reembed_vectors v"
            " WHERE v.kind = 'e' AND v.pk = events.pk) WHERE embedding IS NOT NULL"
        )
        put_meta(db, _KEY, None)
        db._execute("DELETE FROM reembed_vectors")
        db._vectors_replaced(dim)
    return len(rest)


def cancel(db: SQLBackend) -> int:
    """Drop a switch in progress and its vectors; returns how many vectors were dropped."""
    with db.write():
        dropped = int(db._execute("SELECT COUNT(*) FROM reembed_vectors").fetchone()[0])
        db._execute("DELETE FROM reembed_vectors")
        put_meta(db, _KEY, None)
    return dropped
