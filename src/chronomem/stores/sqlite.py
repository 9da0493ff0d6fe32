"""The embedded store: one SQLite file in WAL mode (DESIGN §6).

Durability: every write method is one ``BEGIN IMMEDIATE`` transaction. With the default
``synchronous=FULL`` a write that returned survives the process being killed and the machine losing
power; ``synchronous="NORMAL"`` keeps it safe against a killed process only, and is faster.

Several processes may open the same file. Writers are serialised by SQLite; each change bumps the
space's ``change_seq`` so other processes' in-memory arrays can fetch exactly what changed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.clock import from_micros, to_micros
from chronomem.errors import ConflictError, StoreError
from chronomem.model.audit import AuditEntry, Closure
from chronomem.model.event import Event, EventKind, Link, Provenance
from chronomem.model.record import EvidenceStatus, Kind, Record, Sensitivity, Status
from chronomem.stores.base import (
    NEVER,
    SINCE_EVER,
    EmbeddingMeta,
    LexicalMatches,
    RecordColumns,
    StoredRecord,
)
from chronomem.stores.sqlite_schema import MIGRATIONS
from chronomem.text import query_terms

__all__ = ["SQLiteStore"]

_RECORD_COLUMNS = (
    "id",
    "space",
    "agent",
    "kind",
    "text",
    "importance",
    "occurred_at",
    "recorded_at",
    "last_accessed_at",
    "last_verified_at",
    "valid_from",
    "valid_until",
    "status",
    "superseded_by",
    "superseded_at",
    "valid_until_before",
    "closed_reason",
    "supersedes",
    "domain",
    "tags",
    "metadata",
    "evidence",
    "depth",
    "event_id",
    "sensitivity",
    "evidence_status",
    "feedback_score",
)
_SELECT_RECORD = ", ".join(_RECORD_COLUMNS) + ", embedding IS NOT NULL"
_INSERT_RECORD = (
    "INSERT INTO records ("
    + ", ".join((*_RECORD_COLUMNS, "embedding", "change_seq"))
    + ") VALUES ("
    + ", ".join("?" for _ in range(len(_RECORD_COLUMNS) + 2))
    + ")"
)
_COLUMNS_SELECT = f"""SELECT pk, id, agent, kind, text, importance, recorded_at, last_accessed_at,
    COALESCE(last_verified_at, {SINCE_EVER}), COALESCE(valid_from, {SINCE_EVER}),
    COALESCE(valid_until, {NEVER}), COALESCE(superseded_at, {NEVER}), feedback_score,
    COALESCE(CASE WHEN superseded_at IS NULL THEN valid_until ELSE valid_until_before END, {NEVER}),
    domain, event_id, embedding
    FROM records"""
_CHUNK = 900  # ids per IN (...) list
# A unary "+" before a column (``+space``) keeps SQLite from driving a lookup by id or key through
# the (space, ...) indexes: without statistics it takes "space = ?" for selective, and a 30-id
# fetch becomes a scan of the whole space.


def _opt_us(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def _opt_dt(value: int | None) -> datetime | None:
    return None if value is None else from_micros(value)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _record_params(record: Record) -> tuple[Any, ...]:
    return (
        record.id,
        record.space,
        record.agent,
        record.kind.value,
        record.text,
        float(record.importance),
        to_micros(record.occurred_at),
        to_micros(record.recorded_at),
        to_micros(record.last_accessed_at),
        _opt_us(record.last_verified_at),
        _opt_us(record.valid_from),
        _opt_us(record.valid_until),
        record.status.value,
        record.superseded_by,
        _opt_us(record.superseded_at),
        _opt_us(record.valid_until_before),
        record.closed_reason,
        _json(list(record.supersedes)),
        record.domain,
        _json(list(record.tags)),
        _json(dict(record.metadata)),
        _json(list(record.evidence)),
        record.depth,
        record.event_id,
        record.sensitivity.value,
        record.evidence_status.value,
        float(record.feedback_score),
    )


_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}
_SENSITIVITIES = {s.value: s for s in Sensitivity}
_EVIDENCE_STATUSES = {s.value: s for s in EvidenceStatus}


def _json_tuple(text: str) -> tuple[Any, ...]:
    return () if text == "[]" else tuple(json.loads(text))


def _row_to_record(row: Sequence[Any]) -> Record:
    (
        rid, space, agent, kind, text, importance, occurred_at, recorded_at, last_accessed_at,
        last_verified_at, valid_from, valid_until, status, superseded_by, superseded_at,
        valid_until_before, closed_reason, supersedes, domain, tags, metadata, evidence, depth,
        event_id, sensitivity, evidence_status, feedback_score, has_embedding,
    ) = row  # fmt: skip
    return Record(
        id=rid,
        space=space,
        agent=agent,
        kind=_KINDS[kind],
        text=text,
        importance=importance,
        occurred_at=from_micros(occurred_at),
        recorded_at=from_micros(recorded_at),
        last_accessed_at=from_micros(last_accessed_at),
        last_verified_at=_opt_dt(last_verified_at),
        valid_from=_opt_dt(valid_from),
        valid_until=_opt_dt(valid_until),
        status=_STATUSES[status],
        superseded_by=superseded_by,
        superseded_at=_opt_dt(superseded_at),
        valid_until_before=_opt_dt(valid_until_before),
        closed_reason=closed_reason,
        supersedes=_json_tuple(supersedes),
        domain=domain,
        tags=_json_tuple(tags),
        metadata={} if metadata == "{}" else json.loads(metadata),
        evidence=_json_tuple(evidence),
        depth=depth,
        event_id=event_id,
        sensitivity=_SENSITIVITIES[sensitivity],
        evidence_status=_EVIDENCE_STATUSES[evidence_status],
        feedback_score=feedback_score,
        has_embedding=bool(has_embedding),
    )


_EVENT_COLUMNS = (
    "id, space, text, kind, scope, occurred_at, recorded_at, metadata, embedding IS NOT NULL"
)
_LINK_COLUMNS = "cause, effect, weight, provenance, similarity, created_at"


def _row_to_event(row: Sequence[Any]) -> Event:
    rid, space, text, kind, scope, occurred_at, recorded_at, metadata, has = row
    return Event(
        id=rid,
        space=space,
        text=text,
        kind=EventKind(kind),
        scope=scope,
        occurred_at=from_micros(occurred_at),
        recorded_at=from_micros(recorded_at),
        metadata={} if metadata == "{}" else json.loads(metadata),
        has_embedding=bool(has),
    )


def _row_to_link(row: Sequence[Any]) -> Link:
    cause, effect, weight, provenance, similarity, created_at = row
    return Link(
        cause=cause,
        effect=effect,
        weight=weight,
        provenance=Provenance(provenance),
        similarity=similarity,
        created_at=from_micros(created_at),
    )


def _vector_blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _placeholders(n: int) -> str:
    return ", ".join("?" for _ in range(n))


class SQLiteStore:
    """A :class:`~chronomem.stores.base.MemoryStore` over one SQLite file.

    Args:
        path: the database file; created (with its schema) when missing. ``":memory:"`` gives
            a private in-memory database (for experiments; nothing is durable).
        synchronous: ``"FULL"`` (default: durable across power loss) or ``"NORMAL"`` (durable
            across a killed process; faster writes).
        busy_timeout_s: how long a writer waits for another process's transaction.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "FULL", busy_timeout_s: float = 30
    ) -> None:
        if synchronous.upper() not in {"FULL", "NORMAL", "EXTRA"}:
            raise StoreError(f"synchronous must be FULL, NORMAL or EXTRA; got {synchronous!r}")
        self.path = Path(path)
        self.location = str(self.path)
        self._lock = threading.RLock()
        self._in_transaction = False
        try:
            self._conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_s,
            )
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            in_memory = self.location == ":memory:"
            if str(mode).lower() != ("memory" if in_memory else "wal"):
                raise StoreError(f"{self.path}: could not switch to WAL mode (got {mode})")
            self._conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # Freed pages are overwritten with zeros: deleted text does not linger in the file.
            self._conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        self._migrate()

    # -- transactions ---------------------------------------------------------------------
    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._in_transaction:
                yield self._conn
                return
            try:
                self._conn.execute(begin)
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: cannot start a transaction: {exc}") from exc
            self._in_transaction = True
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._conn.execute("COMMIT")
            finally:
                self._in_transaction = False

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        try:
            with self._transaction("BEGIN IMMEDIATE") as conn:
                yield conn
        except sqlite3.IntegrityError as exc:
            raise ConflictError(f"{self.path}: write conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: write failed: {exc}") from exc

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._write():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        try:
            with self._transaction("BEGIN"):
                yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: read failed: {exc}") from exc

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: query failed: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            try:
                self._conn.execute("PRAGMA optimize")
                self._conn.close()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: close failed: {exc}") from exc

    # -- schema ---------------------------------------------------------------------------
    def _migrate(self) -> None:
        latest = MIGRATIONS[-1].version
        with self._write() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version ("
                " version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            current = conn.execute(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version"
            ).fetchone()[0]
            if current > latest:
                raise StoreError(
                    f"{self.path} has schema version {current}, newer than this chronomem "
                    f"understands ({latest}); upgrade chronomem"
                )
            for migration in MIGRATIONS:
                if migration.version <= current:
                    continue
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version (version, description, applied_at)"
                    " VALUES (?, ?, ?)",
                    (migration.version, migration.description, datetime.now(UTC).isoformat()),
                )

    def schema_version(self) -> int:
        return int(self._query("SELECT MAX(version) FROM schema_version")[0][0])

    def embedding_meta(self) -> EmbeddingMeta:
        rows = dict(self._query("SELECT key, value FROM store_meta"))
        dim = rows.get("embedding_dim")
        return EmbeddingMeta(
            model=rows.get("embedding_model"), dim=None if dim is None else int(dim)
        )

    def set_embedding_meta(self, meta: EmbeddingMeta) -> None:
        with self._write() as conn:
            row = conn.execute(
                "SELECT value FROM store_meta WHERE key = 'embedding_dim'"
            ).fetchone()
            if row is not None and row[0] is not None:
                raise StoreError(f"{self.path}: the embedding dimension is already set ({row[0]})")
            conn.executemany(
                "INSERT OR REPLACE INTO store_meta (key, value) VALUES (?, ?)",
                [
                    ("embedding_model", meta.model),
                    ("embedding_dim", None if meta.dim is None else str(meta.dim)),
                ],
            )

    # -- writes ---------------------------------------------------------------------------
    def _bump(self, conn: sqlite3.Connection, space: str) -> int:
        conn.execute("INSERT OR IGNORE INTO spaces (space) VALUES (?)", (space,))
        row = conn.execute(
            "UPDATE spaces SET change_seq = change_seq + 1 WHERE space = ? RETURNING change_seq",
            (space,),
        ).fetchone()
        return int(row[0])

    def insert_records(self, space: str, items: Sequence[StoredRecord]) -> None:
        if not items:
            return
        with self._write() as conn:
            seq = self._bump(conn, space)
            conn.executemany(
                "INSERT OR IGNORE INTO agents (space, agent) VALUES (?, ?)",
                sorted({(space, item.record.agent) for item in items}),
            )
            conn.executemany(
                _INSERT_RECORD,
                (
                    (*_record_params(item.record), _vector_blob(item.embedding), seq)
                    for item in items
                ),
            )
            # The reflection trigger (DESIGN §5): perceived importance accumulates per agent;
            # reflections themselves do not count.
            added: dict[str, float] = {}
            for item in items:
                if item.record.kind is not Kind.REFLECTION:
                    agent = item.record.agent
                    added[agent] = added.get(agent, 0.0) + float(item.record.importance)
            conn.executemany(
                "UPDATE agents SET importance_accumulated = importance_accumulated + ?"
                " WHERE space = ? AND agent = ?",
                [(amount, space, agent) for agent, amount in sorted(added.items())],
            )

    def touch(self, space: str, ids: Sequence[str], at_us: int) -> int:
        if not ids:
            return 0
        changed = 0
        with self._write() as conn:
            seq = self._bump(conn, space)
            for chunk in _chunks(list(ids)):
                cur = conn.execute(
                    "UPDATE records SET last_accessed_at = ?, change_seq = ?"
                    f" WHERE id IN ({_placeholders(len(chunk))}) AND +space = ?"
                    " AND last_accessed_at < ?",
                    (at_us, seq, *chunk, space, at_us),
                )
                changed += cur.rowcount
        return changed

    # -- reads ----------------------------------------------------------------------------
    def get_records(self, space: str, ids: Sequence[str]) -> list[Record]:
        found: dict[str, Record] = {}
        for chunk in _chunks(list(ids)):
            rows = self._query(
                f"SELECT {_SELECT_RECORD} FROM records"
                f" WHERE id IN ({_placeholders(len(chunk))}) AND +space = ?",
                (*chunk, space),
            )
            for row in rows:
                found[row[0]] = _row_to_record(row)
        return [found[i] for i in ids if i in found]

    def get_embedding(self, space: str, record_id: str) -> np.ndarray | None:
        rows = self._query(
            "SELECT embedding FROM records WHERE id = ? AND +space = ?", (record_id, space)
        )
        if not rows or rows[0][0] is None:
            return None
        return np.frombuffer(rows[0][0], dtype="<f4").astype(np.float32)

    def agents(self, space: str) -> list[str]:
        return [
            r[0]
            for r in self._query(
                "SELECT agent FROM agents WHERE space = ? ORDER BY agent", (space,)
            )
        ]

    def change_seq(self, space: str) -> int:
        rows = self._query("SELECT change_seq FROM spaces WHERE space = ?", (space,))
        return int(rows[0][0]) if rows else 0

    def load_columns(
        self, space: str, agents: Sequence[str], *, after_seq: int | None = None
    ) -> RecordColumns:
        sql = f"{_COLUMNS_SELECT} WHERE space = ? AND agent IN ({_placeholders(len(agents))})"
        params: list[Any] = [space, *agents]
        if after_seq is not None:
            sql += " AND change_seq > ?"
            params.append(after_seq)
        rows = self._query(sql + " ORDER BY pk", params) if agents else []
        return _columns(rows, self.path)

    def removed_since(self, space: str, after_seq: int) -> list[tuple[str, str]]:
        rows = self._query(
            "SELECT record_id, agent FROM tombstones WHERE space = ? AND change_seq > ?",
            (space, after_seq),
        )
        return [(r[0], r[1]) for r in rows]

    def lexical(self, space: str, agents: Sequence[str], query: str) -> LexicalMatches:
        terms = query_terms(query)
        if not terms or not agents:
            return LexicalMatches(pk=np.empty(0, np.int64), score=np.empty(0, np.float64))
        match = " OR ".join(f'"{term}"' for term in terms)
        # bm25() is lower-is-better; negate so that higher is better.
        rows = self._query(
            "SELECT r.pk, -bm25(records_fts) FROM records_fts"
            " JOIN records r ON r.pk = records_fts.rowid"
            f" WHERE records_fts MATCH ? AND +r.space = ?"
            f" AND +r.agent IN ({_placeholders(len(agents))})",
            (match, space, *agents),
        )
        if not rows:
            return LexicalMatches(pk=np.empty(0, np.int64), score=np.empty(0, np.float64))
        pk, score = zip(*rows, strict=True)
        return LexicalMatches(
            pk=np.asarray(pk, dtype=np.int64),
            score=np.maximum(np.asarray(score, dtype=np.float64), 0.0),
        )

    def iter_records(self, space: str) -> Iterator[StoredRecord]:
        last_pk = 0
        while True:
            rows = self._query(
                f"SELECT pk, {_SELECT_RECORD}, embedding FROM records"
                " WHERE pk > ? AND +space = ? ORDER BY pk LIMIT 1000",
                (last_pk, space),
            )
            if not rows:
                return
            for row in rows:
                blob = row[-1]
                vector = (
                    None if blob is None else np.frombuffer(blob, dtype="<f4").astype(np.float32)
                )
                yield StoredRecord(record=_row_to_record(row[1:-1]), embedding=vector)
            last_pk = rows[-1][0]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(list(ids)):
            rows = self._query(
                f"SELECT id FROM records WHERE id IN ({_placeholders(len(chunk))})", chunk
            )
            found.update(r[0] for r in rows)
        return found

    def stats(self, space: str) -> dict[str, Any]:
        meta = self.embedding_meta()
        by_agent = self._query(
            "SELECT agent, kind, COUNT(*) FROM records WHERE space = ? GROUP BY agent, kind"
            " ORDER BY agent, kind",
            (space,),
        )
        agents: dict[str, dict[str, int]] = {}
        for agent, kind, count in by_agent:
            agents.setdefault(agent, {})[kind] = count
        total = sum(sum(k.values()) for k in agents.values())
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
        return {
            "store": f"sqlite:{self.path}",
            "schema_version": self.schema_version(),
            "space": space,
            "records": total,
            "agents": agents,
            "embedding_model": meta.model,
            "embedding_dim": meta.dim,
            "bytes_on_disk": size,
        }

    # -- lifecycle ------------------------------------------------------------------------
    def close_records(self, space: str, closures: Sequence[Closure]) -> None:
        if not closures:
            return
        with self._write() as conn:
            seq = self._bump(conn, space)
            for c in closures:
                cur = conn.execute(
                    "UPDATE records SET status = ?, superseded_by = ?, superseded_at = ?,"
                    " valid_until = ?, valid_until_before = ?, closed_reason = ?, change_seq = ?"
                    " WHERE id = ? AND +space = ? AND status = 'open'",
                    (
                        c.status.value, c.superseded_by, to_micros(c.superseded_at),
                        _opt_us(c.valid_until), _opt_us(c.valid_until_before), c.reason, seq,
                        c.record_id, space,
                    ),
                )  # fmt: skip
                if cur.rowcount != 1:
                    raise ConflictError(
                        f"record {c.record_id} is no longer open (changed concurrently)",
                        record_id=c.record_id,
                    )

    def set_verified(self, space: str, record_id: str, at_us: int) -> None:
        with self._write() as conn:
            seq = self._bump(conn, space)
            conn.execute(
                "UPDATE records SET last_verified_at = MAX(COALESCE(last_verified_at, ?), ?),"
                " change_seq = ? WHERE id = ? AND +space = ?",
                (at_us, at_us, seq, record_id, space),
            )

    def add_feedback(self, space: str, record_id: str, signal: float) -> float:
        with self._write() as conn:
            seq = self._bump(conn, space)
            row = conn.execute(
                "UPDATE records SET feedback_score = feedback_score + ?, change_seq = ?"
                " WHERE id = ? AND +space = ? RETURNING feedback_score",
                (signal, seq, record_id, space),
            ).fetchone()
        return float(row[0])

    def dependants(self, space: str, record_id: str) -> list[tuple[str, str]]:
        rows = self._query(
            "SELECT r.id, 'cites it as evidence' FROM records r, json_each(r.evidence) e"
            " WHERE r.space = ? AND e.value = ?"
            " UNION ALL SELECT superseded_by, 'supersedes it' FROM records"
            " WHERE id = ? AND +space = ? AND superseded_by IS NOT NULL"
            " UNION ALL SELECT e.value, 'is superseded by it' FROM records r,"
            " json_each(r.supersedes) e WHERE r.id = ? AND +r.space = ?",
            (space, record_id, record_id, space, record_id, space),
        )
        return [(r[0], r[1]) for r in rows]

    def delete_records(self, space: str, ids: Sequence[str], *, purge: bool) -> None:
        if not ids:
            return
        with self._write() as conn:
            seq = self._bump(conn, space)
            for chunk in _chunks(list(ids)):
                marks = _placeholders(len(chunk))
                conn.execute(
                    "INSERT INTO tombstones (space, record_id, agent, change_seq) SELECT space,"
                    f" id, agent, ? FROM records WHERE id IN ({marks}) AND +space = ?",
                    (seq, *chunk, space),
                )
                # The FTS trigger removes the full-text entries; secure_delete zeroes the freed
                # bytes of the row (text, vector) in the pages it leaves.
                conn.execute(
                    f"DELETE FROM records WHERE id IN ({marks}) AND +space = ?", (*chunk, space)
                )
            if purge:
                # FTS5 records deletions as new segments; 'optimize' merges every segment into
                # one, dropping the deleted postings, and the old segment pages are freed (and
                # zeroed).
                conn.execute("INSERT INTO records_fts(records_fts) VALUES ('optimize')")

    def scrub(self) -> bool:
        with self._lock:
            try:
                busy = 1
                for _ in range(10):
                    busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    if not busy:
                        return True
                return False
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: checkpoint failed: {exc}") from exc

    def flag_evidence(self, space: str, cited_ids: Sequence[str], status: str) -> list[str]:
        if not cited_ids:
            return []
        # "missing" is the stronger flag: a record citing a purged record stays missing.
        weaker = "" if status == "evidence_missing" else " AND r.evidence_status = 'ok'"
        with self._write() as conn:
            rows = conn.execute(
                "SELECT DISTINCT r.id FROM records r, json_each(r.evidence) e"
                f" WHERE r.space = ? AND e.value IN ({_placeholders(len(cited_ids))}){weaker}",
                (space, *cited_ids),
            ).fetchall()
            flagged = [r[0] for r in rows]
            if flagged:
                seq = self._bump(conn, space)
                conn.executemany(
                    "UPDATE records SET evidence_status = ?, change_seq = ? WHERE id = ?",
                    [(status, seq, rid) for rid in flagged],
                )
        return flagged

    def append_audit(self, space: str, entries: Sequence[AuditEntry]) -> None:
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO audit_log (space, at, action, record_id, actor, reason, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (space, to_micros(e.at), e.action, e.record_id, e.actor, e.reason,
                     _json(dict(e.detail)))
                    for e in entries
                ],
            )  # fmt: skip

    def audit(self, space: str, record_id: str | None = None) -> list[AuditEntry]:
        sql = "SELECT seq, at, action, record_id, actor, reason, detail FROM audit_log"
        sql += " WHERE space = ?" + (" AND record_id = ?" if record_id else "") + " ORDER BY seq"
        rows = self._query(sql, (space, record_id) if record_id else (space,))
        return [
            AuditEntry(
                seq=r[0], at=from_micros(r[1]), action=r[2], record_id=r[3], actor=r[4],
                reason=r[5], detail=json.loads(r[6]),
            )
            for r in rows
        ]  # fmt: skip

    # -- reflection trigger -----------------------------------------------------------------
    def accumulated_importance(self, space: str, agent: str) -> float:
        rows = self._query(
            "SELECT importance_accumulated FROM agents WHERE space = ? AND agent = ?",
            (space, agent),
        )
        return float(rows[0][0]) if rows else 0.0

    def set_accumulated_importance(self, space: str, agent: str, value: float) -> None:
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO spaces (space) VALUES (?)", (space,))
            conn.execute(
                "INSERT INTO agents (space, agent, importance_accumulated) VALUES (?, ?, ?)"
                " ON CONFLICT (space, agent) DO UPDATE SET importance_accumulated = excluded."
                "importance_accumulated",
                (space, agent, value),
            )

    # -- causal graph ---------------------------------------------------------------------
    def insert_event(self, space: str, event: Event, embedding: np.ndarray | None) -> None:
        with self._write() as conn:
            self._bump(conn, space)
            conn.execute(
                "INSERT INTO events (id, space, text, kind, scope, occurred_at, recorded_at,"
                " metadata, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.id, space, event.text, event.kind.value, event.scope,
                    to_micros(event.occurred_at), to_micros(event.recorded_at),
                    _json(dict(event.metadata)), _vector_blob(embedding),
                ),
            )  # fmt: skip

    def get_events(self, space: str, ids: Sequence[str]) -> list[Event]:
        found: dict[str, Event] = {}
        for chunk in _chunks(list(ids)):
            rows = self._query(
                f"SELECT {_EVENT_COLUMNS} FROM events"
                f" WHERE id IN ({_placeholders(len(chunk))}) AND +space = ?",
                (*chunk, space),
            )
            found.update((row[0], _row_to_event(row)) for row in rows)
        return [found[i] for i in ids if i in found]

    def event_embeddings(self, space: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for chunk in _chunks(list(ids)):
            rows = self._query(
                f"SELECT id, embedding FROM events WHERE id IN ({_placeholders(len(chunk))})"
                " AND +space = ? AND embedding IS NOT NULL",
                (*chunk, space),
            )
            out.update((r[0], np.frombuffer(r[1], dtype="<f4").astype(np.float32)) for r in rows)
        return out

    def events_between(
        self, space: str, *, after_us: int, before_us: int, scope: str | None = None
    ) -> list[Event]:
        sql = (
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE space = ? AND occurred_at >= ?"
            " AND occurred_at < ?"
        )
        params: list[Any] = [space, after_us, before_us]
        if scope is not None:
            sql += " AND scope = ?"
            params.append(scope)
        return [_row_to_event(r) for r in self._query(sql + " ORDER BY occurred_at, id", params)]

    def put_link(self, space: str, link: Link) -> None:
        with self._write() as conn:
            self._bump(conn, space)
            conn.execute(
                "INSERT OR REPLACE INTO links (space, cause, effect, weight, provenance,"
                " similarity, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    space, link.cause, link.effect, link.weight, link.provenance.value,
                    link.similarity, to_micros(link.created_at),
                ),
            )  # fmt: skip

    def get_link(self, space: str, cause: str, effect: str) -> Link | None:
        rows = self._query(
            f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ? AND cause = ? AND effect = ?",
            (space, cause, effect),
        )
        return _row_to_link(rows[0]) if rows else None

    def delete_link(self, space: str, cause: str, effect: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "DELETE FROM links WHERE space = ? AND cause = ? AND effect = ?",
                (space, cause, effect),
            )
            if cur.rowcount:
                self._bump(conn, space)
        return cur.rowcount > 0

    def links(self, space: str, *, as_of_us: int | None = None) -> list[Link]:
        sql = f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ?"
        params: list[Any] = [space]
        if as_of_us is not None:
            sql += " AND created_at <= ?"
            params.append(as_of_us)
        return [_row_to_link(r) for r in self._query(sql + " ORDER BY cause, effect", params)]


