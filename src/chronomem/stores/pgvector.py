"""Candidate pre-selection with pgvector (issue 7; trade-off in docs/storage.md).

When the server has the ``vector`` extension, :class:`~chronomem.stores.postgres.PostgresStore`
keeps a copy of every record vector in ``ann_vectors`` with one HNSW index (cosine) per
dimension — a partial expression index, since one table holds every embedder's vectors — and,
for a read over a large namespace, asks it for the nearest few hundred records. The engine then
scores only those exactly for the dense part (everything else still gets its lexical, recency,
importance and lifecycle terms) instead of multiplying the query with every vector.

The copy is exact (float32 in, float32 out) but it is only ever used to choose candidates: the
scores come from the same vectors as without pgvector. Rows leave it with their record (the
foreign key cascades), so purge needs nothing more here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from chronomem.arrays import I64
from chronomem.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from chronomem.stores.postgres import PostgresStore

__all__ = ["MAX_CANDIDATES", "VectorIndex", "vector_literal"]

MAX_CANDIDATES = 1000  # hnsw.ef_search's ceiling: an HNSW scan returns at most ef_search rows
_BACKFILL_BATCH = 2000
_TABLE = """CREATE TABLE ann_vectors (
    pk    BIGINT PRIMARY KEY REFERENCES records (pk) ON DELETE CASCADE,
    space TEXT COLLATE "C" NOT NULL,
    agent TEXT COLLATE "C" NOT NULL,
    dim   INTEGER NOT NULL,
    v     vector NOT NULL
)"""


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of a float32 vector; each value reads back as the same float32."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


class VectorIndex:
    """The pgvector side of one :class:`PostgresStore` connection.

    Args:
        store: the store (its connection, transactions and schema lock).
        mode: ``"auto"`` (use the extension when the server has it, creating it if this role
            may), ``"require"`` (fail to open without it) or ``"off"`` (reads never use it; if
            the database already keeps the copy, writes still maintain it for other processes).
        min_records: pre-select only for namespaces at least this large; below it, scoring
            every record exactly is as fast.
        candidates: how many nearest records to pre-select (at least 4 × k; at most 1,000).
    """

    def __init__(
        self, store: PostgresStore, *, mode: str, min_records: int, candidates: int
    ) -> None:
        if mode not in ("auto", "require", "off"):
            raise ConfigError(f"vector_index must be 'auto', 'require' or 'off'; got {mode!r}")
        if min_records < 0:
            raise ConfigError(f"preselect_min_records must be >= 0; got {min_records}")
        if not 1 <= candidates <= MAX_CANDIDATES:
            raise ConfigError(
                f"preselect_candidates must be in 1..{MAX_CANDIDATES}; got {candidates}"
            )
        self._store = store
        self.min_records = min_records
        self.candidates = candidates
        self.enabled = False  # reads pre-select
        self.maintained = False  # writes copy vectors
        self.reason = "vector_index='off'"
        self._refused: set[int] = set()  # dimensions this role may not index
        self._copy_refused = False  # no copy from this process (role may not, or server has none)
        if mode == "off":
            self._attach()
        else:
            self._setup(required=mode == "require")

    # -- setup -------------------------------------------------------------------------------
    def _attach(self) -> None:
        """Keep an existing copy complete without reading from it."""
        with self._store.snapshot():
            self.maintained = self._store._has_table("ann_vectors")
            if not self.maintained and not self._server_has_vector():
                self._copy_refused = True  # no copy can appear: skip the check on every write

    def _server_has_vector(self) -> bool:
        return bool(
            self._store._query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        )

    def _has_index(self, dim: int) -> bool:
        # Asked each time (a catalog lookup, as the search path resolves it): a cached answer
        # would survive the rollback of the transaction that created the index.
        return self._store._has_table(f"ann_vectors_hnsw_{dim}")

    def _setup(self, *, required: bool) -> None:
        store = self._store
        if not self._server_has_vector():  # decided without the schema lock
            self.reason = "the server has no pgvector extension"
            self._copy_refused = True  # no copy can appear: skip the check on every write
            if required:
                raise StoreError(f"{store.location}: vector_index='require' but {self.reason}")
            return
        with store.write():
            store._lock_schema()
            row = store._execute(
                "SELECT installed_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if row is None:
                self.reason = "the server has no pgvector extension"
                self._copy_refused = True  # no copy can appear: skip the check on every write
            elif row[0] is None and (
                failed := self._attempt(lambda: store._execute("CREATE EXTENSION vector"))
            ):
                self.reason = f"this role may not CREATE EXTENSION vector ({failed})"
            elif failed := self._attempt(self._create_copy):
                self.reason = f"the vector copy cannot be kept ({failed})"
            else:
                self.enabled = self.maintained = True
                self.reason = "pgvector"
        if required and not self.enabled:
            raise StoreError(f"{store.location}: vector_index='require' but {self.reason}")

    def _create_copy(self) -> None:
        # Only what is missing is created, so a role with just the table privileges can use a
        # copy its owner set up.
        if not self._store._has_table("ann_vectors"):
            self._store._execute(_TABLE)
        self._backfill()
        for (dim,) in self._store._execute("SELECT DISTINCT dim FROM ann_vectors").fetchall():
            self._ensure_index(int(dim))

    def _attempt(self, step: Callable[[], object]) -> str | None:
        """Run ``step`` in a savepoint; on a database error (privileges, mostly) undo it and
        return the error's first line, so the store still opens, scoring exactly."""
        store = self._store
        store._execute("SAVEPOINT chronomem_vector")
        try:
            step()
        except Exception as exc:
            if not store._is_db_error(exc):
                raise
            store._execute("ROLLBACK TO SAVEPOINT chronomem_vector")
            return str(exc).splitlines()[0]
        store._execute("RELEASE SAVEPOINT chronomem_vector")
        return None

    def _backfill(self) -> None:
        """Copy the vectors of records written while the index was off (or before it existed)."""
        store = self._store
        after = 0
        while True:
            rows = store._execute(
                "SELECT r.pk, r.space, r.agent, r.embedding FROM records r"
                " WHERE r.pk > ? AND r.embedding IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM ann_vectors a WHERE a.pk = r.pk)"
                " ORDER BY r.pk LIMIT ?",
                (after, _BACKFILL_BATCH),
            ).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            # Before the indexes exist (``_setup`` creates them afterwards): one bulk HNSW
            # build is much faster than inserting into the graph row by row.
            self._insert(
                [
                    (pk, space, agent, np.frombuffer(bytes(blob), dtype="<f4"))
                    for pk, space, agent, blob in rows
                ],
                index=False,
            )

    def _ensure_index(self, dim: int) -> None:
        if dim in self._refused or self._has_index(dim):
            return
        self._store._lock_schema()
        if self._has_index(dim):  # another process made it meanwhile
            return
        # A role that may not create it (it needs to own the table) still writes the copy;
        # reads of this dimension stay exact until the owner opens the store once.
        failed = self._attempt(
            lambda: self._store._execute(
                f"CREATE INDEX ann_vectors_hnsw_{dim} ON ann_vectors"
                f" USING hnsw ((v::vector({dim})) vector_cosine_ops) WHERE dim = {dim}"
            )
        )
        if failed is not None:
            self._refused.add(dim)  # not again from this process

    def _insert(self, rows: Sequence[tuple[int, str, str, np.ndarray]], *, index: bool) -> None:
        if index:
            for dim in sorted({v.shape[0] for *_, v in rows}):
                self._ensure_index(dim)
        self._store._executemany(
            "INSERT INTO ann_vectors (pk, space, agent, dim, v) VALUES (?, ?, ?, ?, ?::vector)",
            [(pk, space, agent, v.shape[0], vector_literal(v)) for pk, space, agent, v in rows],
        )

    # -- the store's hooks -------------------------------------------------------------------
    def replace_all(self, dim: int) -> None:
        """In a model switch's cut-over transaction: the copy holds the new vectors, indexed."""
        if not self._store._has_table("ann_vectors"):
            return
        self._store._execute("DELETE FROM ann_vectors")
        self._backfill()
        self._ensure_index(dim)

    def add(self, space: str, rows: Sequence[tuple[int, str, np.ndarray]]) -> None:
        """In the write transaction: copy new records' vectors — also when this process opened
        before another created the copy. A role that may not write it does not fail the write;
        the next store opened by one that may copies what is missing."""
        if not rows or self._copy_refused:
            return
        if not self.maintained:
            self.maintained = self._store._has_table("ann_vectors")
            if not self.maintained:
                return
        copy = [(pk, space, agent, v) for pk, agent, v in rows]
        if self._attempt(lambda: self._insert(copy, index=True)) is not None:
            self._copy_refused = True

    def nearest(
        self, space: str, agents: Sequence[str], vector: np.ndarray, *, namespace: int, k: int
    ) -> I64 | None:
        """Store keys of the approximately nearest records, or ``None``: score exactly."""
        dim = int(vector.shape[0])
        if not self.enabled or namespace < max(self.min_records, 1) or not self._has_index(dim):
            return None
        limit = min(MAX_CANDIDATES, max(self.candidates, 4 * k))
        if limit >= namespace:
            return None
        store = self._store
        with store.snapshot():
            # An HNSW scan yields at most ef_search rows, before the space and agent filter.
            store._execute("SELECT set_config('hnsw.ef_search', ?, true)", (str(limit),))
            rows = store._query(
                f"SELECT pk FROM ann_vectors WHERE dim = {dim} AND space = ? AND agent = ANY(?)"
                f" ORDER BY v::vector({dim}) <=> ?::vector({dim}) LIMIT ?",
                (space, list(agents), vector_literal(vector), limit),
            )
        if len(rows) < max(k, limit // 2):
            # The scan's nearest were mostly other spaces' or agents' records: too few
            # candidates are left after the filter, so score exactly instead.
            return None
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
