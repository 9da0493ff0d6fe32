"""Property-based fuzzing of the HTTP API from its own OpenAPI schema (schemathesis): for every
operation, requests the schema describes (positive) and requests it forbids (negative) never get
a 5xx, and every error is a problem document naming the error class.

Two deliberate limits: the change stream (``GET …/changes/stream``) is an endless answer, so
its cases are sent with a read that stops at the status (tests/server/test_changes.py reads it),
and a long poll's valid ``wait`` is sent as 0 (waiting proves nothing here). The service runs
without its webhook delivery loop: fuzzed subscriptions name made-up URLs, which must never be
called from a test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from .service import running


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """A running service (open on loopback, so every route is reachable) whose space "s" holds
    a few records, and its schema."""
    db = Path(tmp_path_factory.mktemp("fuzz")) / "fuzz.db"
    with running(db, embedder=None, webhooks=False) as (url, handles):
        memory = handles.memory("s")
        memory.remember("the cafe opens at 8", kind="fact", embedding=[1.0, 0.0])
        memory.remember("maria will decorate", embedding=[0.0, 1.0])
        yield url, schemathesis.openapi.from_url(f"{url}/openapi.json")


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda m: m.value)
def test_no_server_error_and_every_error_is_a_problem(
    service: tuple[str, Any], mode: GenerationMode
) -> None:
    url, schema = service
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    fuzzed = 0
    for operation in operations:
        pinned = {"space": "s"} if "{space}" in operation.path else None

        @settings(
            max_examples=20,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(mode, path_parameters=pinned))
        def check(case: Any) -> None:
            wait = (case.query or {}).get("wait")
            if isinstance(wait, int | float) and 0 < wait <= 60:
                case.query["wait"] = 0
            if case.path.endswith("/changes/stream"):  # an endless answer: read its status
                sent = case.as_transport_kwargs(base_url=url)
                with requests.request(**sent, stream=True, timeout=30) as streamed:
                    status, media = streamed.status_code, streamed.headers.get("content-type")
                    text = streamed.text if status >= 400 else ""
                where = (case.method, case.formatted_path, case.query, text[:300])
                assert status < 500, where
                if status >= 400:
                    assert media == "application/problem+json", where
                    assert json.loads(text)["status"] == status, where
                return
            response = case.call(base_url=url, timeout=30)
            where = (case.method, case.formatted_path, case.body, response.text[:300])
            assert response.status_code < 500, where
            if response.status_code >= 400:
                media = response.headers.get("content-type") or [""]
                assert media[0] == "application/problem+json", where
                problem = response.json()
                assert problem["status"] == response.status_code, where
                assert problem["error"], where
                assert problem["detail"], where

        try:
            check()
        except Unsatisfiable:  # nothing in this operation can be negated (no parameters, no body)
            assert mode is GenerationMode.NEGATIVE
            continue
        fuzzed += 1
    assert fuzzed >= 20
