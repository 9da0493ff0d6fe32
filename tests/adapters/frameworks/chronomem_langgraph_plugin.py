"""A pytest plugin that runs LangGraph's own store test files with chronomem's store behind them.

Loaded with ``-p chronomem_langgraph_plugin`` into a pytest run over the test files of a
published ``langgraph-checkpoint*`` source distribution (fetched by ``frameworks.py``; nothing of
theirs is copied here). ``--store-backend`` chooses what stands behind LangGraph's store classes:

- ``chronomem``: :class:`~chronomem.adapters.langgraph.ChronomemStore` over a
  :class:`~chronomem.Memory` on what the test connects to — ``:memory:`` or a SQLite file for the
  SQLite suites and the in-memory suite, the very PostgreSQL database the test created for the
  PostgreSQL suites (chronomem's own PostgreSQL store);
- ``inmemory``: LangGraph's own ``InMemoryStore``, the reference the results are compared with.

``InMemoryStore``, ``SqliteStore``, ``AsyncSqliteStore``, ``PostgresStore`` and
``AsyncPostgresStore`` are replaced in their modules before the test files import them, by
classes with the constructors the tests call (``from_conn_string``, ``setup``, the TTL sweeper,
``MIGRATIONS``). Their fixtures run unchanged, except two of the PostgreSQL suites' that reach
``PostgresStore`` internals (``_cursor()``, to drop its migrations table): ours create and drop the
database the same way and open the store without that step.
"""

from __future__ import annotations

import concurrent.futures
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, ClassVar

import pytest
from _pytest.python import Module

BACKENDS = ("chronomem", "inmemory")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-backend", choices=BACKENDS, default="chronomem")


