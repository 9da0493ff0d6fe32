"""The SQLite store on real files: WAL, schema versions, durability, other processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest

from chronomem import Memory, SimClock, SQLiteStore, StoreError
from chronomem.stores.sqlite_schema import MIGRATIONS

from ..conftest import store_of, unit
from ..waiting import within

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_store_uses_wal_and_records_its_schema_version(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = conn.execute("SELECT version, description FROM schema_version").fetchall()
    assert versions[0][0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"records", "postings", "agents", "spaces", "store_meta"} <= tables
    conn.close()


def test_reopening_applies_no_migration_twice(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    store = SQLiteStore(db_path)
    assert store.schema_version() == MIGRATIONS[-1].version
    store.close()
    conn = sqlite3.connect(db_path)
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
    assert versions == [m.version for m in MIGRATIONS]
    conn.close()


def test_a_version_1_store_is_migrated_in_place(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute(
        "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        " applied_at TEXT NOT NULL)"
    )
    for statement in MIGRATIONS[0].statements:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO schema_version VALUES (1, ?, '2026-01-01')", (MIGRATIONS[0].description,)
    )
    conn.commit()
    conn.close()
    with Memory.open(db_path, embedder=None) as mem:
        rid = mem.remember("survives the migration").id
        assert store_of(mem).schema_version() == MIGRATIONS[-1].version
        assert mem.get(rid).valid_until_before is None


def test_a_store_from_a_newer_version_is_refused(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO schema_version VALUES (999, 'future', '2030-01-01')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        SQLiteStore(db_path)


def test_an_acknowledged_write_survives_kill_9(db_path: Path) -> None:
    writer = _python(
        """
        import sys
        from chronomem import Memory
        mem = Memory.open(sys.argv[1], embedder=None)
        i = 0
        while True:
            result = mem.remember(f"record {i}", embedding=[1.0, float(i), 2.0])
            print(result.id, flush=True)
            i += 1
        """,
        str(db_path),
    )
    acknowledged = []
    assert writer.stdout is not None
    deadline = time.monotonic() + 60
    while len(acknowledged) < 40 and time.monotonic() < deadline:
        line = writer.stdout.readline()
        if not line:
            break
        acknowledged.append(line.strip())
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    assert len(acknowledged) == 40, writer.stderr.read() if writer.stderr else ""
    with Memory.open(db_path, embedder=None) as mem:
        for rid in acknowledged:
            assert mem.get(rid).text.startswith("record ")


def test_recall_sees_writes_and_touches_of_another_process(db_path: Path, clock: SimClock) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        first = mem.remember("first", embedding=unit(1, 0)).id
        assert [h.record.id for h in mem.peek("q", query_embedding=unit(1, 0))] == [first]
        other = _python(
            """
            import sys
            from datetime import datetime, timedelta, UTC
            from chronomem import Memory, SimClock
            clock = SimClock(datetime.fromisoformat(sys.argv[2]) + timedelta(hours=2))
            with Memory.open(sys.argv[1], embedder=None, clock=clock) as mem:
                print(mem.remember("second", embedding=[0.0, 1.0]).id)
                mem.recall("q", query_embedding=[1.0, 0.0], k=1)
            """,
            str(db_path),
            clock.now().isoformat(),
        )
        out, err = other.communicate(timeout=120)
        assert other.returncode == 0, err
        second = out.strip()
        touched_at = clock.now() + timedelta(hours=2)
        clock.advance(hours=3)
        hits = mem.peek("q", query_embedding=unit(1, 0), k=5, explain=True)
        assert [h.record.id for h in hits] == [first, second]
        # The other process's touch reached the store and this process's arrays (recency).
        assert hits[0].record.last_accessed_at == touched_at
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.age == timedelta(hours=1)


def test_full_text_index_follows_the_records(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as mem:
        mem.remember("the lighthouse keeper lit the lamp")
        mem.remember("bread prices doubled in the market")
        matches = store_of(mem).lexical(mem.space, ["default"], "lamp lighthouse")
        assert matches.pk.size == 1
        assert matches.score[0] > 0
        assert store_of(mem).lexical(mem.space, ["default"], "???").pk.size == 0


def test_the_log_is_copied_in_the_background_not_by_a_commit(db_path: Path) -> None:
    """After a write the log's pages reach the database file without another commit, on the
    checkpointer's own thread and connection; a commit checkpoints itself only past
    ``BACKSTOP_PAGES`` (SQLite's default of 1,000 pages made one commit in every few hundred
    copy the log, with the process's connection held: 10–140 ms at 100k records). Closing the
    last handle stops the thread and leaves no log behind."""
    from chronomem.stores.sqlite_connection import BACKSTOP_PAGES

    with Memory.open(db_path, embedder=None, passages=False) as mem:
        texts = [f"note {i}: " + "a line of text about the harbour " * 8 for i in range(300)]
        before = db_path.stat().st_size
        mem.remember_many([{"text": t, "embedding": unit(1.0, i)} for i, t in enumerate(texts)])
        shared = store_of(mem)._shared
        assert shared.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
        assert shared.checkpointer is not None
        thread = shared.checkpointer._thread
        assert thread.is_alive()
        within(10, lambda: db_path.stat().st_size != before)
        assert db_path.stat().st_size > before  # the pages reached the file, no commit since
        assert [h.record.text for h in mem.peek("harbour note 7", k=300)].count(texts[7]) == 1
    assert not thread.is_alive()
    assert not Path(f"{db_path}-wal").exists()


def test_a_checkpointer_closed_as_it_wakes_still_stops(db_path: Path) -> None:
    """``close()`` arriving between the checkpointer's wake-up and its ``clear()`` of the
    wake-up flag (the clear swallows close's signal) still stops the thread: a service's stop
    waited forever on it once, in a local run of the suite."""
    import threading

    from chronomem.stores.sqlite_connection import Checkpointer

    sqlite3.connect(db_path).close()
    checkpointer = Checkpointer(f"file:{db_path}", "NORMAL")
    due = checkpointer._due

    class CloseBeforeClear(threading.Event):
        def clear(self) -> None:  # what close() does, just before the thread's clear()
            checkpointer._stop.set()
            due.set()
            super().clear()

    checkpointer._due = CloseBeforeClear()
    checkpointer._due.set()  # a commit wakes it (whichever flag its thread waits on by now)
    due.set()
    checkpointer._thread.join(timeout=10)
    assert not checkpointer._thread.is_alive()
