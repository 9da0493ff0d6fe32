""":class:`SQLStore`: the whole :class:`~chronomem.stores.base.MemoryStore` contract in SQL both
stores share (STYLE: one SQL layer, small dialect hooks).

This module holds the connection's side — transactions, error translation, migrations — and
each contract method is one call into the module of its concern:

========================  =================================================================
``sql/records.py``        record rows: insert, touch, get, iterate, the reflection trigger
``sql/lifecycle.py``      close, verify, ratings, passages backfill, dependants, delete, flags
``sql/columns.py``        the columnar feed of the in-memory arrays, tombstones
``sql/fulltext.py``       postings and BM25
``sql/graph.py``          events and links (``GraphStore``)
``sql/audit.py``          the audit log
``sql/migrations.py``     numbered schema steps
``sql/service.py``        the HTTP service's API keys and simulated space clocks (``ServiceStore``)
``sql/review.py``         review proposals, the access log, per-space settings
``sql/metadata.py``       the model and dimension, store-wide settings, spaces
``sql/reembed.py``        a switch to another embedding model
``sql/changes.py``        the change feed (``FeedStore``, with ``sql/webhooks.py``)
``sql/webhooks.py``       webhook subscriptions: cursors, leases, failed attempts
========================  =================================================================

A backend subclass (:class:`~chronomem.stores.sqlite.SQLiteStore`,
:class:`~chronomem.stores.postgres.PostgresStore`) provides the connection, its error types, its
migrations and the dialect hooks described in ``sql/backend.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chronomem.arrays import F32, I64
from chronomem.errors import ConflictError, StoreError, StoreUnavailableError
from chronomem.model.audit import AuditEntry, Closure
from chronomem.model.record import Record
from chronomem.model.review import Access, Proposal, ProposalStatus
from chronomem.stores.base import (
    LexicalMatches,
    RecordColumns,
    StoredRecord,
    Touch,
)
from chronomem.stores.sql import (
    audit,
    columns,
    fulltext,
    lifecycle,
    migrations,
    records,
    review,
)
from chronomem.stores.sql import backend as sqlparts
from chronomem.stores.sql.backend import Cursor
from chronomem.stores.sql.graph import GraphStore
from chronomem.stores.sql.metadata import StoreMetadata
from chronomem.stores.sql.migrations import Migration
from chronomem.stores.sql.postings_cache import PostingsCache
from chronomem.stores.sql.service import ServiceStore
from chronomem.stores.sql.webhooks import FeedStore

__all__ = ["SQLStore", "TransactionState"]

_T = TypeVar("_T")
#: Own touches remembered per space (``SQLStore.own_touches``): a reader is rarely further behind.
_TOUCHES_KEPT = 64


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@dataclass(eq=False, slots=True)
class TransactionState:
    """A connection's lock and whether it is inside a transaction: shared by every store object
    on one connection (``stores/sqlite_connection.py``), so a transaction of one holds the
    others' statements until it ends, and a nested ``write()`` joins the open transaction."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    in_transaction: bool = False
    writing: bool = False  # the open transaction is a write


