"""Opening a store (issue 14): nothing is written when the schema is current, nothing is
created by a reader, and a location that is not a chronomem store is refused untouched."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from chronomem import ConfigError, Memory, SimClock, SQLiteStore, StoreError
from chronomem.stores import open_store
from chronomem.stores.sqlite_schema import APPLICATION_ID, MIGRATIONS

from ..conftest import FixedEmbedder, store_of, unit


def _digest(path: Path) -> dict[str, str]:
    """The bytes of a store's files (the database and its write-ahead log)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.parent.iterdir())
        if p.name.startswith(path.name) and not p.name.endswith("-shm")
    }


def test_a_reader_creates_nothing_at_a_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(StoreError, match=f"no chronomem store at {missing}"):
        Memory.open(missing, embedder=None, create=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(StoreError, match=r"directory .* does not exist"):
        Memory.open(tmp_path / "no" / "such.db", embedder=None)


def test_an_empty_file_is_no_store_to_a_reader_and_a_new_store_to_a_writer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(StoreError, match="no chronomem store"):
        Memory.open(path, embedder=None, create=False)
    assert path.stat().st_size == 0
    with Memory.open(path, embedder=None) as mem:
        assert mem.remember("first").stored


def test_a_store_is_marked_with_an_application_id(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    assert db_path.read_bytes()[68:72] == APPLICATION_ID.to_bytes(4, "big")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_a_store_from_before_the_application_id_is_recognised_and_marked(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as mem:
        rid = mem.remember("written before marks existed").id
    conn = sqlite3.connect(db_path)
    marks = next(m for m in MIGRATIONS if "application_id" in m.description)
    later = [m.version for m in MIGRATIONS if m.version > marks.version]
    assert later == [9, 10, 11, 12, 13, 14, 15, 16], "undo the later migrations here too"
    conn.execute("PRAGMA application_id = 0")
    conn.execute("ALTER TABLE records DROP COLUMN speaker")  # migration 9
    conn.execute("DROP TABLE reembed_vectors")  # migration 10
    conn.execute("DROP INDEX records_by_session")  # migration 11
    conn.execute("ALTER TABLE records DROP COLUMN session")
    conn.execute("DROP INDEX records_expiring")  # migration 12
    conn.execute("ALTER TABLE records DROP COLUMN expires_at")
    conn.execute("ALTER TABLE records DROP COLUMN ttl")
    conn.execute("DROP INDEX records_by_source")  # migration 13
    conn.execute("ALTER TABLE records DROP COLUMN source_id")
    conn.execute("ALTER TABLE review_proposals DROP COLUMN change")  # migration 14
    for table in ("changes", "webhooks", "webhook_failures"):  # migration 15
        conn.execute(f"DROP TABLE {table}")
    conn.execute("ALTER TABLE spaces DROP COLUMN feed_seq")
    conn.execute("ALTER TABLE spaces DROP COLUMN graph_seq")  # migration 16
    (seq,) = conn.execute("SELECT change_seq FROM spaces WHERE space = 'default'").fetchone()
    conn.execute("DELETE FROM schema_version WHERE version >= ?", (marks.version,))
    conn.commit()
    conn.close()
    with Memory.open(db_path, embedder=None, create=False) as mem:
        assert mem.get(rid).text == "written before marks existed"
        # the graph may have changed with any change before the migration
        assert store_of(mem).graph_seq(mem.space) == seq
        # the feed starts at the migration: what was written before has no change
        new = mem.remember("written after the feed existed").id
        assert [(c.seq, c.record_id) for c in mem.changes()] == [(1, new)]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (["CREATE TABLE records (id INTEGER, note TEXT)"], "holding other tables .*records"),
        (["CREATE TABLE users (name TEXT)", "CREATE TABLE orders (n INT)"], "orders, users"),
        (["CREATE TABLE schema_version (version TEXT)"], "other tables .*schema_version"),
        (["CREATE TABLE t (x)", "PRAGMA application_id = 1234"], "another application"),
        (["PRAGMA application_id = 1234"], "another application .*0x4d2"),
    ],
)
def test_another_applications_sqlite_file_is_refused_untouched(
    tmp_path: Path, setup: list[str], message: str
) -> None:
    path = tmp_path / "theirs.db"
    conn = sqlite3.connect(path)
    for statement in setup:
        conn.execute(statement)
    conn.commit()
    conn.close()
    before = _digest(path)
    for create in (True, False):
        with pytest.raises(StoreError, match=message):
            Memory.open(path, embedder=None, create=create)
    assert _digest(path) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"name,age\nada,36\n", "not a SQLite database"),
        (b"SQLite format 3\x00" + b"\x00" * 40, "not a chronomem store"),
    ],
)
def test_a_file_that_is_not_sqlite_is_refused_untouched(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "notes.csv"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=message):
        Memory.open(path, embedder=None)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv"]


