"""The embedded store: one SQLite file in WAL mode (DESIGN §6).

Durability: every write method is one ``BEGIN IMMEDIATE`` transaction. With the default
``synchronous=FULL`` a write that returned survives the process being killed and the machine losing
power; ``synchronous="NORMAL"`` keeps it safe against a killed process only, and is faster.

Several processes may open the same file. Writers are serialised by SQLite; each change bumps the
space's ``change_seq`` so other processes' in-memory arrays can fetch exactly what changed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronomem.errors import StoreError
from chronomem.stores.sql import Cursor, SQLStore
from chronomem.stores.sqlite_schema import MIGRATIONS

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLStore):
    """A :class:`~chronomem.stores.base.MemoryStore` over one SQLite file.

    Args:
        path: the database file; created (with its schema) when missing. ``":memory:"`` gives
            a private in-memory database (for experiments; nothing is durable).
        synchronous: ``"FULL"`` (default: durable across power loss) or ``"NORMAL"`` (durable
            across a killed process; faster writes).
        busy_timeout_s: how long a writer waits for another process's transaction.
    """

    migrations = MIGRATIONS
    _begin_write = "BEGIN IMMEDIATE"
    _begin_read = "BEGIN"

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "FULL", busy_timeout_s: float = 30
    ) -> None:
        super().__init__()
        if synchronous.upper() not in {"FULL", "NORMAL", "EXTRA"}:
            raise StoreError(f"synchronous must be FULL, NORMAL or EXTRA; got {synchronous!r}")
        self.path = Path(path)
        self.location = str(self.path)
        try:
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_s
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

    # -- the backend -------------------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    def _is_conflict(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def _is_db_error(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.Error)

    # A unary "+" before a column keeps SQLite from driving a lookup by id or key through the
    # (space, ...) indexes: without statistics it takes "space = ?" for selective, and a 30-id
    # fetch becomes a scan of the whole space.
    def _hint(self, column: str) -> str:
        return f"+{column}"

    def _json_each(self, expression: str) -> str:
        return f"json_each({expression}) AS e"

    def _greatest(self, a: str, b: str) -> str:
        return f"MAX({a}, {b})"

    def _has_table(self, name: str) -> bool:
        row = self._execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return row is not None

    def close(self) -> None:
        """Close the connection; closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                # Refreshing planner statistics is an optimisation: when another process holds
                # the write lock, skip it rather than fail the close.
                with contextlib.suppress(sqlite3.OperationalError):
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: close failed: {exc}") from exc

    # -- purge -------------------------------------------------------------------------------
    def scrub(self) -> str | None:
        # secure_delete has zeroed the freed pages in the database file; the write-ahead log
        # still holds the old pages until it is checkpointed and truncated.
        with self._lock:
            try:
                for _ in range(10):
                    busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                    if not busy:
                        return None
                return (
                    "another process holds a read open, so the write-ahead log could not be "
                    "truncated yet; the next purge or checkpoint does it"
                )
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: checkpoint failed: {exc}") from exc

    def _bytes_on_disk(self) -> int:
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
