"""The SQL both stores share (STYLE: one SQL layer, small dialect hooks).

:class:`SQLStore` implements the whole :class:`~chronomem.stores.base.MemoryStore` contract with
``?`` placeholders; a backend subclass provides the connection, its transactions and error types,
its migrations, full-text search, and a handful of dialect hooks:

- ``_hint(column)``: keeps the planner on the primary key when a query names a space (SQLite's
  unary ``+``; nothing in PostgreSQL);
- ``_us(column)`` / ``_bind(micros)`` / ``_read(value)``: instants as stored (INTEGER
  microseconds in SQLite, ``timestamptz`` in PostgreSQL);
- ``_json_each(expression)``: expands a JSON array column into rows with a ``value`` column;
- ``_greatest(a, b)``: the larger of two values.

Full text is shared too: chronomem's analyser (``chronomem.text``) turns each record's text into
terms, kept in a ``postings`` table (term, record, term frequency, document length) with
per-space totals in ``spaces``; :meth:`SQLStore.lexical` reads the postings of the query terms and
computes BM25 in numpy. Both stores therefore match and score exactly the same way.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from chronomem.clock import from_micros, to_micros
from chronomem.errors import ConflictError, StoreError
from chronomem.model.audit import AuditEntry, Closure
from chronomem.model.event import Event, EventKind, Link, Provenance
from chronomem.model.record import EvidenceStatus, Kind, Record, Sensitivity, Status
from chronomem.stores.base import (
    F64,
    I64,
    NEVER,
    SINCE_EVER,
    EmbeddingMeta,
    LexicalMatches,
    RecordColumns,
    StoredRecord,
)
from chronomem.text import ANALYSER, index_terms, query_terms

__all__ = ["RECORD_COLUMNS", "Cursor", "Migration", "SQLStore"]

RECORD_COLUMNS = (
    "id", "space", "agent", "kind", "text", "importance", "occurred_at", "recorded_at",
    "last_accessed_at", "last_verified_at", "valid_from", "valid_until", "status",
    "superseded_by", "superseded_at", "valid_until_before", "closed_reason", "supersedes",
    "domain", "tags", "metadata", "evidence", "depth", "event_id", "sensitivity",
    "evidence_status", "feedback_score",
)  # fmt: skip
_INSTANTS = frozenset(
    {"occurred_at", "recorded_at", "last_accessed_at", "last_verified_at", "valid_from",
     "valid_until", "superseded_at", "valid_until_before"}
)  # fmt: skip
_CHUNK = 900  # ids per IN (...) list
_KINDS = {k.value: k for k in Kind}
_STATUSES = {s.value: s for s in Status}
_SENSITIVITIES = {s.value: s for s in Sensitivity}
_EVIDENCE_STATUSES = {s.value: s for s in EvidenceStatus}
_EVENT_COLUMNS = (
    "id, space, text, kind, scope, occurred_at, recorded_at, metadata, embedding IS NOT NULL"
)
_LINK_COLUMNS = "cause, effect, weight, provenance, similarity, created_at"
# BM25 with Lucene's parameters and its always-positive IDF, ln(1 + (N - df + 0.5) / (df + 0.5)).
_BM25_K1 = 1.2
_BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class Migration:
    """A numbered schema step: statements run in one transaction, recorded in
    ``schema_version``. Never edit a released migration; append a new one."""

    version: int
    description: str
    statements: tuple[str, ...]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_tuple(text: str) -> tuple[Any, ...]:
    return () if text == "[]" else tuple(json.loads(text))


def _vector_blob(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.asarray(vector, dtype="<f4").tobytes()


def _vector(blob: Any) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(bytes(blob), dtype="<f4").astype(np.float32)


def _passages(blob: Any, dim: int | None, location: str) -> np.ndarray | None:
    """A record's passage vectors, one row each, from their concatenated float32 bytes."""
    flat = _vector(blob)
    if flat is None or dim is None:
        return None
    if flat.shape[0] % dim:
        raise StoreError(
            f"{location}: passage vectors of {flat.shape[0]} floats are not {dim}-wide"
        )
    return flat.reshape(-1, dim)


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


_Posting = tuple[str, str, int, str, int, int]


def _posting_rows(space: str, pk: int, agent: str, terms: Sequence[str]) -> list[_Posting]:
    """``(space, term, pk, agent, tf, dl)`` for each distinct term of one document."""
    return [(space, term, pk, agent, tf, len(terms)) for term, tf in Counter(terms).items()]


