"""The PostgreSQL store on a real server: schema, types, errors, purge (DESIGN §6)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest

from chronomem import Memory, PostgresStore, SimClock, StoreError
from chronomem.stores.postgres_schema import PG_MIGRATIONS

from ..conftest import store_of, unit

NEEDLE = "vault combination Zq7xW-31-OPEN"


def test_migrations_are_recorded_once_and_instants_are_timestamptz(postgres_url: str) -> None:
    PostgresStore(postgres_url).close()
    store = PostgresStore(postgres_url)  # reopening applies nothing twice
    try:
        versions = [r[0] for r in store._query("SELECT version FROM schema_version")]
        assert versions == [m.version for m in PG_MIGRATIONS]
        types = dict(
            store._query(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_name = 'records'"
            )
        )
        for column in ("occurred_at", "recorded_at", "last_accessed_at", "valid_until",
                       "superseded_at", "valid_until_before", "last_verified_at"):  # fmt: skip
            assert types[column] == "timestamp with time zone", column
        assert types["embedding"] == "bytea"
    finally:
        store.close()


def test_a_store_from_a_newer_version_is_refused(postgres_url: str) -> None:
    store = PostgresStore(postgres_url)
    with store.write():
        store._execute("INSERT INTO schema_version VALUES (999, 'future', '2030-01-01')")
    store.close()
    with pytest.raises(StoreError, match="newer"):
        PostgresStore(postgres_url)


def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    url = "postgresql://agent:hunter2@127.0.0.1:1/memory"
    with pytest.raises(StoreError) as err:
        Memory.open(url, embedder=None)
    assert "hunter2" not in str(err.value)
    assert "agent:***@127.0.0.1:1/memory" in str(err.value)


def test_embeddings_and_instants_are_stored_exactly(location: str | Path, clock: SimClock) -> None:
    tricky = np.array(
        [1 / 3, -0.0, 1e-45, np.finfo(np.float32).max, -np.finfo(np.float32).tiny, 0.1],
        dtype=np.float32,
    )
    clock.advance(microseconds=987_654)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        rid = mem.remember("exact", embedding=tricky).id
    with Memory.open(location, embedder=None, clock=clock) as mem:
        stored = store_of(mem).get_embedding(mem.space, rid)
        assert stored is not None
        assert stored.tobytes() == tricky.tobytes()
        assert mem.get(rid).recorded_at == clock.now()


def _data_directory(store: PostgresStore) -> Path | None:
    """The database's directory when the server runs on this machine and we may read it."""
    rows = store._query(
        "SELECT current_setting('data_directory') || '/' || pg_relation_filepath('records')"
    )
    path = Path(rows[0][0]).parent
    return path if path.is_dir() and os.access(path, os.R_OK) else None


def _bytes_in(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file())


def test_purge_deletes_rows_vectors_postings_and_the_documented_vacuum_erases_the_bytes(
    postgres_url: str, clock: SimClock
) -> None:
    with Memory.open(postgres_url, embedder=None, clock=clock) as mem:
        keep = mem.remember("the lighthouse lamp is lit", embedding=unit(1, 0)).id
        secret = mem.remember(NEEDLE, sensitivity="secret", embedding=unit(0, 1)).id
        store = store_of(mem)
        assert isinstance(store, PostgresStore)
        (pk,) = store._query("SELECT pk FROM records WHERE id = ?", (secret,))[0]
        directory = _data_directory(store)
        if directory is not None:
            store._execute("CHECKPOINT")
            assert NEEDLE.encode() in _bytes_in(directory)  # the check below can fail
        result = mem.forget(secret, "rotated")
        assert result.purged
        assert not result.scrubbed
        assert result.remains is not None
        assert "VACUUM FULL" in result.remains
        # Logically gone at once, for every process: row, vector, postings, search.
        assert store._query("SELECT COUNT(*) FROM records WHERE id = ?", (secret,)) == [(0,)]
        assert store._query("SELECT COUNT(*) FROM postings WHERE pk = ?", (pk,)) == [(0,)]
        assert [h.record.id for h in mem.peek("vault combination", preset="default")] == [keep]
        tombstone = store._query("SELECT * FROM tombstones WHERE record_id = ?", (secret,))
        assert NEEDLE not in repr(tombstone)
        assert all(NEEDLE not in repr(e.to_dict()) for e in mem.audit())
        assert "chronomem scrub" in result.remains
        # Physically gone from the database's files after `chronomem scrub` (docs/storage.md);
        # the WAL, replicas and backups are the operator's to rotate, and it says so.
        scrubbed = mem.scrub()
        assert not scrubbed.scrubbed
        assert scrubbed.remains is not None
        assert "WAL segments written before this scrub" in scrubbed.remains
        if directory is not None:
            assert NEEDLE.encode() not in _bytes_in(directory)
        assert [h.record.id for h in mem.peek("lamp", preset="default")] == [keep]


def test_schemas_in_the_search_path_hold_separate_stores(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA team_a")
        conn.execute("CREATE SCHEMA team_b")
    urls = {name: f"{postgres_url}?options=-csearch_path%3D{name}" for name in ("team_a", "team_b")}
    with Memory.open(urls["team_a"], embedder=None) as a:
        a.remember("only in team a", embedding=[1.0, 0.0])
    with Memory.open(urls["team_b"], embedder=None) as b:
        b.remember("only in team b", embedding=[0.0, 1.0, 0.0])  # its own dimension too
        assert [h.record.text for h in b.peek("team", preset="default")] == ["only in team b"]
        assert b.stats()["bytes_on_disk"] > 0
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT table_schema, COUNT(*) FROM information_schema.tables"
            " WHERE table_name = 'records' GROUP BY table_schema ORDER BY table_schema"
        ).fetchall()
    assert tables == [("team_a", 1), ("team_b", 1)]


def test_scrub_needs_the_owner_of_the_tables(postgres_url: str, clock: SimClock) -> None:
    """VACUUM only warns when a role may not vacuum a table; scrub turns that into an error."""
    PostgresStore(postgres_url).close()
    role = f"chronomem_app_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(postgres_url)
    app_url = urlunsplit(parts._replace(netloc=f"{role}:pw@{parts.hostname}:{parts.port}"))
    owner = PostgresStore(postgres_url)
    try:
        with owner.write():
            owner._execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
            owner._execute(f"GRANT USAGE ON SCHEMA public TO {role}")
            owner._execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
            owner._execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {role}")
        with Memory.open(app_url, embedder=None, clock=clock) as app:
            app.forget(app.remember("to purge", embedding=[1.0, 0.0]).id, "test", purge=True)
            with pytest.raises(StoreError, match="scrub needs the role that owns"):
                app.scrub()
    finally:
        with owner.write():
            owner._execute(f"DROP OWNED BY {role}")
            owner._execute(f"DROP ROLE {role}")
        owner.close()