class SQLStore(StoreMetadata, GraphStore, ServiceStore, FeedStore):
    """The shared implementation; see the module docstring for what a backend provides."""

    location: str
    migrations: tuple[Migration, ...]
    reconnect_timeout_s: float = 0.0
    _begin_write = "BEGIN"
    _begin_read = "BEGIN"

    def __init__(self, state: TransactionState | None = None) -> None:
        self._state = state or TransactionState()
        self._lock = self._state.lock
        self.aborted_writes = 0
        self.inserted: dict[str, int] = {}
        #: The model whose vectors this handle writes (checked inside each vector write).
        self.vector_model: str | None = None
        self._closed = False
        self._wrote = False  # this connection opened a write transaction
        self._postings = PostingsCache()  # the lexical reads' (sql/postings_cache.py)
        #: The touches this object committed in transactions of their own, per space, by the
        #: ``change_seq`` each took (``own_touches``): the last ``_TOUCHES_KEPT``.
        self._touched: dict[str, dict[int, tuple[Touch, ...]]] = {}

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

    def _joined(self, column: str) -> str:
        return f"string_agg(CAST({column} AS TEXT), ',')"

    def _for_share(self, sql: str) -> str:
        return f"{sql} FOR SHARE"

    def _has_table(self, name: str) -> bool:
        """Whether the table exists (asked instead of ``CREATE TABLE IF NOT EXISTS``, which needs
        the privilege to create even when there is nothing to create)."""
        raise NotImplementedError

    def _index_vectors(self, space: str, rows: Sequence[tuple[int, str, F32]]) -> None:
        """Called in the write transaction with each new record's key, agent and vector: a
        backend with a vector index adds them (purge removes them by cascade)."""

    def _vectors_replaced(self, dim: int) -> None:
        """Called in a model switch's cut-over transaction, once every record holds the new
        model's vector of ``dim``: a backend with a vector index rebuilds it."""

    def nearest(
        self, space: str, agents: Sequence[str], vector: F32, *, namespace: int, k: int
    ) -> I64 | None:
        return None

    def scrub(self, *, full: bool = False) -> str | None:
        raise NotImplementedError

    def _bytes_on_disk(self) -> int:
        raise NotImplementedError

    def _preselection(self) -> str:
        """How reads choose candidates, for ``stats``."""
        return "exact: every record is scored"

    # -- connection recovery (a server store; SQLite's connection cannot drop) ----------------
    def _is_disconnect(self, exc: Exception) -> bool:
        """Whether ``exc`` means the connection is gone (the server restarted, the network
        dropped): the transaction it was in is lost, and a new connection may succeed."""
        return False

    def _reconnect(self) -> None:
        """Replace a lost connection (once; the caller retries)."""
        raise NotImplementedError

    def _needs_reconnect(self) -> bool:
        """Whether the connection is known to be lost."""
        return False

    def _retrying(self, step: Callable[[], _T], what: str) -> _T:
        """``step`` on a live connection: when the connection is lost before ``step`` did
        anything, reconnect and try again, with backoff, for up to ``reconnect_timeout_s``;
        then :class:`StoreUnavailableError`. Only for steps that are safe to repeat (starting a
        transaction, a read outside one)."""
        deadline = time.monotonic() + self.reconnect_timeout_s
        delay = 0.05
        while True:
            try:
                if self._needs_reconnect():
                    self._reconnect()
                return step()
            except Exception as exc:
                if not (self._is_db_error(exc) and self._is_disconnect(exc)):
                    raise
                if time.monotonic() + delay > deadline:
                    raise StoreUnavailableError(
                        f"{self.location}: cannot {what}: the server is unreachable "
                        f"({_first_line(exc)}); gave up after {self.reconnect_timeout_s:g} s of "
                        f"reconnecting. Nothing was written; the next call tries again"
                    ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    # -- transactions ----------------------------------------------------------------------
    def _translate(self, exc: Exception, what: str) -> Exception:
        if self._is_disconnect(exc):
            return StoreUnavailableError(
                f"{self.location}: the connection to the server was lost during a {what} "
                f"({_first_line(exc)}); it was rolled back, nothing was written; the next call "
                f"reconnects"
            )
        if self._is_conflict(exc):
            return ConflictError(f"{self.location}: {what} conflicts with stored data: {exc}")
        return StoreError(f"{self.location}: {what} failed: {exc}")

    def _rollback(self) -> None:
        """Roll back after a failure; on a lost connection there is nothing left to roll back
        (the server already did), so that error must not hide the first one."""
        try:
            self._execute("ROLLBACK")
        except Exception as exc:
            if not self._is_db_error(exc):
                raise

    def _begin(self, begin: str) -> None:
        try:
            self._retrying(lambda: self._execute(begin), "start a transaction")
        except Exception as exc:
            if self._is_db_error(exc):
                raise StoreError(f"{self.location}: cannot start a transaction: {exc}") from exc
            raise

    @contextmanager
    def _transaction(self, begin: str, what: str) -> Iterator[None]:
        with self._lock:
            if self._state.in_transaction:
                self._state.writing |= what == "write"  # a write joining a read makes it one
                yield
                return
            self._begin(begin)
            self._state.in_transaction = True
            self._state.writing = what == "write"
            try:
                yield
            except BaseException as exc:
                self.aborted_writes += what == "write"
                self._rollback()
                if isinstance(exc, Exception) and self._is_db_error(exc):
                    raise self._translate(exc, what) from exc
                raise
            else:
                try:
                    self._execute("COMMIT")
                except Exception as exc:
                    self.aborted_writes += what == "write"
                    if self._is_db_error(exc) and self._is_disconnect(exc):
                        raise StoreUnavailableError(
                            f"{self.location}: the connection to the server was lost while "
                            f"committing a {what} ({_first_line(exc)}): it may or may not have "
                            f"been applied; the next call reconnects",
                            outcome_unknown=True,
                        ) from exc
                    if self._is_db_error(exc):
                        raise self._translate(exc, what) from exc
                    raise
                if what == "write":
                    self._committed()
            finally:
                self._state.in_transaction = self._state.writing = False

    def _committed(self) -> None:
        """A write transaction committed (a backend's hook: SQLite's checkpoints follow)."""

    @contextmanager
    def write(self) -> Iterator[None]:
        self._wrote = True
        with self._transaction(self._begin_write, "write"):
            yield

    def lock_space(self, space: str) -> None:
        # SQLite's BEGIN IMMEDIATE already holds the file's write lock; in PostgreSQL the row
        # lock that advancing the space's change_seq takes serialises its writers.
        sqlparts.bump(self, space)

    @property
    def _writing(self) -> bool:
        return self._state.writing

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._transaction(self._begin_read, "read"):
            yield

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of one statement (a read), with errors translated; outside a transaction a
        lost connection is re-established and the statement retried."""
        with self._lock:
            try:
                if self._state.in_transaction:
                    return self._execute(sql, params).fetchall()
                return self._retrying(lambda: self._execute(sql, params).fetchall(), "read")
            except Exception as exc:
                if self._is_db_error(exc):
                    raise self._translate(exc, "query") from exc
                raise

    # -- schema and store metadata -----------------------------------------------------------
    def _migrate(self) -> None:
        migrations.migrate(self, self.migrations, has_table=self._has_table)

    def reindex_full_text(self) -> None:
        """Rebuild every posting and per-space total with this version's analyser."""
        fulltext.reindex(self)
        self._postings.clear()

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

    # -- records (sql/records.py, sql/columns.py, sql/fulltext.py) ----------------------------
    def insert_records(self, space: str, items: Sequence[StoredRecord]) -> None:
        records.insert_records(self, space, items)
        self.inserted[space] = self.inserted.get(space, 0) + len(items)

    def touch(self, space: str, touches: Sequence[Touch]) -> int:
        with self._lock:
            joined = self._state.in_transaction  # (committed, or not, by the outer one)
            changed, seq = records.touch(self, space, touches)
            if seq and not joined:
                kept = self._touched.setdefault(space, {})
                kept[seq] = tuple(touches)
                if len(kept) > _TOUCHES_KEPT:
                    del kept[min(kept)]
        return changed

    def own_touches(self, space: str, after_seq: int, seq: int) -> list[tuple[Touch, ...]] | None:
        with self._lock:
            kept = self._touched.get(space, {})
            if not all(s in kept for s in range(after_seq + 1, seq + 1)):
                return None
            return [kept[s] for s in range(after_seq + 1, seq + 1)]

    def get_records(self, space: str, ids: Sequence[str]) -> list[Record]:
        return records.get_records(self, space, ids)

    def stored_sources(
        self, space: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str]:
        return records.stored_sources(self, space, keys)

    def get_embedding(self, space: str, record_id: str) -> F32 | None:
        return records.get_embedding(self, space, record_id)

    def iter_records(self, space: str) -> Iterator[StoredRecord]:
        return records.iter_records(self, space)

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return records.existing_ids(self, ids)

    def agents(self, space: str) -> list[str]:
        return records.agents(self, space)

    def accumulated_importance(self, space: str, agent: str) -> float:
        return records.accumulated_importance(self, space, agent)

    def set_accumulated_importance(self, space: str, agent: str, value: float) -> None:
        records.set_accumulated_importance(self, space, agent, value)

    def change_seq(self, space: str) -> int:
        return columns.change_seq(self, space)

    def load_columns(
        self, space: str, agents: Sequence[str], *, after_seq: int | None = None
    ) -> RecordColumns:
        return columns.load_columns(self, space, agents, after_seq=after_seq)

    def removed_since(self, space: str, after_seq: int) -> list[tuple[str, str]]:
        return columns.removed_since(self, space, after_seq)

    def index_path(self, space: str) -> Path | None:
        return None  # a server store keeps no file of its own (docs/storage.md)

    def lexical(self, space: str, agents: Sequence[str], query: str) -> LexicalMatches:
        return fulltext.lexical(self, space, agents, query, self._postings)

    def warm_lexical(self, space: str) -> int:
        return fulltext.warm(self, space, self._postings)

    # -- lifecycle (sql/lifecycle.py, sql/audit.py) ------------------------------------------
    def close_records(self, space: str, closures: Sequence[Closure]) -> None:
        lifecycle.close_records(self, space, closures)

    def expiring(self, space: str, now_us: int) -> list[str]:
        return lifecycle.expiring(self, space, now_us)

    def refresh_expiry(self, space: str, ids: Sequence[str], now_us: int) -> int:
        return lifecycle.refresh_expiry(self, space, ids, now_us)

    def set_verified(self, space: str, record_id: str, at_us: int) -> None:
        lifecycle.set_verified(self, space, record_id, at_us)

    def set_passages(self, space: str, items: Sequence[tuple[str, F32]]) -> None:
        lifecycle.set_passages(self, space, items)

    def set_embeddings(self, space: str, items: Sequence[tuple[str, F32, F32 | None]]) -> int:
        return lifecycle.set_embeddings(self, space, items)

    def add_feedback(self, space: str, record_id: str, signal: float) -> float:
        return lifecycle.add_feedback(self, space, record_id, signal)

    def dependants(self, space: str, record_id: str) -> list[tuple[str, str]]:
        return lifecycle.dependants(self, space, record_id)

    def delete_records(self, space: str, ids: Sequence[str], *, purge: bool) -> None:
        lifecycle.delete_records(self, space, ids)

    def flag_evidence(self, space: str, cited_ids: Sequence[str], status: str) -> list[str]:
        return lifecycle.flag_evidence(self, space, cited_ids, status)

    def append_audit(self, space: str, entries: Sequence[AuditEntry]) -> None:
        audit.append_audit(self, space, entries)

    def audit(self, space: str, record_id: str | None = None) -> list[AuditEntry]:
        return audit.audit(self, space, record_id)

    # -- review and the access log (sql/review.py) ----------------------------------------------
    def put_proposals(self, space: str, found: Sequence[Proposal]) -> None:
        review.put_proposals(self, space, found)

    def proposals(
        self, space: str, *, ids: Sequence[str] | None = None, status: str | None = None
    ) -> list[Proposal]:
        return review.proposals(self, space, ids=ids, status=status)

    def decide_proposal(
        self, space: str, proposal_id: str, status: ProposalStatus, *, at_us: int,
        by: str | None, reason: str | None,
    ) -> bool:  # fmt: skip
        return review.decide_proposal(
            self, space, proposal_id, status, at_us=at_us, by=by, reason=reason
        )

    def log_access(self, space: str, entries: Sequence[Access]) -> None:
        review.log_access(self, space, entries)

    def accesses(
        self, space: str, *, record_id: str | None = None, limit: int = 100
    ) -> list[Access]:
        return review.accesses(self, space, record_id=record_id, limit=limit)

    def access_counts(self, space: str, *, since_us: int) -> dict[str, int]:
        return review.access_counts(self, space, since_us=since_us)

    def space_setting(self, space: str, key: str) -> str | None:
        return review.space_setting(self, space, key)

    def set_space_setting(self, space: str, key: str, value: str | None) -> None:
        review.set_space_setting(self, space, key, value)
