"""The ``/v1/embeddings`` embedder against a real HTTP server on 127.0.0.1 that answers with fixed
vectors (a word-count model: one axis per known word) and can be scripted to fail first."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronomem import EmbedderMismatchError, Memory, OpenAICompatibleEmbedder
from chronomem.errors import (
    ConfigError,
    EmbedderError,
    EmbedderHTTPError,
    EmbedderResponseError,
    EmbedderTimeoutError,
)

from ..scripted_http import Answer, Script, scripted_server

WORDS = ("leg", "sun", "revenue", "doctor")


def word_vector(text: str) -> list[float]:
    """The server's model: counts of each known word, plus a constant axis (never zero)."""
    tokens = text.lower().replace(".", " ").split()
    return [float(tokens.count(w)) * 2.0 for w in WORDS] + [1.0]


def embeddings(body: dict[str, Any]) -> Answer:
    """The endpoint's own answer, shuffled: clients must order by "index"."""
    rows = [
        {"object": "embedding", "index": i, "embedding": word_vector(t)}
        for i, t in enumerate(body["input"])
    ]
    random.Random(len(rows)).shuffle(rows)
    text = json.dumps({"object": "list", "data": rows, "model": body["model"]})
    return 200, {"Content-Type": "application/json"}, text


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with scripted_server(embeddings) as served:
        yield served


