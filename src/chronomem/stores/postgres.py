"""The server store: PostgreSQL through psycopg 3 (DESIGN §6), for many processes and machines.

The same contract and the same SQL as :class:`~chronomem.stores.sqlite.SQLiteStore` (see
``stores/sql/``); the differences are the dialect hooks below. Writers take the space's row
in ``spaces`` first, so writes to one space are serialised and committed in ``change_seq``
order; reads run in ``REPEATABLE READ`` snapshots.

Full text uses the postings table and BM25 both stores share, not ``tsvector``: PostgreSQL's
parser, stemmer and ``ts_rank`` differ from SQLite's, and the contract is identical results.

Purge deletes rows, vectors and full-text postings in one transaction, but PostgreSQL's MVCC,
WAL, replicas and backups keep old bytes: :meth:`scrub` says so, and docs/storage.md says what an
operator must do.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from chronomem.arrays import I64
from chronomem.clock import from_micros, to_micros
from chronomem.errors import ConfigError, StoreError
from chronomem.stores.pgvector import VectorIndex
from chronomem.stores.postgres_schema import PG_MIGRATIONS
from chronomem.stores.sql import Cursor, SQLStore, migrations

__all__ = ["PostgresStore", "redact", "scratch_database"]

_HINT = "install the postgres extra: pip install 'chronomem[postgres]'"
_TABLES = (
    "records", "postings", "ann_vectors", "tombstones", "audit_log", "events", "links",
    "agents", "spaces", "store_meta", "schema_version", "api_keys", "space_clocks",
    "review_proposals", "access_log", "space_settings", "reembed_vectors",
)  # fmt: skip
#: The tables a purge deletes from (ann_vectors only when pgvector keeps the copy).
_PURGED = ("records", "postings", "tombstones", "ann_vectors", "reembed_vectors")
_SCHEMA_LOCK = 7_349_101  # pg_advisory_xact_lock key: one process migrates at a time


def redact(url: str) -> str:
    """The URL without its password."""
    return re.sub(r"(//[^:/@]+):[^@/]*@", r"\1:***@", url)


def _psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigError(f"PostgreSQL needs psycopg; {_HINT}") from exc
    return psycopg


@contextmanager
def scratch_database(url: str, *, prefix: str = "chronomem_scratch") -> Iterator[str]:
    """A new, empty database on the server ``url`` points at (its role needs ``CREATEDB``),
    dropped afterwards even if connections are still open: for tests and benchmarks.

    >>> with scratch_database("postgresql://postgres@127.0.0.1/postgres") as url:  # doctest: +SKIP
    ...     Memory.open(url)
    """
    psycopg = _psycopg_module()
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise StoreError(f"cannot create a scratch database on {redact(url)}: {exc}") from exc
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class PostgresStore(SQLStore):
    """A :class:`~chronomem.stores.base.MemoryStore` on a PostgreSQL server.

    The connection survives the server: when it drops (a restart, a failover, the network),
    the next call reconnects, retrying with backoff for up to ``reconnect_timeout_s``; a call
    that cannot reach the server in that time, or whose transaction the drop cut short, raises
    :class:`~chronomem.errors.StoreUnavailableError` (nothing written, unless it says the
    commit's outcome is unknown) and the handle stays usable.

    Args:
        url: ``postgresql://user[:password]@host[:port]/database``.
        connect_timeout_s: how long to wait for the server.
        vector_index: ``"auto"`` uses pgvector for candidate pre-selection when the server has
            the extension (creating it in the database if this role may); ``"require"`` refuses
            to open without it; ``"off"`` scores every record exactly, always.
        preselect_min_records: pre-select only when a read's namespace (the records of the
            agents it reads) is at least this large.
        preselect_candidates: how many nearest records pgvector pre-selects (at least 4 × k,
            at most 1,000).
        reconnect_timeout_s: how long a call keeps reconnecting to a lost server.
        create: create chronomem's tables when the database (its search path) has none (the
            default); ``False`` refuses with "no chronomem store in ..." instead.
    """

    migrations = PG_MIGRATIONS
    _begin_write = "BEGIN ISOLATION LEVEL READ COMMITTED"
    _begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def __init__(
        self,
        url: str,
        *,
        connect_timeout_s: float = 10,
        vector_index: str = "auto",
        preselect_min_records: int = 200_000,
        preselect_candidates: int = 400,
        reconnect_timeout_s: float = 15,
        create: bool = True,
    ) -> None:
        super().__init__()
        psycopg = _psycopg_module()
        self._psycopg = psycopg
        self.url = url
        self.location = redact(url)
        self.connect_timeout_s = connect_timeout_s
        self.reconnect_timeout_s = reconnect_timeout_s
        try:
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.location}: {exc}") from exc
        try:
            self._recognise(create=create)
            self._migrate()
            self.vectors = VectorIndex(
                self,
                mode=vector_index,
                min_records=preselect_min_records,
                candidates=preselect_candidates,
            )
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> Any:
        conn = self._psycopg.connect(
            self.url, autocommit=True, connect_timeout=max(1, int(self.connect_timeout_s))
        )
        try:
            conn.execute("SET TIME ZONE 'UTC'")
        except BaseException:
            conn.close()
            raise
        return conn

    # -- connection recovery -----------------------------------------------------------------
    def _is_disconnect(self, exc: Exception) -> bool:
        # An operational error after which the connection is unusable, or a failed connect.
        return isinstance(exc, self._psycopg.OperationalError) and (
            self._conn.closed or self._conn.broken
        )

    def _needs_reconnect(self) -> bool:
        return bool(self._conn.closed or self._conn.broken)

    def _reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
        self._conn = self._connect()

    # -- schema --------------------------------------------------------------------------------
    def _recognise(self, *, create: bool) -> None:
        """Refuse a database whose tables in the search path are not chronomem's (a
        ``schema_version`` another tool wrote, or tables of chronomem's names without one),
        and, unless ``create``, one that holds no chronomem store."""
        if self._has_table("schema_version"):
            if not migrations.is_chronomem(self, PG_MIGRATIONS):
                raise StoreError(
                    f"{self.location} is not a chronomem store: its schema_version table was "
                    f"written by another tool; refusing to add chronomem's tables to it"
                )
            return
        taken = [t for t in _TABLES if t != "ann_vectors" and self._has_table(t)]
        if taken:
            raise StoreError(
                f"{self.location} is not a chronomem store but holds tables named like "
                f"chronomem's ({', '.join(taken)}); refusing to add chronomem's tables to it "
                f"(use another database or schema: ?options=-csearch_path%3Dname)"
            )
        if not create:
            raise StoreError(
                f"no chronomem store in {self.location} (nothing is created by a read; write "
                f"to it first: a write creates the store)"
            )

    # -- the backend -------------------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        cursor: Cursor = self._conn.execute(sql.replace("?", "%s"), tuple(params) or None)
        return cursor

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            with self._conn.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), [tuple(r) for r in rows])

    def _is_conflict(self, exc: Exception) -> bool:
        return isinstance(exc, self._psycopg.errors.IntegrityError)

    def _is_db_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._psycopg.Error)

    def _us(self, column: str) -> str:
        return f"(EXTRACT(EPOCH FROM {column}) * 1000000)::bigint"

    def _bind(self, micros: int | None) -> Any:
        return None if micros is None else from_micros(micros)

    def _read(self, value: Any) -> int | None:
        return None if value is None else to_micros(value)

    def _json_each(self, expression: str) -> str:
        return f"jsonb_array_elements_text(({expression})::jsonb) AS e(value)"

    def _has_table(self, name: str) -> bool:
        # As the search path resolves it, like every statement here.
        return bool(self._query("SELECT to_regclass(?) IS NOT NULL", (name,))[0][0])

    def _lock_schema(self) -> None:
        """In a write transaction: wait until no other process changes the schema."""
        self._execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")

    def _migrate(self) -> None:
        # Nothing to do is the common case: decided without the schema lock or a write.
        if migrations.is_current(self, self.migrations, has_table=self._has_table):
            return
        with self.write():
            self._lock_schema()
            super()._migrate()

    def _index_vectors(self, space: str, rows: Sequence[tuple[int, str, np.ndarray]]) -> None:
        self.vectors.add(space, rows)

    def _vectors_replaced(self, dim: int) -> None:
        self.vectors.replace_all(dim)

    def _preselection(self) -> str:
        v = self.vectors
        if not v.enabled:
            return f"exact: every record is scored ({v.reason})"
        return (
            f"pgvector pre-selects the {v.candidates} nearest when a read covers at least "
            f"{v.min_records} records; exact below"
        )

    def nearest(
        self, space: str, agents: Sequence[str], vector: np.ndarray, *, namespace: int, k: int
    ) -> I64 | None:
        return self.vectors.nearest(space, agents, vector, namespace=namespace, k=k)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- purge -------------------------------------------------------------------------------
    def scrub(self, *, full: bool = False) -> str | None:
        # Rows are gone for every reader once the purge committed; their bytes are not: MVCC
        # leaves dead row versions in table and index pages until they are rewritten, and the
        # WAL, its archive, replicas and backups keep copies. After every purge nothing is run
        # (VACUUM FULL locks the tables for every process); Memory.scrub() runs it.
        if not full:
            return (
                "PostgreSQL keeps the purged bytes in dead row versions until `chronomem scrub` "
                "(Memory.scrub(): VACUUM FULL of chronomem's tables, which locks them while it "
                "runs) and in its WAL, WAL archives, replicas and backups until they rotate; "
                "see docs/storage.md"
            )
        tables = [t for t in _PURGED if self._has_table(t)]
        skipped = self._vacuum(f"VACUUM (FULL, ANALYZE) {', '.join(tables)}")
        if skipped:
            raise StoreError(
                f"{self.location}: scrub needs the role that owns chronomem's tables "
                f"(VACUUM FULL skipped: {'; '.join(skipped)})"
            )
        notes = []
        # ANALYZE wrote new statistics; the old ones (which may hold sampled values of the
        # purged text) are dead rows of pg_statistic until it is rewritten too.
        if self._vacuum("VACUUM FULL pg_catalog.pg_statistic"):
            notes.append(
                "old planner statistics (pg_statistic) until autovacuum or a superuser's VACUUM "
                "FULL pg_statistic"
            )
        try:
            self._retrying(lambda: self._execute("CHECKPOINT"), "checkpoint")
        except self._psycopg.errors.InsufficientPrivilege:
            notes.append(
                "the data files until the server's next checkpoint (this role may not run "
                "CHECKPOINT)"
            )
        except self._psycopg.Error as exc:
            raise self._translate(exc, "checkpoint") from exc
        notes.append(
            "WAL segments written before this scrub, until the server recycles them after "
            "later checkpoints (wal_keep_size, replication slots and archive_command can hold "
            "them longer), plus WAL archives, streaming replicas and base backups: only "
            "recycling, expiry or deleting them removes those copies"
        )
        return "the tables are rewritten; copies remain in " + "; ".join(notes)

    def _vacuum(self, statement: str) -> list[str]:
        """Run a VACUUM and return what it skipped (it warns instead of failing when this role
        may not vacuum a table)."""
        notices: list[str] = []

        def collect(diagnostic: Any) -> None:
            notices.append(str(diagnostic.message_primary or ""))

        with self._lock:
            self._retrying(lambda: None, "vacuum")  # reconnect first: the handler is per link
            self._conn.add_notice_handler(collect)
            try:
                self._execute(statement)
            except self._psycopg.Error as exc:
                raise self._translate(exc, "scrub") from exc
            finally:
                self._conn.remove_notice_handler(collect)
        return [n for n in notices if "skipping" in n]

    def _bytes_on_disk(self) -> int:
        # Tables, their indexes and TOAST, as the search path resolves them.
        rows = self._query(
            "SELECT COALESCE(SUM(pg_total_relation_size(to_regclass(t))), 0)"
            " FROM unnest(?::text[]) AS t",
            (list(_TABLES),),
        )
        return int(rows[0][0])
