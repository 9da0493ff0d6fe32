"""`chronomem serve` runs numpy's BLAS on one thread unless the environment says otherwise
(docs/http.md, "Threads")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from chronomem.server import run
from chronomem.server.run import BLAS_THREAD_VARIABLES, ServeSettings, one_blas_thread
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


def test_serve_scores_on_one_blas_thread(
    two_blas_threads: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    seen: list[set[int]] = []

    def run_server(self: StoppingServer, *args: Any, **kwargs: Any) -> None:
        seen.append(blas_threads())  # what the service's requests would score with
        self.started = True

    monkeypatch.setattr(StoppingServer, "run", run_server)
    assert run.serve(ServeSettings(db=tmp_path / "s.db", port=0)) == 0
    assert seen == [{1}]
