"""Shared fixtures: a settable clock, real SQLite files and PostgreSQL databases, fixed vectors,
and the real model."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from chronomem import Memory, SimClock
from chronomem.retrieval import compact

from .postgres_server import Unavailable, server

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite golden files instead of comparing (review the diff like code)",
    )
    parser.addoption(
        "--reliability",
        choices=("ci", "full"),
        default="ci",
        help="how many trials the reliability suite runs (tests/reliability): 'ci' fits the "
        "CI budget; 'full' is what `make reliability` runs",
    )
    parser.addoption(
        "--reliability-report",
        metavar="PATH",
        help="write the reliability suite's figures to PATH (Markdown) and PATH with .json",
    )


class FixedEmbedder:
    """A deterministic embedder for unit tests of pure logic: known texts map to given vectors,
    anything else to a hash-seeded random unit vector. Not a stand-in for the real model."""

    def __init__(
        self,
        vectors: dict[str, Sequence[float]] | None = None,
        *,
        dim: int = 8,
        model_id: str = "test/fixed",
    ) -> None:
        self._vectors = {k: np.asarray(v, dtype=np.float32) for k, v in (vectors or {}).items()}
        self._dim = dim
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        return self._dim

    def vector(self, text: str) -> npt.NDArray[np.float32]:
        if text in self._vectors:
            return self._vectors[text]
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=self._dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        return (
            np.stack([self.vector(t) for t in texts])
            if texts
            else np.empty((0, self._dim), np.float32)
        )


class GatedEmbedder(FixedEmbedder):
    """Blocks a call that embeds ``gate_text`` until ``release`` is set (``entered`` says it
    began). Thread-safe: the engine runs it outside the handle's lock."""

    thread_safe = True

    def __init__(self, gate_text: str, *, model_id: str = "test/fixed") -> None:
        super().__init__(dim=8, model_id=model_id)
        self.gate_text = gate_text
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        if self.gate_text in texts:
            self.entered.set()
            assert self.release.wait(30)
        return super().embed(texts)


@pytest.fixture
def scan_threads() -> Iterator[None]:
    """The process's int8 scan thread count restored after the test."""
    before = compact.set_scan_threads(0)
    try:
        yield
    finally:
        compact.set_scan_threads(before)


@pytest.fixture
def clock() -> SimClock:
    return SimClock(T0)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


def _session_server(start: Callable[[], AbstractContextManager[str]], what: str) -> Iterator[str]:
    """Skipped when the server cannot be started, except in CI (``CI=true``): a failure there."""
    try:
        with start() as url:
            yield url
    except Unavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs {what}: {exc}")
        pytest.skip(f"no {what}: {exc}")


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[str]:
    """A PostgreSQL server for the session (see tests/postgres_server.py)."""
    yield from _session_server(server, "a PostgreSQL server for the store contract tests")


@pytest.fixture(scope="session")
def pgvector_admin() -> Iterator[str]:
    """A PostgreSQL server with the pgvector extension, for the session."""
    yield from _session_server(lambda: server(pgvector=True), "a PostgreSQL server with pgvector")


@pytest.fixture
def postgres_url(postgres_admin: str) -> Iterator[str]:
    """A fresh, empty database on the session's server."""
    from chronomem.stores.postgres import scratch_database

    with scratch_database(postgres_admin, prefix="chronomem_test") as url:
        yield url


@pytest.fixture
def pgvector_url(pgvector_admin: str) -> Iterator[str]:
    """A fresh, empty database on the session's pgvector server."""
    from chronomem.stores.postgres import scratch_database

    with scratch_database(pgvector_admin, prefix="chronomem_test") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, db_path: Path) -> str | Path:
    """Where a store lives, once per backend: tests that take it form the store contract suite
    and must pass identically on every store."""
    if request.param == "sqlite":
        return db_path
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def mem(location: str | Path, clock: SimClock) -> Iterator[Memory]:
    """A store on every backend (a real SQLite file, a real PostgreSQL database), no embedder:
    tests pass vectors explicitly."""
    with Memory.open(location, embedder=None, clock=clock, preset="generative-agents") as m:
        yield m


@pytest.fixture(scope="session")
def minilm():  # type: ignore[no-untyped-def]
    """The real bundled all-MiniLM-L6-v2, one torch thread."""
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(num_threads=1)


def unit(*values: float) -> npt.NDArray[np.float32]:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def store_of(memory: Memory) -> Any:
    """The store behind a handle, for white-box tests of the storage layer (adapters never reach
    it: the engine's verbs are the only way in)."""
    return memory._h.store
