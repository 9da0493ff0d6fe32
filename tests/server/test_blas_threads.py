"""`chronomem serve` runs numpy's BLAS and the int8 scan on one thread unless the environment
says otherwise (docs/http.md, "Threads")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from chronomem.retrieval import compact
from chronomem.server import run
from chronomem.server.run import (
    BLAS_THREAD_VARIABLES,
    ServeSettings,
    one_blas_thread,
    one_scan_thread,
)
from chronomem.server.stopping import StoppingServer


def blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture
def two_blas_threads() -> Iterator[None]:
    """numpy's BLAS on two threads for the test, its own count restored after."""
    if not blas_threads():
        pytest.skip("numpy here links no BLAS that threadpoolctl can see")
    before = threadpool_limits(limits=2, user_api="blas")
    try:
        assert blas_threads() == {2}
        yield
    finally:
        before.restore_original_limits()


def test_one_blas_thread_limits_the_process(two_blas_threads: None) -> None:
    assert one_blas_thread({}) is True
    assert blas_threads() == {1}


@pytest.mark.parametrize("variable", BLAS_THREAD_VARIABLES)
def test_a_thread_count_in_the_environment_is_left_as_chosen(
    two_blas_threads: None, variable: str
) -> None:
    assert one_blas_thread({variable: "2"}) is False
    assert blas_threads() == {2}


@pytest.mark.parametrize(
    ("environ", "count"),
    [({}, 1), ({"OMP_NUM_THREADS": "3"}, 3), ({"OMP_NUM_THREADS": "0"}, 1),
     ({"OMP_NUM_THREADS": "many"}, 1), ({"OPENBLAS_NUM_THREADS": "4"}, 1)],
)  # fmt: skip
def test_the_int8_scan_runs_on_one_thread_unless_openmp_is_given_a_count(
    scan_threads: None, environ: dict[str, str], count: int
) -> None:
    assert one_scan_thread(environ) == count
    assert compact.set_scan_threads(0) == count


def test_serve_scores_on_one_blas_thread_and_scans_on_one(
    two_blas_threads: None, scan_threads: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    seen: list[tuple[set[int], int]] = []

    def run_server(self: StoppingServer, *args: Any, **kwargs: Any) -> None:
        # what the service's requests would score with
        seen.append((blas_threads(), compact._scan_threads))
        self.started = True

    monkeypatch.setattr(StoppingServer, "run", run_server)
    assert run.serve(ServeSettings(db=tmp_path / "s.db", port=0)) == 0
    assert seen == [({1}, 1)]
