"""One SQLite connection per database file per process, shared by every store object on it.

Why: POSIX advisory locks belong to a process and a file, not to a descriptor, and closing *any*
descriptor of the file drops *all* of the process's locks on it (SQLite, "How To Corrupt An SQLite
Database File", §2.2). A second descriptor on a live database — a header read with ``open()``, a
second connection made by code that does not know the first — lets another process believe it is
the last user: it checkpoints and deletes the write-ahead log under a connection still writing to
it, and acknowledged writes vanish. So nothing here opens the database file except SQLite, and
every handle of one file in one process (two spaces, a LangGraph store beside a retriever, the
service's key table beside its spaces) goes through one connection, keyed by the file's device
and inode (a symlink or another spelling of the path finds the same connection).

The connection's :class:`~chronomem.stores.sql.store.TransactionState` is shared with it: a
transaction of one handle holds the others' calls until it ends (SQLite serialises writers of a
file anyway; in one process they now queue on a lock instead of spinning on ``busy_timeout``).
Settings only ever strengthen: a handle asking ``synchronous=FULL`` of a connection opened with
``NORMAL`` raises it for every handle, never the reverse.

The write-ahead log is copied into the database file by a :class:`Checkpointer`: its own SQLite
connection (a second connection of SQLite's own is safe: SQLite shares the file's locks between
the connections of a process) on its own thread, started by the first write. SQLite's automatic
checkpoint ran inside the commit that crossed 1,000 pages, with the connection held: every
statement of the process waited behind it, 10–140 ms at 100k records (docs/storage.md). It
stays as a backstop, at :data:`BACKSTOP_PAGES`, for a log the background copies cannot keep
small (a reader holding an old snapshot for long).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from chronomem.errors import StoreError
from chronomem.stores.sql.store import TransactionState

__all__ = ["BACKSTOP_PAGES", "Checkpointer", "SharedConnection", "acquire", "release", "users"]

_log = logging.getLogger("chronomem")

# Durability levels in increasing strength; a shared connection takes the strongest asked.
_SYNCHRONOUS = ("NORMAL", "FULL", "EXTRA")
#: The write-ahead log's size, in pages, at which a commit checkpoints itself (SQLite's
#: ``wal_autocheckpoint``; its default, 1,000, is what the background checkpoints replace).
BACKSTOP_PAGES = 16_384
#: After a commit, the checkpointer waits this long for more before copying (seconds).
CHECKPOINT_DELAY_S = 0.2


class Checkpointer:
    """Passive checkpoints of one database file, on a thread and a connection of their own,
    after commits (at most one per :data:`CHECKPOINT_DELAY_S`). A passive checkpoint never
    waits: it copies what no reader still needs, and writers and readers go on meanwhile. A
    failed one is logged and left to the next commit's."""

    def __init__(self, target: str, synchronous: str) -> None:
        self._target = target
        self._synchronous = synchronous
        # held around each checkpoint, and by a purge's truncating checkpoint (:meth:`paused`),
        # which fails rather than wait when another checkpoint is running
        self._running = threading.Lock()
        self._due = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chronomem-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """A write transaction committed: its pages are in the log."""
        self._due.set()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No background checkpoint while the block runs (after the one under way)."""
        with self._running:
            yield

    def close(self) -> None:
        """Stop after the checkpoint under way (the connection's last user closes the file,
        which checkpoints what is left)."""
        self._stop.set()
        self._due.set()
        self._thread.join()

    def _run(self) -> None:
        conn = None
        try:
            conn = sqlite3.connect(self._target, uri=True, isolation_level=None)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            # close() sets _stop before _due, so a clear() that swallows close()'s _due comes
            # after _stop is set, and the loop's test sees it
            while not self._stop.is_set():
                self._due.wait()
                if self._stop.wait(CHECKPOINT_DELAY_S):
                    return
                self._due.clear()
                with self._running:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error as exc:  # the commits' own checkpoints (the backstop) go on
            _log.warning("background checkpoints of %s stopped: %s", self._target, exc)
        finally:
            if conn is not None:
                conn.close()


@dataclass(eq=False, slots=True)
class SharedConnection:
    """The process's connection to one database file and what its users share."""

    conn: sqlite3.Connection
    key: tuple[int, int] | None  # (st_dev, st_ino); None: a private ``:memory:`` database
    synchronous: str
    busy_timeout_ms: int
    state: TransactionState = field(default_factory=TransactionState)
    users: int = 1
    wrote: bool = False  # a user opened a write transaction (``PRAGMA optimize`` at the end)
    pid: int = field(default_factory=os.getpid)
    target: str | None = None  # the URI it was opened with (None: in memory)
    checkpointer: Checkpointer | None = None  # started by the first commit

    @contextlib.contextmanager
    def checkpoints_paused(self) -> Iterator[None]:
        """No background checkpoint of this file while the block runs (a purge's own)."""
        if self.checkpointer is None:
            yield
        else:
            with self.checkpointer.paused():
                yield

    def committed(self) -> None:
        """A write transaction committed (under ``state.lock``): the log has pages to copy."""
        if self.target is None:
            return
        if self.checkpointer is None:
            try:
                self.checkpointer = Checkpointer(self.target, self.synchronous)
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
            except (RuntimeError, sqlite3.Error) as exc:  # no thread: SQLite's own checkpoints
                _log.warning("no background checkpoints of %s: %s", self.target, exc)
                self.target = None
                return
        self.checkpointer.committed()

    def strengthen(self, synchronous: str, busy_timeout_ms: int) -> None:
        """Apply a new user's settings where they are stronger (under ``state.lock``)."""
        if _SYNCHRONOUS.index(synchronous) > _SYNCHRONOUS.index(self.synchronous):
            self.conn.execute(f"PRAGMA synchronous={synchronous}")
            self.synchronous = synchronous
        if busy_timeout_ms > self.busy_timeout_ms:
            self.conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            self.busy_timeout_ms = busy_timeout_ms