def error(status: int, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    return status, headers or {}, json.dumps({"error": {"message": f"status {status}"}})


def embedder(url: str, waits: list[float], **options: Any) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(url, "word-count", dim=5, sleep=waits.append, **options)


def test_batches_keep_order_and_vectors_are_unit(server: tuple[str, Script]) -> None:
    url, script = server
    texts = ["my leg hurts", "sun sun", "revenue grew", "ask the doctor", "leg and sun"]
    waits: list[float] = []
    vectors = embedder(url, waits, batch_size=2, api_key="sk-test").embed(texts)
    assert [len(r["input"]) for r in script.requests] == [2, 2, 1]
    assert {r["model"] for r in script.requests} == {"word-count"}
    assert {h.get("Authorization") for h in script.headers} == {"Bearer sk-test"}
    expected = np.asarray([word_vector(t) for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert vectors.dtype == np.float32
    assert waits == []


def test_429_honours_retry_after_then_503_backs_off(server: tuple[str, Script]) -> None:
    url, script = server
    script.answers = [error(429, {"Retry-After": "2"}), error(503), error(503)]
    waits: list[float] = []
    vectors = embedder(url, waits, backoff=0.25).embed(["leg"])
    assert vectors.shape == (1, 5)
    assert waits == [2.0, 0.5, 1.0]  # Retry-After, then 0.25 doubled per attempt
    assert len(script.requests) == 4


def test_retry_after_is_capped_and_dates_fall_back_to_backoff(server: tuple[str, Script]) -> None:
    url, script = server
    script.answers = [
        error(429, {"Retry-After": "3600"}),
        error(503, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
    ]
    waits: list[float] = []
    embedder(url, waits, backoff=0.1, max_wait=5.0).embed(["sun"])
    assert waits == [5.0, 0.2]


def test_persistent_5xx_is_a_typed_error_after_the_retries(server: tuple[str, Script]) -> None:
    url, script = server
    script.answers = [error(503)] * 3
    waits: list[float] = []
    with pytest.raises(EmbedderHTTPError) as caught:
        embedder(url, waits, max_retries=2).embed(["leg"])
    assert caught.value.status == 503
    assert len(script.requests) == 3
    assert len(waits) == 2


def test_client_errors_are_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.answers = [error(401)]
    with pytest.raises(EmbedderHTTPError, match="401") as caught:
        embedder(url, []).embed(["leg"])
    assert caught.value.status == 401
    assert "status 401" in caught.value.body
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json", "did not return embeddings"),
        (json.dumps({"data": []}), "0 embeddings for 1 texts"),
        (json.dumps({"data": [{"index": 0, "embedding": [1.0, 2.0]}]}), "length 2; expected 5"),
        (json.dumps({"data": [{"index": 0, "embedding": [0.0] * 5}]}), "zero vector"),
        (json.dumps({"data": [{"index": 0, "embedding": [float("nan")] * 5}]}), "NaN"),
        (json.dumps({"data": [{"index": 3, "embedding": [1.0] * 5}]}), "1 embeddings for 1"),
        (json.dumps({"error": "overloaded"}), "did not return embeddings"),
    ],
)
def test_unusable_answers_are_response_errors(
    server: tuple[str, Script], body: str, message: str
) -> None:
    url, script = server
    script.answers = [(200, {"Content-Type": "application/json"}, body)]
    with pytest.raises(EmbedderResponseError, match=message):
        embedder(url, []).embed(["leg"])


def test_timeouts_are_retried_then_typed(server: tuple[str, Script]) -> None:
    url, script = server
    script.answers = [("sleep", 1.0), ("sleep", 1.0)]
    waits: list[float] = []
    with pytest.raises(EmbedderTimeoutError):
        embedder(url, waits, timeout=0.2, max_retries=1).embed(["leg"])
    assert len(waits) == 1
    script.answers = [("sleep", 1.0)]
    assert embedder(url, [], timeout=0.2, max_retries=1).embed(["leg"]).shape == (1, 5)


def test_an_unreachable_server_is_an_embedder_error() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits: list[float] = []
    with pytest.raises(EmbedderError, match="cannot reach"):
        embedder(f"http://127.0.0.1:{port}/v1", waits, max_retries=2).embed(["leg"])
    assert waits == [0.5, 1.0]


def test_dimension_is_asked_once_when_not_given(server: tuple[str, Script]) -> None:
    url, script = server
    remote = OpenAICompatibleEmbedder(url, "word-count")
    assert remote.dim == 5
    assert remote.dim == 5
    assert len(script.requests) == 1
    assert remote.embed([]).shape == (0, 5)
    assert "sk-" not in repr(OpenAICompatibleEmbedder(url, "m", api_key="sk-secret"))


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError):
        OpenAICompatibleEmbedder("localhost:11434", "m")
    with pytest.raises(ConfigError):
        OpenAICompatibleEmbedder("http://localhost:11434/v1", "m", batch_size=0)
    with pytest.raises(ConfigError):
        OpenAICompatibleEmbedder("http://localhost:11434/v1", "")


def test_a_store_records_the_remote_model_and_refuses_another(
    server: tuple[str, Script], tmp_path: Path
) -> None:
    url, _ = server
    db = tmp_path / "remote.db"
    remote = OpenAICompatibleEmbedder(url, "word-count", sleep=lambda s: None)
    with Memory.open(db, embedder=remote) as mem:
        leg = mem.remember("The doctor looked at my leg").id
        mem.remember("The sun was out all day")
        mem.remember("Revenue grew by eight percent")
        hits = mem.peek("my leg", k=3, explain=True)
        assert hits[0].record.id == leg
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.relevance_dense == pytest.approx(5 / (3 * 5**0.5), rel=1e-5)
        assert (mem.stats()["embedding_model"], mem.stats()["embedding_dim"]) == ("word-count", 5)
    other = OpenAICompatibleEmbedder(url, "word-count", model_id="word-count-v2", dim=5)
    with pytest.raises(EmbedderMismatchError):
        Memory.open(db, embedder=other)


def test_a_read_answers_while_another_threads_write_waits_for_the_server(tmp_path: Path) -> None:
    """The embedder is thread-safe, so the engine embeds before the handle's lock: a write whose
    request the server holds up holds up no read of the same handle."""
    entered, release = threading.Event(), threading.Event()

    def slow_for_the_doctor(body: dict[str, Any]) -> Answer:
        if any("doctor" in text for text in body["input"]):
            entered.set()
            assert release.wait(30)
        return embeddings(body)

    with (
        scripted_server(slow_for_the_doctor) as (url, _),
        Memory.open(
            tmp_path / "m.db", embedder=OpenAICompatibleEmbedder(url, "word-count", dim=5)
        ) as mem,
        ThreadPoolExecutor(2) as pool,
    ):
        mem.remember("the sun is out")
        write = pool.submit(mem.remember, "the doctor called")
        try:
            assert entered.wait(10)
            read = pool.submit(mem.peek, "sun", k=3)
            hits = read.result(timeout=10)  # before the change: blocked until the release
            assert not write.done()
        finally:
            release.set()
        assert [h.record.text for h in hits] == ["the sun is out"]
        assert write.result(timeout=10).stored
