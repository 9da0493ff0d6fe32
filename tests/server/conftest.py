"""Fixtures shared by the service's tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], str | Path]]:
    """A new, empty store on each call, on the parametrised backend."""
    with ExitStack() as stack:
        made = iter(range(100))
        if request.param == "sqlite":
            yield lambda: tmp_path / f"store{next(made)}.db"
            return
        from chronomem.stores.postgres import scratch_database

        admin = request.getfixturevalue("postgres_admin")
        yield lambda: stack.enter_context(scratch_database(admin, prefix="chronomem_http"))
