"""The real bundled all-MiniLM-L6-v2, end to end (store -> recall). Slow: loads torch."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from chronomem import EmbedderMismatchError, Memory, SimClock
from chronomem.embedders.sentence_transformers import DEFAULT_MODEL_ID

pytestmark = pytest.mark.slow


def test_minilm_vectors_are_unit_384_float32(minilm) -> None:  # type: ignore[no-untyped-def]
    vectors = minilm.embed(["hello world", "good morning"])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert minilm.model_id == DEFAULT_MODEL_ID
    assert minilm.dim == 384


def test_paraphrase_ranks_above_unrelated_on_a_real_store(
    minilm,
    db_path: Path,
    clock: SimClock,  # type: ignore[no-untyped-def]
) -> None:
    with Memory.open(db_path, embedder=minilm, clock=clock, preset="generative-agents") as mem:
        paraphrase = mem.remember("The physician told me to rest my leg for two weeks").id
        mem.remember("The quarterly revenue of the shipping company grew by eight percent")
        mem.remember("Tomatoes need six hours of direct sun every day")
        for preset in ("default", "generative-agents"):
            hits = mem.peek(
                "My doctor said I should not walk on my injured leg",
                k=3,
                preset=preset,
                explain=True,
            )
            assert hits[0].record.id == paraphrase
            assert hits[0].breakdown is not None
            assert hits[0].breakdown.relevance_dense is not None
            assert hits[0].breakdown.relevance_dense > hits[1].breakdown.relevance_dense + 0.2  # type: ignore[union-attr,operator]
    stats = Memory.open(db_path, embedder=None).stats()
    assert (stats["embedding_model"], stats["embedding_dim"]) == (DEFAULT_MODEL_ID, 384)


def test_store_built_with_minilm_refuses_other_vectors(
    minilm,
    db_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    with Memory.open(db_path, embedder=minilm) as mem:
        mem.remember_many(["one", "two", "three"])
        assert mem.stats()["records"] == 3

    class Other:
        model_id = "other/model"
        dim = 384

        def embed(self, texts, *, progress=False):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

    with pytest.raises(EmbedderMismatchError):
        Memory.open(db_path, embedder=Other())  # type: ignore[arg-type]


def test_calls_from_several_threads_give_the_vectors_of_one_at_a_time(minilm) -> None:  # type: ignore[no-untyped-def]
    """The embedder says it is thread-safe (the engine then embeds before a handle's lock):
    calls from four threads at once give each text the vector it gets alone."""
    texts = [
        "The physician told me to rest my leg for two weeks",
        "Tomatoes need six hours of direct sun every day",
        "東京の天気は晴れです。",
        "Assistant: first review the budget, then the schedule. " * 6,
    ]
    alone = [minilm.embed([t]) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: minilm.embed([t]), texts * 4))
    assert type(minilm).thread_safe is True
    for got, want in zip(together, alone * 4, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_reading_lengths_beside_embedding_in_other_threads_disturbs_neither(minilm) -> None:  # type: ignore[no-untyped-def]
    """``read_lengths`` (which the engine calls before the handle's lock, to cut a long text's
    passages where the model stops reading) tokenizes with settings of its own: while two
    threads read lengths, every embed gives its vector, and every length is the one found
    alone."""
    long = "Assistant: first review the budget, then the schedule, then call the vendor back. " * 20
    texts = [long, "short text about tomatoes"]
    lengths, vectors = minilm.read_lengths(texts), minilm.embed(texts)
    done = threading.Event()

    def read() -> list[list[int]]:
        found = []
        while not done.is_set():
            found.append(minilm.read_lengths(texts))
        return found

    with ThreadPoolExecutor(2) as pool:
        readers = [pool.submit(read) for _ in range(2)]
        try:
            embedded = [minilm.embed(texts) for _ in range(60)]
        finally:
            done.set()
        found = [each for r in readers for each in r.result(timeout=60)]
    assert found
    assert all(got == lengths for got in found)
    for got in embedded:
        np.testing.assert_allclose(got, vectors, atol=1e-6)
