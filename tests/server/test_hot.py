"""The read verbs' hot path (``server/hot.py``) answers exactly as the framework's routes do: two
services over two copies of one store, one with the hot path and one without, get the same
requests — reads, touching reads, refusals, invalid bodies, oversize bodies — and give the same
statuses, media types and bodies. Well-formed reads on the hot service never reach a FastAPI
endpoint; invalid ones are handed to the framework."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import routing

from chronomem import Memory, SimClock
from chronomem.clock import to_micros
from chronomem.server.keys import create_key

from ..conftest import T0, store_of
from .service import running

LIMIT = 64 << 10


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    """The URLs of the hot and the plain service, and the tokens of keys both stores hold."""
    first = tmp_path / "hot.db"
    rng = np.random.default_rng(3)
    with Memory.open(first, embedder=None, space="a", clock=SimClock(T0)) as mem:
        vectors = rng.normal(size=(40, 8)).astype(np.float32)
        mem.remember_many(
            [
                {"text": f"Ana: note {i} about the {'harvest' if i % 3 else 'well'}",
                 "embedding": v, "importance": 1 + i % 9}
                for i, v in enumerate(vectors)
            ],
            agent="ana",
        )  # fmt: skip
        store_of(mem).set_space_clock("a", to_micros(T0 + timedelta(hours=5)))  # both services'
        tokens = {
            scope: create_key(store_of(mem), space="a", scope=scope, label=None, now=T0)[1]
            for scope in ("read", "write")
        }
        tokens["other"] = create_key(store_of(mem), space="b", scope="admin", label=None, now=T0)[1]
    second = tmp_path / "plain.db"
    shutil.copyfile(first, second)
    with (
        running(first, embedder=None, max_body_bytes=LIMIT) as (hot, _),
        running(second, embedder=None, max_body_bytes=LIMIT, hot_reads=False) as (plain, _),
    ):
        yield hot, plain, tokens


QUERY = [0.3, -0.1, 0.5, 0.0, 0.2, 0.1, -0.4, 0.6]
READS: list[tuple[str, str | None, Any]] = [
    ("peek", "read", {"query": "the harvest", "query_embedding": QUERY}),
    ("peek", "read", {"query": "the well", "query_embedding": QUERY, "k": 3, "explain": True}),
    ("peek", "read", {"query": "harvest", "query_embedding": QUERY, "preset": "generative-agents",
                      "as_of": "2025-01-01T02:00:00+00:00", "kinds": ["observation"]}),
    ("recall", "write", {"query": "the harvest", "query_embedding": QUERY, "explain": True}),
    ("recall", "write", {"query": "the harvest", "query_embedding": QUERY, "k": 5}),
    ("recall", "read", {"query": "the well", "query_embedding": QUERY, "touch": False}),
    ("peek", "read", {"query": "the well", "query_embedding": QUERY, "crisis": "no-such-event"}),
    ("peek", "read", {"query": "the harvest"}),  # no embedder, no vector: words only
]  # fmt: skip
REFUSED: list[tuple[str, str | None, Any]] = [
    ("recall", "read", {"query": "x", "query_embedding": QUERY}),  # 403: touching needs write
    ("peek", None, {"query": "x", "query_embedding": QUERY}),  # 401
    ("peek", "other", {"query": "x", "query_embedding": QUERY}),  # 404: another space's key
    ("peek", "read", {"query": "x", "query_embedding": QUERY, "preset": "nope"}),  # engine: 400
    ("peek", "read", {"query": "x", "query_embedding": QUERY, "k": 0}),  # engine: 422
    ("peek", "read", {"query": "x", "query_embedding": [1.0, 2.0]}),  # wrong dimension: 422
]
INVALID: list[tuple[str, str | None, Any]] = [
    ("peek", "read", {"query": "x", "k": "many"}),
    ("recall", "write", {"query": "x", "extra": 1}),
    ("peek", "read", {"query": "x", "as_of": "2025-01-01T02:00:00"}),  # naive
    ("peek", "read", "not json at all"),
    ("recall", "write", [1, 2]),
]


def _send(url: str, verb: str, token: str | None, body: Any, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if "content" not in kwargs:
        raw = body if isinstance(body, str) else json.dumps(body)
        kwargs["content"] = raw.encode()
        headers["Content-Type"] = "application/json"
    return httpx.post(f"{url}/v1/spaces/a/{verb}", headers=headers, timeout=30, **kwargs)


def _same(hot: httpx.Response, plain: httpx.Response) -> None:
    assert hot.status_code == plain.status_code, (hot.text, plain.text)
    assert hot.headers["content-type"] == plain.headers["content-type"]
    assert hot.json() == plain.json()


@pytest.fixture
def endpoints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The FastAPI endpoints that ran, by name."""
    ran: list[str] = []
    real = routing.run_endpoint_function

    async def counted(*, dependant: Any, values: Any, is_coroutine: bool) -> Any:
        ran.append(dependant.call.__name__)
        return await real(dependant=dependant, values=values, is_coroutine=is_coroutine)

    monkeypatch.setattr(routing, "run_endpoint_function", counted)
    return ran


def test_reads_and_refusals_answer_as_the_framework_does(
    pair: tuple[str, str, dict[str, str]], endpoints: list[str]
) -> None:
    hot, plain, tokens = pair
    for verb, role, body in READS + REFUSED:
        token = tokens.get(role) if role else None
        before = len(endpoints)
        answer = _send(hot, verb, token, body)
        assert len(endpoints) == before, f"{verb} {body} reached the framework"
        _same(answer, _send(plain, verb, token, body))
    hits = _send(hot, "peek", tokens["read"], READS[1][2]).json()
    assert len(hits) == 3
    assert hits[0]["breakdown"] is not None  # the reads above return real hits
    statuses = {_send(hot, v, tokens.get(r or ""), b).status_code for v, r, b in REFUSED}
    assert statuses == {400, 401, 403, 404, 422}


def test_invalid_bodies_are_handed_to_the_framework(
    pair: tuple[str, str, dict[str, str]], endpoints: list[str]
) -> None:
    hot, plain, tokens = pair
    for verb, role, body in INVALID:
        token = tokens[role] if role else None
        before = len(endpoints)
        answer = _send(hot, verb, token, body)
        assert answer.status_code == 422
        assert endpoints[before:] == [], "a 422 is written before any endpoint runs"
        _same(answer, _send(plain, verb, token, body))
    # Not JSON by its media type: the framework decides (and refuses the body).
    text = {"content": b"query=x", "headers": {"Content-Type": "text/plain"}}
    _same(
        httpx.post(f"{hot}/v1/spaces/a/peek", timeout=30, **text),  # type: ignore[arg-type]
        httpx.post(f"{plain}/v1/spaces/a/peek", timeout=30, **text),  # type: ignore[arg-type]
    )


def test_oversize_bodies_get_413_whether_declared_or_streamed(
    pair: tuple[str, str, dict[str, str]],
) -> None:
    hot, plain, tokens = pair
    big = json.dumps({"query": "x" * LIMIT, "query_embedding": QUERY}).encode()

    def streamed() -> Iterator[bytes]:
        yield from (big[i : i + 4096] for i in range(0, len(big), 4096))

    for url in (hot, plain):
        declared = _send(url, "peek", tokens["read"], None, content=big)
        chunked = _send(url, "recall", tokens["write"], None, content=streamed())
        for answer in (declared, chunked):
            assert answer.status_code == 413
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["error"] == "PayloadTooLarge"
