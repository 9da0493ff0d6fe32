"""LangGraph's own store tests, run against chronomem's store (issue 26).

The test files of the published source distributions of ``langgraph-checkpoint``,
``langgraph-checkpoint-sqlite`` and ``langgraph-checkpoint-postgres`` (the installed versions,
fetched at test time by ``frameworks/sources.py``, never copied here) run twice in a separate
pytest: with chronomem's store behind LangGraph's store classes, and with LangGraph's own
``InMemoryStore`` there (``frameworks/chronomem_langgraph_plugin.py``). chronomem may fail only
where ``InMemoryStore`` fails too, or where docs/agents.md lists a deliberate difference, each
proved intended by a test of ours (``test_langgraph.py``); tests that reach another store's
internals are deselected with the reason.

The PostgreSQL suites connect to ``postgres:postgres@localhost:5441`` (their conftest): this
module starts a throwaway cluster there for them; chronomem then runs its own PostgreSQL store in
the very databases their fixtures create.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..postgres_server import Unavailable, cluster
from .frameworks import sources

PLUGIN_DIR = Path(__file__).parent / "frameworks"

SUITES = {
    "langgraph-checkpoint": ("tests/test_store.py",),
    "langgraph-checkpoint-sqlite": (
        "tests/test_store.py",
        "tests/test_async_store.py",
        "tests/test_ttl.py",
    ),
    "langgraph-checkpoint-postgres": ("tests/test_store.py", "tests/test_async_store.py"),
}

# Tests of another store's internals: not part of the BaseStore contract.
INTERNALS = {
    "langgraph-checkpoint-sqlite": {
        "tests/test_store.py::test_vector_store_initialization": "reads SqliteStore.conn",
        "tests/test_store.py::test_nonnull_migrations": "SqliteStore's migrations",
        "tests/test_store.py::test_escape_glob_literal": "a SqliteStore SQL helper",
        "tests/test_store.py::test_namespace_match_pattern": "a SqliteStore SQL helper",
        "tests/test_store.py::test_list_namespaces_prefix_uses_indexable_condition": (
            "SqliteStore's SQL"
        ),
    },
    "langgraph-checkpoint-postgres": {
        "tests/test_store.py::test_escape_like_literal": "a PostgresStore SQL helper",
        "tests/test_store.py::test_namespace_match_pattern": "a PostgresStore SQL helper",
        "tests/test_async_store.py::test_abatch_uses_single_pool_checkout": (
            "counts PostgresStore's pool checkouts"
        ),
        **{
            f"{file}::test_omit_expired_{case}": (
                "backdates and reads rows through PostgresStore._cursor(); chronomem never "
                "returns an expired item (docs/agents.md), what omit_expired=True asks"
            )
            for file in ("tests/test_store.py", "tests/test_async_store.py")
            for case in (
                "filters_read_paths",
                "disabled_preserves_expired_rows",
                "refresh_ttl_only_refreshes_live_rows",
                "search_pagination",
            )
        },
    },
}
# PostgresStore's pipeline and connection-pool modes and its pgvector column types and distances:
# chronomem's store takes none of these options (it ranks by cosine), so the [pipe] and [pool]
# variants of a test, and its halfvec, l2 and inner_product ones, are its [default] or
# [vector_cosine] variant again, at a second apiece.
SELECT = {
    "langgraph-checkpoint-postgres": (
        "-k",
        "not pipe and not pool and not halfvec and not l2 and not inner_product",
    )
}

# Where chronomem differs from LangGraph's SQL stores on purpose (docs/agents.md, "LangGraph
# store"); InMemoryStore differs from them the same way, so these fail for both.
DELIBERATE = {
    "test_sql_injection_vulnerability": "any filter key is data, never SQL: none is refused",
    "test_no_running_loop": "sync methods also work on an event loop thread (a worker thread)",
}


def _outcomes(report: Path) -> dict[str, str]:
    """test id (file::name[params]) -> passed / failed / skipped, from a JUnit XML report."""
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        name = case.get("name", "")
        parts = module.split("/")
        # "tests.test_store.TestSqliteStore" -> file tests/test_store.py, class TestSqliteStore
        file = "/".join(parts[:2]) + ".py"
        node = "::".join([file, *parts[2:], name])
        status = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                status = "failed"
            elif child.tag == "skipped":
                status = "skipped"
        out[node] = status
    return out


def _run(
    root: Path,
    targets: tuple[str, ...],
    backend: str,
    report: Path,
    deselect: dict[str, str],
    select: tuple[str, ...] = (),
) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR)}
    command = [
        sys.executable, "-m", "pytest", *targets, "-p", "chronomem_langgraph_plugin",
        f"--store-backend={backend}", f"--junitxml={report}", "-q", "-p", "no:cacheprovider",
        "-o", "addopts=", "-o", "asyncio_default_fixture_loop_scope=function", "--timeout=600",
        *(f"--deselect={node}" for node in deselect), *select,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise AssertionError(f"the suite did not run ({done.returncode}):\n{output}")
    return _outcomes(report)


@pytest.fixture(scope="module")
def langgraph_postgres() -> Iterator[None]:
    try:
        with cluster(port=5441):
            yield
    except Unavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs a PostgreSQL server for LangGraph's suites: {exc}")
        pytest.skip(f"no PostgreSQL server on port 5441 for LangGraph's suites: {exc}")


@pytest.mark.parametrize("distribution", sorted(SUITES))
def test_langgraph_store_suites(
    distribution: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if distribution.endswith("postgres"):
        request.getfixturevalue("langgraph_postgres")
    try:
        root = sources.sources(distribution)
    except sources.Unavailable as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs {distribution}'s tests: {exc}")
        pytest.skip(str(exc))
    deselect = INTERNALS.get(distribution, {})
    select = SELECT.get(distribution, ())
    ours = _run(
        root, SUITES[distribution], "chronomem", tmp_path / "chronomem.xml", deselect, select
    )
    failed = sorted(t for t, s in ours.items() if s == "failed")
    # The reference runs only what chronomem failed: whether InMemoryStore fails it too.
    theirs = (
        _run(root, tuple(failed), "inmemory", tmp_path / "inmemory.xml", deselect) if failed else {}
    )
    assert set(theirs) == set(failed), "the reference run must run exactly chronomem's failures"
    unexpected = [
        t for t in failed if theirs[t] != "failed" and not any(n in t for n in DELIBERATE)
    ]
    passed = sum(s == "passed" for s in ours.values())
    print(
        f"{distribution}: chronomem {passed} passed, {len(failed)} failed of {len(ours)}, all "
        f"{len(failed) - len(unexpected)} failures shared with InMemoryStore or deliberate; "
        f"{len(deselect)} deselected (internals)"
    )
    assert passed >= 50, "the suite ran too few tests to mean anything"
    assert not unexpected, f"chronomem fails where InMemoryStore passes: {unexpected}"
    # InMemoryStore has no TTL, so it fails these too: chronomem's store has one and must pass.
    ttl = {t: s for t, s in ours.items() if "ttl" in t.split("::")[-1]}
    if distribution != "langgraph-checkpoint":
        assert ttl, "the suite ran no TTL test"
    assert all(s == "passed" for s in ttl.values()), f"TTL tests not passed: {ttl}"
