"""A PostgreSQL handle outlives its connection (issue 14): a dropped connection is re-established
on the next call, and a transaction it cut short is a typed error that wrote nothing. (A server
stopped and restarted under a live workload: tests/reliability/test_server_restart.py.)"""

from __future__ import annotations

import pytest

from chronomem import Memory, PostgresStore, SimClock, StoreError, StoreUnavailableError
from chronomem.stores.base import StoredRecord

from ..conftest import store_of, unit


def _drop_connection(admin_url: str, store: PostgresStore) -> None:
    """What a server restart or a network failure does to the store's connection."""
    import psycopg

    pid = store._conn.info.backend_pid
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_an_idle_handle_reconnects_on_its_next_call(
    postgres_admin: str, postgres_url: str, clock: SimClock
) -> None:
    with Memory.open(postgres_url, embedder=None, clock=clock) as mem:
        first = mem.remember("before the drop", embedding=unit(1, 0)).id
        store = store_of(mem)
        assert isinstance(store, PostgresStore)
        for call in (
            lambda: mem.remember("after the drop", embedding=unit(0, 1)),
            lambda: mem.peek("drop"),
            lambda: mem.get(first),
            lambda: mem.stats(),
            lambda: mem.recall("before", k=1),
        ):
            _drop_connection(postgres_admin, store)
            call()
        assert mem.stats()["records"] == 2


def test_a_transaction_cut_short_is_a_typed_error_that_wrote_nothing(
    postgres_admin: str, postgres_url: str, clock: SimClock
) -> None:
    with Memory.open(postgres_url, embedder=None, clock=clock) as mem:
        mem.remember("kept", embedding=unit(1, 0))
        store = store_of(mem)
        assert isinstance(store, PostgresStore)
        draft = mem.get(mem.remember("template", embedding=unit(0, 1)).id)

        def cut_short() -> None:
            with store.write():
                store._execute("SELECT 1")
                _drop_connection(postgres_admin, store)
                store.insert_records(mem.space, [StoredRecord(record=draft, embedding=None)])

        with pytest.raises(StoreUnavailableError, match="rolled back, nothing was written") as err:
            cut_short()
        assert not err.value.outcome_unknown
        assert isinstance(err.value, StoreError)
        assert mem.stats()["records"] == 2  # the handle works again; nothing was added
        assert mem.remember("after", embedding=unit(1, 1)).stored


def test_a_server_that_stays_away_is_a_typed_error_after_the_bounded_retries(
    postgres_admin: str, postgres_url: str
) -> None:
    store = PostgresStore(postgres_url, reconnect_timeout_s=0.5)
    try:
        store.url = "postgresql://postgres@127.0.0.1:1/nowhere"  # where the server "went"
        _drop_connection(postgres_admin, store)
        with pytest.raises(StoreUnavailableError, match=r"unreachable .* 0.5 s"):
            store.spaces()
        with pytest.raises(StoreUnavailableError), store.write():
            pass
    finally:
        store.close()