class _Lifecycle:
    """What LangGraph's store classes offer besides ``BaseStore``, as the tests use it."""

    MIGRATIONS: ClassVar[list[Any]] = []
    VECTOR_MIGRATIONS: ClassVar[list[Any]] = []

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, **options: Any) -> Iterator[Any]:
        store = cls(conn_string, **options)
        try:
            yield store
        finally:
            store.close()

    def setup(self) -> None:
        """The schema: chronomem's store makes its own when opened."""

    def start_ttl_sweeper(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[None]:
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        return done

    def stop_ttl_sweeper(self, *args: Any, **kwargs: Any) -> bool:
        return True

    def sweep_ttl(self) -> int:
        return 0

    def close(self) -> None: ...


class _AsyncLifecycle(_Lifecycle):
    @classmethod
    @asynccontextmanager  # type: ignore[arg-type]
    async def from_conn_string(cls, conn_string: str, **options: Any) -> AsyncIterator[Any]:
        store = cls(conn_string, **options)
        try:
            yield store
        finally:
            store.close()

    async def setup(self) -> None:  # type: ignore[override]
        """The schema: chronomem's store makes its own when opened."""

    async def start_ttl_sweeper(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        return None

    async def stop_ttl_sweeper(self, *args: Any, **kwargs: Any) -> bool:  # type: ignore[override]
        return True

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return 0


def _location(conn: Any) -> str:
    """Where chronomem opens a store for what a test connects to."""
    if not isinstance(conn, str):
        raise TypeError(f"the suite's store takes a connection string; got {conn!r}")
    if conn.startswith(("postgres://", "postgresql://")):
        return conn
    return conn or ":memory:"


def _chronomem_classes() -> tuple[type, type]:
    from chronomem import Memory
    from chronomem.adapters.langgraph import ChronomemStore

    class Sync(_Lifecycle, ChronomemStore):
        def __init__(
            self, conn: Any = ":memory:", *, index: Any = None, ttl: Any = None, **_: Any
        ) -> None:
            self._memory = Memory.open(_location(conn), embedder=None)
            super().__init__(self._memory, index=index, ttl=ttl)

        def sweep_ttl(self) -> int:
            return ChronomemStore.sweep_ttl(self)

        def close(self) -> None:
            self._memory.close()

    class Async(_AsyncLifecycle, Sync):
        async def sweep_ttl(self) -> int:  # type: ignore[override]
            return await ChronomemStore.asweep_ttl(self)

    return Sync, Async


def _inmemory_classes(original: type) -> tuple[type, type]:
    class Sync(_Lifecycle, original):  # type: ignore[valid-type, misc]
        def __init__(self, conn: Any = None, *, index: Any = None, **_: Any) -> None:
            super().__init__(index=index)

    class Async(_AsyncLifecycle, Sync):
        pass

    return Sync, Async


def pytest_configure(config: pytest.Config) -> None:
    import langgraph.store.memory as memory

    original = memory.InMemoryStore
    if config.getoption("store_backend") == "chronomem":
        sync, asynchronous = _chronomem_classes()
    else:
        sync, asynchronous = _inmemory_classes(original)
    sync.__name__, asynchronous.__name__ = "SuiteStore", "AsyncSuiteStore"
    memory.InMemoryStore = sync
    for module, names in (
        ("langgraph.store.sqlite", ("SqliteStore", "AsyncSqliteStore")),
        ("langgraph.store.postgres", ("PostgresStore", "AsyncPostgresStore")),
    ):
        try:
            target = __import__(module, fromlist=["_"])
        except ImportError:
            continue
        setattr(target, names[0], sync)
        setattr(target, names[1], asynchronous)
        for sub in ("aio",):
            sub_module = getattr(target, sub, None)
            if sub_module is not None and hasattr(sub_module, names[1]):
                setattr(sub_module, names[1], asynchronous)


# -- the two PostgreSQL fixtures that reach PostgresStore internals --------------------------------
def _database(admin_uri: str) -> tuple[str, str]:
    """A new database's name and URL on the server of ``admin_uri`` (as the suites build it)."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    base, _, last = admin_uri.rpartition("/")
    query = "?" + last.split("?", 1)[1] if "?" in last else ""
    return name, f"{base}/{name}{query}"


@contextmanager
def _scratch(admin_uri: str) -> Iterator[str]:
    from psycopg import Connection

    name, url = _database(admin_uri)
    with Connection.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield url
    finally:
        with Connection.connect(admin_uri, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _postgres_replacements(module: Any) -> dict[str, Any]:
    admin = module.DEFAULT_URI
    out: dict[str, Any] = {}
    if module.__name__.endswith("test_store") and hasattr(module, "_create_vector_store"):

        @contextmanager
        def _create_vector_store(
            vector_type: str, distance_type: str, fake_embeddings: Any,
            text_fields: list[str] | None = None, enable_ttl: bool = True,
        ) -> Iterator[Any]:  # fmt: skip
            index = {"dims": fake_embeddings.dims, "embed": fake_embeddings, "fields": text_fields,
                     "distance_type": distance_type}  # fmt: skip
            with (
                _scratch(admin) as url,
                module.PostgresStore.from_conn_string(url, index=index) as store,
            ):
                store.setup()
                yield store

        out["_create_vector_store"] = _create_vector_store
    if module.__name__.endswith("test_async_store") and hasattr(module, "store"):
        marker = module.store._fixture_function_marker

        @pytest.fixture(scope=marker.scope, params=marker.params, ids=marker.ids)
        async def store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
            with _scratch(admin) as url:
                async with module.AsyncPostgresStore.from_conn_string(url) as opened:
                    await opened.setup()
                    yield opened

        out["store"] = store
    return out


class _SuiteModule(Module):
    def _getobj(self) -> Any:
        module = super()._getobj()
        if "postgres" in str(self.path.parent.parent.name) and hasattr(module, "DEFAULT_URI"):
            for name, value in _postgres_replacements(module).items():
                setattr(module, name, value)
        return module


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Any, parent: Any) -> Module | None:
    if os.path.basename(str(module_path)).startswith("test_"):
        return _SuiteModule.from_parent(parent, path=module_path)
    return None