_open: dict[tuple[int, int], SharedConnection] = {}
_registry = threading.Lock()


def _forget_inherited() -> None:
    # A forked child must not use its parent's connections (SQLite forbids it); dropping the
    # entries without closing them leaves the parent's descriptors alone.
    _open.clear()


os.register_at_fork(after_in_child=_forget_inherited)


def _key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


def acquire(
    path: Path, *, create: bool, synchronous: str, busy_timeout_ms: int
) -> SharedConnection:
    """The process's connection to ``path``, made when there is none (``create``: SQLite may
    create the file). The caller checks and prepares the database under ``state.lock`` and
    calls :func:`release` when done, also after a failure."""
    if str(path) == ":memory:":
        return SharedConnection(
            conn=_connect(":memory:", uri=False, timeout_ms=busy_timeout_ms, path=path),
            key=None, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms,
        )  # fmt: skip
    with _registry:
        key = _key(path)
        found = None if key is None else _open.get(key)
        if found is not None and found.pid == os.getpid():
            found.users += 1
            return found
        target = path.absolute().as_uri() + ("?mode=rwc" if create else "?mode=rw")
        conn = _connect(target, uri=True, timeout_ms=busy_timeout_ms, path=path)
        key = _key(path)
        if key is None:  # removed between the connect and the stat: nothing to share
            conn.close()
            raise StoreError(f"cannot open SQLite store at {path}: the file disappeared")
        shared = SharedConnection(
            conn=conn, key=key, synchronous=synchronous, busy_timeout_ms=busy_timeout_ms,
            target=path.absolute().as_uri() + "?mode=rw",
        )  # fmt: skip
        _open[key] = shared
        return shared


def release(shared: SharedConnection, *, wrote: bool = False) -> None:
    """One user is done; the last one closes the connection (after ``PRAGMA optimize`` when
    anyone wrote: refreshing planner statistics is an optimisation, skipped when another process
    holds the write lock)."""
    with _registry:
        shared.wrote |= wrote
        shared.users -= 1
        if shared.users > 0:
            return
        if shared.key is not None and _open.get(shared.key) is shared:
            del _open[shared.key]
    if shared.checkpointer is not None:
        shared.checkpointer.close()
    with shared.state.lock:
        try:
            if shared.wrote:
                with contextlib.suppress(sqlite3.OperationalError):
                    shared.conn.execute("PRAGMA optimize")
            shared.conn.close()
        except sqlite3.Error as exc:
            raise StoreError(f"close failed: {exc}") from exc


def _connect(target: str, *, uri: bool, timeout_ms: int, path: Path) -> sqlite3.Connection:
    try:
        return sqlite3.connect(
            target,
            isolation_level=None,
            check_same_thread=False,
            timeout=timeout_ms / 1000,
            uri=uri,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open SQLite store at {path}: {exc}") from exc


def users(path: Path) -> int:
    """How many store objects of this process share ``path``'s connection (0: none open)."""
    key = _key(path)
    with _registry:
        found = None if key is None else _open.get(key)
        return 0 if found is None or found.pid != os.getpid() else found.users
