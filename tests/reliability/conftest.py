"""The reliability suite's plan (how many trials: ``--reliability ci`` in ``make test``,
``full`` in ``make reliability``), its report of figures, and a PostgreSQL cluster it may stop
and start."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, SimClock

from ..conftest import T0
from ..postgres_server import Cluster, Unavailable, cluster


@dataclass(frozen=True)
class Plan:
    """How much each test of the suite does."""

    kill_trials: int  # kill -9 of a writer, per store
    restart_trials: int  # PostgreSQL stopped and started under a live handle
    process_seconds: float  # four processes writing and touching one store, per store
    fuzz_examples: int  # hypothesis examples per fuzzed verb and store
    residue_layouts: int  # random SQLite page layouts searched for purge residue
    residue_layouts_postgres: int
    residue_layouts_model: int  # with the real embedding model (passages)


PLANS = {
    "ci": Plan(
        kill_trials=3, restart_trials=2, process_seconds=4, fuzz_examples=40,
        residue_layouts=10, residue_layouts_postgres=2, residue_layouts_model=1,
    ),
    "full": Plan(
        kill_trials=25, restart_trials=10, process_seconds=30, fuzz_examples=600,
        residue_layouts=120, residue_layouts_postgres=10, residue_layouts_model=5,
    ),
}  # fmt: skip

_FIGURES: dict[str, Any] = {}


@pytest.fixture(scope="session")
def plan(request: pytest.FixtureRequest) -> Plan:
    return PLANS[str(request.config.getoption("--reliability"))]


@pytest.fixture(scope="session")
def figures() -> dict[str, Any]:
    """Measured figures, by name; written to ``--reliability-report`` at the end."""
    return _FIGURES


@dataclass(frozen=True)
class Stores:
    """New, empty stores of one backend, one per trial."""

    name: str  # "sqlite" or "postgresql"
    directory: Path
    admin_url: str | None

    @contextmanager
    def new(self) -> Iterator[str | Path]:
        if self.admin_url is None:
            path = Path(tempfile.mkdtemp(prefix="store-", dir=self.directory)) / "memory.db"
            yield path
            return
        from chronomem.stores.postgres import scratch_database

        with scratch_database(self.admin_url, prefix="chronomem_reliability") as url:
            yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Stores:
    """Fresh stores on every backend (the reliability tests run on both)."""
    if request.param == "sqlite":
        return Stores("sqlite", tmp_path, None)
    return Stores("postgresql", tmp_path, str(request.getfixturevalue("postgres_admin")))


@dataclass(frozen=True)
class Seed:
    """What the store holds before every case."""

    location: str | Path
    directory: Path
    rid: str  # an open record, cited by `cites`
    cites: str
    closed: str  # superseded by `successor`
    successor: str
    cause: str  # events: cause -> effect
    effect: str


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def seeded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Memory, Seed]]:
    directory = tmp_path_factory.mktemp("bad-inputs")
    if request.param == "sqlite":
        yield from _seed(directory / "memory.db", directory)
        return
    from chronomem.stores.postgres import scratch_database

    with scratch_database(request.getfixturevalue("postgres_admin")) as url:
        yield from _seed(url, directory)


def _seed(location: str | Path, directory: Path) -> Iterator[tuple[Memory, Seed]]:
    clock = SimClock(T0 + timedelta(days=30))
    with Memory.open(location, embedder=None, clock=clock) as mem:
        rid = mem.remember("the lighthouse lamp is lit", agent="ada", embedding=[1, 0, 0]).id
        cites = mem.remember("insight", kind="reflection", evidence=[rid], embedding=[0, 1, 0]).id
        closed = mem.remember("use npm", kind="instruction", embedding=[0, 0, 1]).id
        successor = mem.supersede(closed, "use pnpm", embedding=[1, 1, 0]).id
        cause = mem.add_event("a drought", embedding=[1, 0, 1]).id
        effect = mem.add_event("a riot", kind="crisis", embedding=[0, 1, 1]).id
        mem.link(cause, effect, 0.8)
        assert rid is not None
        assert cites is not None
        assert closed is not None
        assert successor is not None
        yield mem, Seed(location, directory, rid, cites, closed, successor, cause, effect)


@pytest.fixture(scope="session")
def restartable() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this suite's own, durable (a commit is acknowledged once its WAL
    is written), that the tests may stop and start. Skipped where no server binaries exist,
    except under CI=true."""
    try:
        with cluster(durable=True) as made:
            yield made
    except Unavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs PostgreSQL server binaries for the restart trials: {exc}")
        pytest.skip(f"no PostgreSQL server binaries: {exc}")


def _revision() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            check=True, cwd=root,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "tests/reliability"],
            capture_output=True, text=True, check=True, cwd=root,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    path = session.config.getoption("--reliability-report")
    if not path or not _FIGURES:
        return
    mode = str(session.config.getoption("--reliability"))
    header = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "revision": _revision(),
        "mode": mode,
        "plan": asdict(PLANS[mode]),
        "cpu_count": os.cpu_count(),
        "passed": exitstatus == 0,
    }
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.with_suffix(".json").write_text(
        json.dumps({**header, "figures": _FIGURES}, indent=2, default=str) + "\n"
    )
    lines = [
        "# Reliability suite",
        "",
        f"`pytest tests/reliability --reliability {mode}` — {header['date']}, revision "
        f"{header['revision']}, {header['cpu_count']} cores; "
        f"{'every test passed' if header['passed'] else 'SOME TESTS FAILED'}.",
        "",
        "| measure | figure |",
        "|---|---:|",
        *(f"| {name} | {value} |" for name, value in sorted(_FIGURES.items())),
    ]
    target.write_text("\n".join(lines) + "\n")