def _columns(rows: list[Any], path: Path) -> RecordColumns:
    n = len(rows)
    if n == 0:
        empty_i = np.empty(0, np.int64)
        return RecordColumns(
            pk=empty_i, ids=[], agents=[], kinds=[], texts=[],
            importance=np.empty(0, np.float64), recorded_at=empty_i, last_accessed_at=empty_i,
            last_verified_at=empty_i, valid_from=empty_i, valid_until=empty_i,
            superseded_at=empty_i, feedback_score=np.empty(0, np.float64),
            valid_until_before=empty_i, domains=[], event_ids=[],
            has_embedding=np.empty(0, np.bool_), embeddings=None,
        )  # fmt: skip
    cols = list(zip(*rows, strict=True))
    blobs: tuple[bytes | None, ...] = cols[16]
    has = np.fromiter((b is not None for b in blobs), dtype=np.bool_, count=n)
    embeddings = None
    if has.any():
        sizes = {len(b) for b in blobs if b is not None}
        if len(sizes) != 1:
            raise StoreError(f"{path}: stored embeddings have mixed dimensions {sorted(sizes)}")
        zero = bytes(sizes.pop())
        buf = b"".join(b if b is not None else zero for b in blobs)
        embeddings = np.frombuffer(buf, dtype="<f4").reshape(n, -1).astype(np.float32)
    return RecordColumns(
        pk=np.asarray(cols[0], dtype=np.int64),
        ids=list(cols[1]),
        agents=list(cols[2]),
        kinds=list(cols[3]),
        texts=list(cols[4]),
        importance=np.asarray(cols[5], dtype=np.float64),
        recorded_at=np.asarray(cols[6], dtype=np.int64),
        last_accessed_at=np.asarray(cols[7], dtype=np.int64),
        last_verified_at=np.asarray(cols[8], dtype=np.int64),
        valid_from=np.asarray(cols[9], dtype=np.int64),
        valid_until=np.asarray(cols[10], dtype=np.int64),
        superseded_at=np.asarray(cols[11], dtype=np.int64),
        feedback_score=np.asarray(cols[12], dtype=np.float64),
        valid_until_before=np.asarray(cols[13], dtype=np.int64),
        domains=list(cols[14]),
        event_ids=list(cols[15]),
        has_embedding=has,
        embeddings=embeddings,
    )
