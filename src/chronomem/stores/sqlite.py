"""The embedded store: one SQLite file in WAL mode (DESIGN §6).

Durability: every write method is one ``BEGIN IMMEDIATE`` transaction. With the default
``synchronous=FULL`` a write that returned survives the process being killed and the machine losing
power; ``synchronous="NORMAL"`` keeps it safe against a killed process only, and is faster.

Several processes may open the same file. Writers are serialised by SQLite; each change bumps the
space's ``change_seq`` so other processes' in-memory arrays can fetch exactly what changed.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronomem.errors import ConfigError, StoreError
from chronomem.stores import sqlite_connection
from chronomem.stores.sql import Cursor, SQLStore, migrations
from chronomem.stores.sqlite_schema import APPLICATION_ID, MIGRATIONS

__all__ = ["APPLICATION_ID", "SQLiteStore"]


_CHECKPOINT_WAIT_MS = 2000  # how long a purge waits for other processes' reads to end


class SQLiteStore(SQLStore):
    """A :class:`~chronomem.stores.base.MemoryStore` over one SQLite file.

    Opening writes nothing when the file is a chronomem store at the current schema version
    (no write lock either, so it never waits for another process's long write); a new or
    older store is created or migrated in one write transaction. A file that is not a
    chronomem store — not SQLite, another application's database (``application_id``), or a
    SQLite database holding other tables — is refused before anything is written to it.

    Args:
        path: the database file. ``":memory:"`` gives a private in-memory database (for
            experiments; nothing is durable).
        synchronous: ``"FULL"`` (default: durable across power loss) or ``"NORMAL"`` (durable
            across a killed process; faster writes).
        busy_timeout_s: how long a writer waits for another process's transaction.
        create: create the store when the file is missing or empty (the default); ``False``
            refuses with "no chronomem store at ..." instead (what read commands want).
    """

    migrations = MIGRATIONS
    _begin_write = "BEGIN IMMEDIATE"
    _begin_read = "BEGIN"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "FULL",
        busy_timeout_s: float = 30,
        create: bool = True,
    ) -> None:
        chosen = str(synchronous).upper()
        if chosen not in {"FULL", "NORMAL", "EXTRA"}:
            raise ConfigError(f"synchronous must be FULL, NORMAL or EXTRA; got {synchronous!r}")
        self.path = Path(path)
        self.location = str(self.path)
        in_memory = self.location == ":memory:"
        if not in_memory:
            _check_path(self.path, create=create)
        # Never a second descriptor on the file: SQLite reads the header, and every handle of
        # this process shares one connection (stores/sqlite_connection.py).
        wait_ms = int(busy_timeout_s * 1000)
        self._shared = sqlite_connection.acquire(
            self.path, create=create, synchronous=chosen, busy_timeout_ms=wait_ms
        )
        super().__init__(self._shared.state)
        self._conn = self._shared.conn
        try:
            with self._lock:
                self._prepare(chosen, wait_ms, create=create, in_memory=in_memory)
                self._migrate()
        except BaseException:
            sqlite_connection.release(self._shared)
            raise

    @property
    def _busy_timeout_ms(self) -> int:
        return self._shared.busy_timeout_ms

    def _prepare(self, synchronous: str, wait_ms: int, *, create: bool, in_memory: bool) -> None:
        """Recognise the file through SQLite (its header: a file that is not SQLite fails the
        first statement, and nothing is written to it), then set the connection up (WAL only
        when it is not yet). On a connection another handle opened, the checks run again and the
        settings only strengthen."""
        try:
            application_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
            tables = [
                r[0]
                for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                    " AND name NOT LIKE 'sqlite%' ORDER BY name"
                ).fetchall()
            ]
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{self.path} is not a chronomem store (not a SQLite database: {exc})"
            ) from exc
        _check_application(self.path, application_id)
        if application_id == 0 and tables and not migrations.is_chronomem(self, MIGRATIONS):
            shown = ", ".join(tables[:8]) + (", ..." if len(tables) > 8 else "")
            raise StoreError(
                f"{self.path} is not a chronomem store: it is a SQLite database holding other "
                f"tables ({shown}); refusing to add chronomem's tables to it"
            )
        if not tables and not create:
            raise StoreError(f"no chronomem store at {self.path} (an empty SQLite database)")
        if self._shared.users > 1:
            self._shared.strengthen(synchronous, wait_ms)
            return
        try:
            journal = str(self._conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if journal != ("memory" if in_memory else "wal"):
                journal = str(self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
            if journal != ("memory" if in_memory else "wal"):
                raise StoreError(f"{self.path}: could not switch to WAL mode (got {journal})")
            self._conn.execute(f"PRAGMA synchronous={synchronous}")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # Freed cells and pages are overwritten with zeros; what this misses (copies left in
            # rebuilt pages) a purge's rewrite removes (scrub).
            self._conn.execute("PRAGMA secure_delete=ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc

    # -- the backend -------------------------------------------------------------------------
    def _execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(sql, params)

    def _executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._conn.executemany(sql, rows)

    def _committed(self) -> None:
        self._shared.committed()

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

    def _joined(self, column: str) -> str:
        return f"group_concat({column})"

    def _for_share(self, sql: str) -> str:
        return sql  # a write transaction holds the whole file

    def _has_table(self, name: str) -> bool:
        return bool(
            self._query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        )

    def close(self) -> None:
        """Close this handle's use of the connection (the last user of the file in this process
        closes it); closing again does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        sqlite_connection.release(self._shared, wrote=self._wrote)

    # -- the in-memory index's snapshots -----------------------------------------------------------
    def index_path(self, space: str) -> Path | None:
        """``<file>-index/<hash of the space>.snapshot`` next to the database file (``None`` for
        an in-memory database)."""
        if self.location == ":memory:":
            return None
        name = hashlib.sha256(space.encode("utf-8")).hexdigest()[:32]
        return Path(f"{self.path}-index") / f"{name}.snapshot"

    def _drop_index_snapshots(self) -> None:
        """Delete every snapshot of the in-memory index (they may hold purged records' vectors
        and texts); the next close of a large enough index writes a new one."""
        directory = Path(f"{self.path}-index")
        if self.location == ":memory:" or not directory.is_dir():
            return
        for path in directory.iterdir():
            if path.is_file():
                path.unlink(missing_ok=True)

    # -- purge -------------------------------------------------------------------------------
    def scrub(self, *, full: bool = False) -> str | None:
        # secure_delete zeroes freed cells and pages, but not every copy: when SQLite rebuilds a
        # page (a b-tree balance after inserts and deletes) the gap between its cell pointers
        # and its content keeps whatever bytes were there, so a deleted term can survive in the
        # unused middle of a live page. VACUUM rebuilds the whole file from the live rows, and
        # the truncating checkpoint copies the rebuilt pages over the old ones, truncates the
        # file and empties the write-ahead log. It costs a rewrite of the file (bench/purge.py).
        # The snapshots of the in-memory index go first: they hold vectors and texts too.
        with self._lock:
            try:
                self._drop_index_snapshots()
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot delete the index snapshots: {exc}") from exc
            try:
                self._conn.execute("VACUUM")
            except sqlite3.OperationalError as exc:
                return (
                    f"the file could not be rewritten yet ({exc}): copies of the purged bytes "
                    f"may remain in unused space of its pages until `chronomem scrub` "
                    f"(Memory.scrub()) succeeds"
                )
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: VACUUM failed: {exc}") from exc
            try:
                # Wait for other processes' reads of the old pages to end, but not for long
                # (this process's background checkpoints wait for this one).
                self._conn.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_WAIT_MS}")
                with self._shared.checkpoints_paused():
                    busy = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise StoreError(f"{self.path}: checkpoint failed: {exc}") from exc
            finally:
                self._conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            if busy:
                return (
                    "another process holds a read open, so the old pages could not be "
                    "overwritten and the write-ahead log truncated yet; the next purge, "
                    "checkpoint or `chronomem scrub` does it"
                )
            return None

    def _bytes_on_disk(self) -> int:
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )


def _check_path(path: Path, *, create: bool) -> None:
    """Refuse, before SQLite opens it, a path that cannot be a chronomem store: a missing file
    when not creating, a missing directory, a directory, a device or a pipe (anything that is
    not a plain file). Only ``stat``: a descriptor opened and closed here would drop this
    process's SQLite locks on the file (stores/sqlite_connection.py)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if not create:
            raise StoreError(
                f"no chronomem store at {path} (nothing is created by a read; write to it "
                f"first: a write creates the store)"
            ) from None
        if not path.parent.is_dir():
            raise StoreError(
                f"cannot create a store at {path}: directory {path.parent} does not exist"
            ) from None
        return
    except OSError as exc:
        raise StoreError(f"cannot open {path}: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} is a directory, not a chronomem store")
    if not stat.S_ISREG(st.st_mode):
        raise StoreError(f"{path} is not a regular file, so not a chronomem store")


def _check_application(path: Path, application_id: int) -> None:
    """Refuse a database another application marked as its own (``0`` is unmarked)."""
    if application_id not in (0, APPLICATION_ID):
        raise StoreError(
            f"{path} is not a chronomem store: it is the SQLite database of another "
            f"application (application_id {application_id:#x}); refusing to change it"
        )