def test_a_directory_or_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        Memory.open(tmp_path, embedder=None)
    for create in (True, False):
        with pytest.raises(StoreError, match="not a regular file"):
            Memory.open("/dev/null", embedder=None, create=create)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match="not a regular file"):
        Memory.open(fifo, embedder=None)


@pytest.mark.parametrize(
    "location", ["mysql://db.internal/memory", "redis://cache:6379/0", "sqlite://relative.db"]
)
def test_a_location_of_another_kind_is_a_config_error(location: str) -> None:
    with pytest.raises(ConfigError, match=r"sqlite:///|unsupported store URL scheme"):
        open_store(location)


def test_opening_a_current_store_writes_nothing(db_path: Path, clock: SimClock) -> None:
    embedder = FixedEmbedder(dim=4)
    with Memory.open(db_path, embedder=embedder, clock=clock) as mem:
        mem.remember("the lamp is lit")
    before = _digest(db_path)
    for _ in range(2):
        with Memory.open(db_path, embedder=embedder, clock=clock, create=False) as mem:
            mem.peek("lamp")
            mem.stats()
    assert _digest(db_path) == before


def test_a_new_store_opened_with_an_embedder_records_it_with_the_first_vector(
    db_path: Path, clock: SimClock
) -> None:
    embedder = FixedEmbedder(dim=4, model_id="test/first")
    with Memory.open(db_path, embedder=embedder, clock=clock) as mem:
        assert mem.dim == 4
        assert mem.stats()["embedding_model"] is None  # opening wrote nothing
        mem.remember("the lamp is lit")
        assert (mem.stats()["embedding_model"], mem.stats()["embedding_dim"]) == ("test/first", 4)


def test_opening_does_not_wait_for_another_process_s_long_write(
    db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        mem.remember("the lamp is lit", embedding=unit(1, 0))
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held for the whole test
    holder.execute("INSERT INTO store_meta (key, value) VALUES ('held', 'yes')")
    try:
        start = time.monotonic()
        SQLiteStore(db_path, busy_timeout_s=20).close()
        with Memory.open(db_path, embedder=None, clock=clock, create=False) as mem:
            assert [h.record.text for h in mem.peek("lamp")] == ["the lamp is lit"]
        # the busy timeouts are 20 s and 30 s (Memory.open's default): nobody waited, with
        # room for a loaded machine's slow open
        assert time.monotonic() - start < 10
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_postgres_reader_creates_nothing_and_refuses_foreign_tables(postgres_url: str) -> None:
    import psycopg

    with pytest.raises(StoreError, match="no chronomem store in"):
        Memory.open(postgres_url, embedder=None, create=False)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        tables = conn.execute("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables.fetchone() == (0,)
        conn.execute("CREATE TABLE records (id INTEGER, note TEXT)")
    with pytest.raises(StoreError, match=r"tables named like chronomem's \(records\)"):
        Memory.open(postgres_url, embedder=None)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE records")
        conn.execute("CREATE TABLE schema_version (installed_rank INT, version TEXT)")
    with pytest.raises(StoreError, match="another tool"):
        Memory.open(postgres_url, embedder=None)


def test_postgres_opening_a_current_store_takes_no_schema_lock(postgres_url: str) -> None:
    import psycopg

    from chronomem.stores.postgres import _SCHEMA_LOCK

    Memory.open(postgres_url, embedder=None).close()
    with psycopg.connect(postgres_url) as holder:
        holder.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")  # held until rollback
        opened: list[Memory] = []
        thread = threading.Thread(
            target=lambda: opened.append(Memory.open(postgres_url, embedder=None, create=False))
        )
        thread.start()
        thread.join(timeout=20)
        assert opened, "opening waited for the schema lock"
        opened[0].close()
        holder.rollback()