class SQLStore:
    """The shared implementation; see the module docstring for what a backend provides."""

    location: str
    migrations: tuple[Migration, ...]
    _begin_write = "BEGIN"
    _begin_read = "BEGIN"

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._in_transaction = False

    # -- what a backend provides -----------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        raise NotImplementedError

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _is_conflict(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _is_db_error(self, exc: Exception) -> bool:
        raise NotImplementedError

    def _hint(self, column: str) -> str:
        return column

    def _us(self, column: str) -> str:
        """An SQL expression giving the instant column as integer microseconds."""
        return column

    def _bind(self, micros: int | None) -> Any:
        """The parameter value for an instant given in microseconds."""
        return micros

    def _read(self, value: Any) -> int | None:
        """Microseconds from a stored instant."""
        return None if value is None else int(value)

    def _json_each(self, expression: str) -> str:
        raise NotImplementedError

    def _greatest(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})"

    def _has_table(self, name: str) -> bool:
        """Whether the table exists (asked instead of ``CREATE TABLE IF NOT EXISTS``, which needs
        the privilege to create even when there is nothing to create)."""
        raise NotImplementedError

    def _index_vectors(self, space: str, rows: Sequence[tuple[int, str, np.ndarray]]) -> None:
        """Called in the write transaction with each new record's key, agent and vector: a
        backend with a vector index adds them (purge removes them by cascade)."""

    def nearest(
        self, space: str, agents: Sequence[str], vector: np.ndarray, *, namespace: int, k: int
    ) -> I64 | None:
        return None

    def scrub(self) -> str | None:
        raise NotImplementedError

    def _bytes_on_disk(self) -> int:
        raise NotImplementedError

    # -- transactions ----------------------------------------------------------------------
    def _translate(self, exc: Exception, what: str) -> Exception:
        if self._is_conflict(exc):
            return ConflictError(f"{self.location}: {what} conflicts with stored data: {exc}")
        return StoreError(f"{self.location}: {what} failed: {exc}")

    @contextmanager
    def _transaction(self, begin: str, what: str) -> Iterator[None]:
        with self._lock:
            if self._in_transaction:
                yield
                return
            try:
                self._execute(begin)
            except Exception as exc:
                if self._is_db_error(exc):
                    raise StoreError(f"{self.location}: cannot start a transaction: {exc}") from exc
                raise
            self._in_transaction = True
            try:
                yield
            except BaseException as exc:
                self._execute("ROLLBACK")
                if isinstance(exc, Exception) and self._is_db_error(exc):
                    raise self._translate(exc, what) from exc
                raise
            else:
                try:
                    self._execute("COMMIT")
                except Exception as exc:
                    if self._is_db_error(exc):
                        raise self._translate(exc, what) from exc
                    raise
            finally:
                self._in_transaction = False

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._transaction(self._begin_write, "write"):
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._transaction(self._begin_read, "read"):
            yield

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._execute(sql, params).fetchall()
            except Exception as exc:
                if self._is_db_error(exc):
                    raise self._translate(exc, "query") from exc
                raise

    # -- schema ----------------------------------------------------------------------------
    def _migrate(self) -> None:
        latest = self.migrations[-1].version
        with self.write():
            if not self._has_table("schema_version"):
                self._execute(
                    "CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                    " description TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
            current = self._execute(
                "SELECT COALESCE(MAX(version), 0) FROM schema_version"
            ).fetchone()[0]
            if current > latest:
                raise StoreError(
                    f"{self.location} has schema version {current}, newer than this chronomem "
                    f"understands ({latest}); upgrade chronomem"
                )
            for migration in self.migrations:
                if migration.version <= current:
                    continue
                for statement in migration.statements:
                    self._execute(statement)
                self._execute(
                    "INSERT INTO schema_version (version, description, applied_at)"
                    " VALUES (?, ?, ?)",
                    (migration.version, migration.description, datetime.now(UTC).isoformat()),
                )
            row = self._execute("SELECT value FROM store_meta WHERE key = 'analyser'").fetchone()
            if row is None or row[0] != ANALYSER:
                self.reindex_full_text()

    def reindex_full_text(self) -> None:
        """Rebuild every posting and per-space total with this version's analyser (run on open
        when the store was indexed by another analyser, and by the migration that introduced the
        postings)."""
        with self.write():
            self._execute("DELETE FROM postings")
            self._execute("UPDATE spaces SET docs = 0, doc_len_sum = 0")
            last_pk = 0
            while True:
                rows = self._execute(
                    "SELECT pk, space, agent, text FROM records WHERE pk > ?"
                    " ORDER BY pk LIMIT 5000",
                    (last_pk,),
                ).fetchall()
                if not rows:
                    break
                terms = [index_terms(r[3]) for r in rows]
                self._executemany(
                    "UPDATE records SET doc_len = ? WHERE pk = ?",
                    [(len(t), r[0]) for r, t in zip(rows, terms, strict=True)],
                )
                self._insert_postings(
                    _posting_rows(space, pk, agent, t)
                    for (pk, space, agent, _), t in zip(rows, terms, strict=True)
                )
                last_pk = rows[-1][0]
            self._execute(
                "UPDATE spaces SET docs = (SELECT COUNT(*) FROM records r WHERE r.space ="
                " spaces.space), doc_len_sum = (SELECT COALESCE(SUM(doc_len), 0) FROM records r"
                " WHERE r.space = spaces.space)"
            )
            self._execute(
                "INSERT INTO store_meta (key, value) VALUES ('analyser', ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (ANALYSER,),
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
        with self.write():
            row = self._execute(
                "SELECT value FROM store_meta WHERE key = 'embedding_dim'"
            ).fetchone()
            if row is not None and row[0] is not None:
                raise StoreError(
                    f"{self.location}: the embedding dimension is already set ({row[0]})"
                )
            self._executemany(
                "INSERT INTO store_meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [
                    ("embedding_model", meta.model),
                    ("embedding_dim", None if meta.dim is None else str(meta.dim)),
                ],
            )

    # -- values ----------------------------------------------------------------------------
    def _dt(self, value: Any) -> datetime | None:
        micros = self._read(value)
        return None if micros is None else from_micros(micros)

    def _instant(self, value: datetime | None) -> Any:
        return self._bind(None if value is None else to_micros(value))

    def _record_params(self, r: Record) -> tuple[Any, ...]:
        return tuple(
            self._instant(getattr(r, name)) if name in _INSTANTS else value
            for name, value in zip(
                RECORD_COLUMNS,
                (
                    r.id, r.space, r.agent, r.kind.value, r.text, float(r.importance),
                    r.occurred_at, r.recorded_at, r.last_accessed_at, r.last_verified_at,
                    r.valid_from, r.valid_until, r.status.value, r.superseded_by, r.superseded_at,
                    r.valid_until_before, r.closed_reason, _json(list(r.supersedes)), r.domain,
                    _json(list(r.tags)), _json(dict(r.metadata)), _json(list(r.evidence)),
                    r.depth, r.event_id, r.sensitivity.value, r.evidence_status.value,
                    float(r.feedback_score),
                ),
                strict=True,
            )
        )  # fmt: skip

    def _record(self, row: Sequence[Any]) -> Record:
        v = dict(zip(RECORD_COLUMNS, row, strict=False))
        return Record(
            id=v["id"],
            space=v["space"],
            agent=v["agent"],
            kind=_KINDS[v["kind"]],
            text=v["text"],
            importance=float(v["importance"]),
            occurred_at=self._dt(v["occurred_at"]),  # type: ignore[arg-type]
            recorded_at=self._dt(v["recorded_at"]),  # type: ignore[arg-type]
            last_accessed_at=self._dt(v["last_accessed_at"]),  # type: ignore[arg-type]
            last_verified_at=self._dt(v["last_verified_at"]),
            valid_from=self._dt(v["valid_from"]),
            valid_until=self._dt(v["valid_until"]),
            status=_STATUSES[v["status"]],
            superseded_by=v["superseded_by"],
            superseded_at=self._dt(v["superseded_at"]),
            valid_until_before=self._dt(v["valid_until_before"]),
            closed_reason=v["closed_reason"],
            supersedes=_json_tuple(v["supersedes"]),
            domain=v["domain"],
            tags=_json_tuple(v["tags"]),
            metadata={} if v["metadata"] == "{}" else json.loads(v["metadata"]),
            evidence=_json_tuple(v["evidence"]),
            depth=int(v["depth"]),
            event_id=v["event_id"],
            sensitivity=_SENSITIVITIES[v["sensitivity"]],
            evidence_status=_EVIDENCE_STATUSES[v["evidence_status"]],
            feedback_score=float(v["feedback_score"]),
            has_embedding=bool(row[len(RECORD_COLUMNS)]),
        )

    @property
    def _select_record(self) -> str:
        return ", ".join(RECORD_COLUMNS) + ", embedding IS NOT NULL"

    # -- writes ----------------------------------------------------------------------------
    def _bump(self, space: str) -> int:
        # One statement: creates the space on its first write. In PostgreSQL the row lock it
        # takes serialises writers of one space, so change_seq commits in order.
        row = self._execute(
            "INSERT INTO spaces (space, change_seq) VALUES (?, 1) ON CONFLICT (space)"
            " DO UPDATE SET change_seq = spaces.change_seq + 1 RETURNING change_seq",
            (space,),
        ).fetchone()
        return int(row[0])

    def insert_records(self, space: str, items: Sequence[StoredRecord]) -> None:
        if not items:
            return
        columns = ", ".join((*RECORD_COLUMNS, "embedding", "passages", "change_seq", "doc_len"))
        terms = [index_terms(item.record.text) for item in items]
        with self.write():
            seq = self._bump(space)
            self._executemany(
                "INSERT INTO agents (space, agent) VALUES (?, ?) ON CONFLICT DO NOTHING",
                sorted({(space, item.record.agent) for item in items}),
            )
            self._executemany(
                f"INSERT INTO records ({columns}) VALUES ({_marks(len(RECORD_COLUMNS) + 4)})",
                [
                    (
                        *self._record_params(i.record),
                        _vector_blob(i.embedding),
                        _vector_blob(i.passages),
                        seq,
                        len(t),
                    )
                    for i, t in zip(items, terms, strict=True)
                ],
            )
            pks = dict(
                self._execute(
                    "SELECT id, pk FROM records WHERE space = ? AND change_seq = ?", (space, seq)
                ).fetchall()
            )
            self._insert_postings(
                _posting_rows(space, pks[i.record.id], i.record.agent, t)
                for i, t in zip(items, terms, strict=True)
            )
            self._index_vectors(
                space,
                [
                    (pks[i.record.id], i.record.agent, i.embedding)
                    for i in items
                    if i.embedding is not None
                ],
            )
            self._execute(
                "UPDATE spaces SET docs = docs + ?, doc_len_sum = doc_len_sum + ? WHERE space = ?",
                (len(items), sum(len(t) for t in terms), space),
            )
            # The reflection trigger (DESIGN §5): perceived importance accumulates per agent;
            # reflections themselves do not count.
            added: dict[str, float] = {}
            for item in items:
                if item.record.kind is not Kind.REFLECTION:
                    agent = item.record.agent
                    added[agent] = added.get(agent, 0.0) + float(item.record.importance)
            self._executemany(
                "UPDATE agents SET importance_accumulated = importance_accumulated + ?"
                " WHERE space = ? AND agent = ?",
                [(amount, space, agent) for agent, amount in sorted(added.items())],
            )

    def touch(self, space: str, ids: Sequence[str], at_us: int) -> int:
        if not ids:
            return 0
        changed = 0
        at = self._bind(at_us)
        with self.write():
            seq = self._bump(space)
            for chunk in _chunks(list(ids)):
                cur = self._execute(
                    "UPDATE records SET last_accessed_at = ?, change_seq = ?"
                    f" WHERE id IN ({_marks(len(chunk))}) AND {self._hint('space')} = ?"
                    " AND last_accessed_at < ?",
                    (at, seq, *chunk, space, at),
                )
                changed += cur.rowcount
        return changed

    def _insert_postings(self, documents: Iterator[list[_Posting]]) -> None:
        self._executemany(
            "INSERT INTO postings (space, term, pk, agent, tf, dl) VALUES (?, ?, ?, ?, ?, ?)",
            sorted(row for rows in documents for row in rows),  # in index order: fewer page splits
        )

    # -- reads -----------------------------------------------------------------------------
    def lexical(self, space: str, agents: Sequence[str], query: str) -> LexicalMatches:
        terms = query_terms(query)
        totals: list[Any] = []
        df: list[Any] = []
        rows: list[Any] = []
        # Terms travel as their position in the query: no strings cross back from the database.
        which = "CASE term " + " ".join(f"WHEN ? THEN {i}" for i in range(len(terms))) + " END"
        where = f"space = ? AND term IN ({_marks(len(terms))})"
        with self.snapshot():
            if terms and agents:
                totals = self._query(
                    "SELECT docs, doc_len_sum FROM spaces WHERE space = ?", (space,)
                )
                df = self._query(
                    f"SELECT {which}, COUNT(*) FROM postings WHERE {where} GROUP BY term",
                    (*terms, space, *terms),
                )
                rows = self._query(
                    f"SELECT {which}, pk, tf, dl FROM postings WHERE {where}"
                    f" AND agent IN ({_marks(len(agents))})",
                    (*terms, space, *terms, *agents),
                )
        if not rows or not totals[0][0]:
            return LexicalMatches(pk=np.empty(0, np.int64), score=np.empty(0, np.float64))
        counts = np.zeros(len(terms), dtype=np.float64)
        for position, count in df:
            counts[position] = count
        n_docs, total_len = int(totals[0][0]), int(totals[0][1])
        return _bm25(np.asarray(rows, dtype=np.int64), counts, n_docs, total_len)

    def _by_ids(self, select: str, space: str, ids: Sequence[str]) -> list[Any]:
        """Rows of ``SELECT … FROM table`` (first column the id) for ``ids`` in that order;
        missing ids are skipped."""
        found: dict[str, Any] = {}
        for chunk in _chunks(list(ids)):
            rows = self._query(
                f"{select} WHERE id IN ({_marks(len(chunk))}) AND {self._hint('space')} = ?",
                (*chunk, space),
            )
            found.update((row[0], row) for row in rows)
        return [found[i] for i in ids if i in found]

    def get_records(self, space: str, ids: Sequence[str]) -> list[Record]:
        rows = self._by_ids(f"SELECT {self._select_record} FROM records", space, ids)
        return [self._record(row) for row in rows]

    def get_embedding(self, space: str, record_id: str) -> np.ndarray | None:
        rows = self._query(
            f"SELECT embedding FROM records WHERE id = ? AND {self._hint('space')} = ?",
            (record_id, space),
        )
        return _vector(rows[0][0]) if rows else None

    def agents(self, space: str) -> list[str]:
        rows = self._query("SELECT agent FROM agents WHERE space = ?", (space,))
        return sorted(r[0] for r in rows)  # code-point order on every store, whatever the collation

    def change_seq(self, space: str) -> int:
        rows = self._query("SELECT change_seq FROM spaces WHERE space = ?", (space,))
        return int(rows[0][0]) if rows else 0

    def load_columns(
        self, space: str, agents: Sequence[str], *, after_seq: int | None = None
    ) -> RecordColumns:
        if not agents:
            return _columns([], self.location)
        us = self._us
        sql = (
            f"SELECT pk, id, agent, kind, text, importance, {us('recorded_at')},"
            f" {us('last_accessed_at')}, COALESCE({us('last_verified_at')}, {SINCE_EVER}),"
            f" COALESCE({us('valid_from')}, {SINCE_EVER}), COALESCE({us('valid_until')}, {NEVER}),"
            f" COALESCE({us('superseded_at')}, {NEVER}), feedback_score,"
            f" COALESCE(CASE WHEN superseded_at IS NULL THEN {us('valid_until')}"
            f" ELSE {us('valid_until_before')} END, {NEVER}),"
            f" domain, event_id, embedding, passages FROM records"
            f" WHERE space = ? AND agent IN ({_marks(len(agents))})"
        )
        params: list[Any] = [space, *agents]
        if after_seq is None:
            return _columns(self._query(sql + " ORDER BY pk", params), self.location)
        # A few changed rows, found through (space, agent, change_seq) and ordered here: asking
        # the database for pk order lets a planner without statistics walk the agent's index.
        rows = self._query(sql + " AND change_seq > ?", [*params, after_seq])
        return _columns(sorted(rows, key=lambda row: row[0]), self.location)

    def removed_since(self, space: str, after_seq: int) -> list[tuple[str, str]]:
        rows = self._query(
            "SELECT record_id, agent FROM tombstones WHERE space = ? AND change_seq > ?",
            (space, after_seq),
        )
        return [(r[0], r[1]) for r in rows]

    def iter_records(self, space: str) -> Iterator[StoredRecord]:
        last_pk = 0
        while True:
            rows = self._query(
                f"SELECT pk, {self._select_record}, embedding, passages FROM records"
                f" WHERE pk > ? AND {self._hint('space')} = ? ORDER BY pk LIMIT 1000",
                (last_pk, space),
            )
            if not rows:
                return
            for row in rows:
                vector = _vector(row[-2])
                yield StoredRecord(
                    record=self._record(row[1:-2]),
                    embedding=vector,
                    passages=_passages(
                        row[-1], None if vector is None else vector.shape[0], self.location
                    ),
                )
            last_pk = rows[-1][0]

    def spaces(self) -> list[str]:
        return sorted(r[0] for r in self._query("SELECT space FROM spaces"))

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(list(ids)):
            rows = self._query(f"SELECT id FROM records WHERE id IN ({_marks(len(chunk))})", chunk)
            found.update(r[0] for r in rows)
        return found

    def stats(self, space: str) -> dict[str, Any]:
        meta = self.embedding_meta()
        rows = self._query(
            "SELECT agent, kind, COUNT(*) FROM records WHERE space = ? GROUP BY agent, kind"
            " ORDER BY agent, kind",
            (space,),
        )
        agents: dict[str, dict[str, int]] = {}
        for agent, kind, count in rows:
            agents.setdefault(agent, {})[kind] = int(count)
        return {
            "store": self.location,
            "schema_version": self.schema_version(),
            "space": space,
            "records": sum(sum(k.values()) for k in agents.values()),
            "agents": agents,
            "embedding_model": meta.model,
            "embedding_dim": meta.dim,
            "bytes_on_disk": self._bytes_on_disk(),
            "candidates": self._preselection(),
        }

    def _preselection(self) -> str:
        """How reads choose candidates, for ``stats``."""
        return "exact: every record is scored"

    # -- lifecycle -------------------------------------------------------------------------
    def close_records(self, space: str, closures: Sequence[Closure]) -> None:
        if not closures:
            return
        with self.write():
            seq = self._bump(space)
            for c in closures:
                cur = self._execute(
                    "UPDATE records SET status = ?, superseded_by = ?, superseded_at = ?,"
                    " valid_until = ?, valid_until_before = ?, closed_reason = ?, change_seq = ?"
                    f" WHERE id = ? AND {self._hint('space')} = ? AND status = 'open'",
                    (
                        c.status.value, c.superseded_by, self._instant(c.superseded_at),
                        self._instant(c.valid_until), self._instant(c.valid_until_before),
                        c.reason, seq, c.record_id, space,
                    ),
                )  # fmt: skip
                if cur.rowcount != 1:
                    raise ConflictError(
                        f"record {c.record_id} is no longer open (changed concurrently)",
                        record_id=c.record_id,
                    )

    def set_verified(self, space: str, record_id: str, at_us: int) -> None:
        at = self._bind(at_us)
        with self.write():
            seq = self._bump(space)
            self._execute(
                "UPDATE records SET last_verified_at ="
                f" {self._greatest('COALESCE(last_verified_at, ?)', '?')},"
                f" change_seq = ? WHERE id = ? AND {self._hint('space')} = ?",
                (at, at, seq, record_id, space),
            )

    def set_passages(self, space: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        if not items:
            return
        with self.write():
            seq = self._bump(space)
            self._executemany(
                f"UPDATE records SET passages = ?, change_seq = ? WHERE id = ?"
                f" AND {self._hint('space')} = ?",
                [(_vector_blob(m), seq, rid, space) for rid, m in items],
            )

    def add_feedback(self, space: str, record_id: str, signal: float) -> float:
        with self.write():
            seq = self._bump(space)
            row = self._execute(
                "UPDATE records SET feedback_score = feedback_score + ?, change_seq = ?"
                f" WHERE id = ? AND {self._hint('space')} = ? RETURNING feedback_score",
                (signal, seq, record_id, space),
            ).fetchone()
        return float(row[0])

    def dependants(self, space: str, record_id: str) -> list[tuple[str, str]]:
        hint = self._hint
        rows = self._query(
            f"SELECT r.id, 'cites it as evidence' FROM records r, {self._json_each('r.evidence')}"
            " WHERE r.space = ? AND e.value = ?"
            " UNION ALL SELECT superseded_by, 'supersedes it' FROM records"
            f" WHERE id = ? AND {hint('space')} = ? AND superseded_by IS NOT NULL"
            " UNION ALL SELECT e.value, 'is superseded by it' FROM records r,"
            f" {self._json_each('r.supersedes')} WHERE r.id = ? AND {hint('r.space')} = ?",
            (space, record_id, record_id, space, record_id, space),
        )
        return [(r[0], r[1]) for r in rows]

    def delete_records(self, space: str, ids: Sequence[str], *, purge: bool) -> None:
        if not ids:
            return
        with self.write():
            seq = self._bump(space)
            for chunk in _chunks(list(ids)):
                marks = _marks(len(chunk))
                where = f"WHERE id IN ({marks}) AND {self._hint('space')} = ?"
                self._execute(
                    "INSERT INTO tombstones (space, record_id, agent, change_seq)"
                    f" SELECT space, id, agent, ? FROM records {where}",
                    (seq, *chunk, space),
                )
                self._execute(
                    "UPDATE spaces SET docs = docs - c.n, doc_len_sum = doc_len_sum - c.len"
                    " FROM (SELECT COUNT(*) AS n, COALESCE(SUM(doc_len), 0) AS len FROM records"
                    f" {where}) AS c WHERE space = ?",
                    (*chunk, space, space),
                )
                self._execute(
                    f"DELETE FROM postings WHERE pk IN (SELECT pk FROM records {where})",
                    (*chunk, space),
                )
                self._execute(f"DELETE FROM records {where}", (*chunk, space))

    def flag_evidence(self, space: str, cited_ids: Sequence[str], status: str) -> list[str]:
        if not cited_ids:
            return []
        # "missing" is the stronger flag: a record citing a purged record stays missing.
        weaker = "" if status == "evidence_missing" else " AND r.evidence_status = 'ok'"
        with self.write():
            rows = self._execute(
                f"SELECT DISTINCT r.id FROM records r, {self._json_each('r.evidence')}"
                f" WHERE r.space = ? AND e.value IN ({_marks(len(cited_ids))}){weaker}",
                (space, *cited_ids),
            ).fetchall()
            flagged = sorted(r[0] for r in rows)
            if flagged:
                seq = self._bump(space)
                self._executemany(
                    "UPDATE records SET evidence_status = ?, change_seq = ? WHERE id = ?",
                    [(status, seq, rid) for rid in flagged],
                )
        return flagged

    def append_audit(self, space: str, entries: Sequence[AuditEntry]) -> None:
        if not entries:
            return
        with self.write():
            self._executemany(
                "INSERT INTO audit_log (space, at, action, record_id, actor, reason, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (space, self._instant(e.at), e.action, e.record_id, e.actor, e.reason,
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
                seq=int(r[0]), at=self._dt(r[1]), action=r[2], record_id=r[3],  # type: ignore[arg-type]
                actor=r[4], reason=r[5], detail=json.loads(r[6]),
            )
            for r in rows
        ]  # fmt: skip

    # -- reflection trigger ------------------------------------------------------------------
    def accumulated_importance(self, space: str, agent: str) -> float:
        rows = self._query(
            "SELECT importance_accumulated FROM agents WHERE space = ? AND agent = ?",
            (space, agent),
        )
        return float(rows[0][0]) if rows else 0.0

    def set_accumulated_importance(self, space: str, agent: str, value: float) -> None:
        with self.write():
            self._execute("INSERT INTO spaces (space) VALUES (?) ON CONFLICT DO NOTHING", (space,))
            self._execute(
                "INSERT INTO agents (space, agent, importance_accumulated) VALUES (?, ?, ?)"
                " ON CONFLICT (space, agent) DO UPDATE SET importance_accumulated = excluded."
                "importance_accumulated",
                (space, agent, value),
            )

    # -- causal graph ----------------------------------------------------------------------
    def _event(self, row: Sequence[Any]) -> Event:
        rid, space, text, kind, scope, occurred_at, recorded_at, metadata, has = row
        return Event(
            id=rid,
            space=space,
            text=text,
            kind=EventKind(kind),
            scope=scope,
            occurred_at=self._dt(occurred_at),  # type: ignore[arg-type]
            recorded_at=self._dt(recorded_at),  # type: ignore[arg-type]
            metadata={} if metadata == "{}" else json.loads(metadata),
            has_embedding=bool(has),
        )

    def _link(self, row: Sequence[Any]) -> Link:
        cause, effect, weight, provenance, similarity, created_at = row
        return Link(
            cause=cause,
            effect=effect,
            weight=float(weight),
            provenance=Provenance(provenance),
            similarity=None if similarity is None else float(similarity),
            created_at=self._dt(created_at),  # type: ignore[arg-type]
        )

    def insert_event(self, space: str, event: Event, embedding: np.ndarray | None) -> None:
        with self.write():
            self._bump(space)
            self._execute(
                "INSERT INTO events (id, space, text, kind, scope, occurred_at, recorded_at,"
                " metadata, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.id, space, event.text, event.kind.value, event.scope,
                    self._instant(event.occurred_at), self._instant(event.recorded_at),
                    _json(dict(event.metadata)), _vector_blob(embedding),
                ),
            )  # fmt: skip

    def get_events(self, space: str, ids: Sequence[str]) -> list[Event]:
        rows = self._by_ids(f"SELECT {_EVENT_COLUMNS} FROM events", space, ids)
        return [self._event(row) for row in rows]

    def iter_events(self, space: str) -> Iterator[tuple[Event, np.ndarray | None]]:
        last_pk = 0
        while True:
            rows = self._query(
                f"SELECT pk, {_EVENT_COLUMNS}, embedding FROM events"
                f" WHERE pk > ? AND {self._hint('space')} = ? ORDER BY pk LIMIT 1000",
                (last_pk, space),
            )
            if not rows:
                return
            for row in rows:
                yield self._event(row[1:-1]), _vector(row[-1])
            last_pk = rows[-1][0]

    def event_embeddings(self, space: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        rows = self._by_ids("SELECT id, embedding FROM events", space, ids)
        return {rid: v for rid, blob in rows if (v := _vector(blob)) is not None}

    def events_between(
        self, space: str, *, after_us: int, before_us: int, scope: str | None = None
    ) -> list[Event]:
        sql = (
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE space = ? AND occurred_at >= ?"
            " AND occurred_at < ?"
        )
        params: list[Any] = [space, self._bind(after_us), self._bind(before_us)]
        if scope is not None:
            sql += " AND scope = ?"
            params.append(scope)
        return [self._event(r) for r in self._query(sql + " ORDER BY occurred_at, id", params)]

    def put_link(self, space: str, link: Link) -> None:
        with self.write():
            self._bump(space)
            self._execute(
                "INSERT INTO links (space, cause, effect, weight, provenance, similarity,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (space, cause, effect)"
                " DO UPDATE SET weight = excluded.weight, provenance = excluded.provenance,"
                " similarity = excluded.similarity, created_at = excluded.created_at",
                (
                    space, link.cause, link.effect, link.weight, link.provenance.value,
                    link.similarity, self._instant(link.created_at),
                ),
            )  # fmt: skip

    def get_link(self, space: str, cause: str, effect: str) -> Link | None:
        rows = self._query(
            f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ? AND cause = ? AND effect = ?",
            (space, cause, effect),
        )
        return self._link(rows[0]) if rows else None

    def delete_link(self, space: str, cause: str, effect: str) -> bool:
        with self.write():
            cur = self._execute(
                "DELETE FROM links WHERE space = ? AND cause = ? AND effect = ?",
                (space, cause, effect),
            )
            if cur.rowcount:
                self._bump(space)
        return cur.rowcount > 0

    def links(self, space: str, *, as_of_us: int | None = None) -> list[Link]:
        sql = f"SELECT {_LINK_COLUMNS} FROM links WHERE space = ?"
        params: list[Any] = [space]
        if as_of_us is not None:
            sql += " AND created_at <= ?"
            params.append(self._bind(as_of_us))
        return [self._link(r) for r in self._query(sql + " ORDER BY cause, effect", params)]


def _bm25(postings: I64, df: F64, n_docs: int, total_len: int) -> LexicalMatches:
    """BM25 of the documents in ``postings`` (rows of query-term position, pk, tf, dl), given
    each query term's document frequency in the space. Rows are put in (pk, term) order first, so
    the sums, and therefore the scores, do not depend on the order a database returned them in."""
    order = np.lexsort((postings[:, 0], postings[:, 1]))
    term, pk, tf, dl = postings[order].T
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    norm = _BM25_K1 * (1.0 - _BM25_B + _BM25_B * dl / max(total_len / n_docs, 1.0))
    part = idf[term] * tf * (_BM25_K1 + 1.0) / (tf + norm)
    keys, first = np.unique(pk, return_index=True)
    return LexicalMatches(pk=keys, score=np.add.reduceat(part, first))


def _columns(rows: list[Any], location: str) -> RecordColumns:
    n = len(rows)
    if n == 0:
        empty_i = np.empty(0, np.int64)
        return RecordColumns(
            pk=empty_i, ids=[], agents=[], kinds=[], texts=[],
            importance=np.empty(0, np.float64), recorded_at=empty_i, last_accessed_at=empty_i,
            last_verified_at=empty_i, valid_from=empty_i, valid_until=empty_i,
            superseded_at=empty_i, feedback_score=np.empty(0, np.float64),
            valid_until_before=empty_i, domains=[], event_ids=[],
            has_embedding=np.empty(0, np.bool_), embeddings=None, passages=[],
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
        passages=[_passages(b, dim, location) for b in cols[17]],
    )
