"""Records without vectors in a store built with an embedding model: refused unless asked for,
and embedded later by ``embed_records`` (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import ConfigError, InvalidInputError, Memory, SimClock

from .conftest import FixedEmbedder

MODEL = FixedEmbedder(dim=8, model_id="test/model")


def _built_with_model(location: str | Path, clock: SimClock) -> str:
    with Memory.open(location, embedder=MODEL, clock=clock) as mem:
        return mem.remember("the lamp in the lighthouse is lit").id


def test_a_write_without_a_vector_into_a_model_built_store_is_refused(
    location: str | Path, clock: SimClock
) -> None:
    _built_with_model(location, clock)
    with Memory.open(location, embedder=None, clock=clock) as mem:
        with pytest.raises(InvalidInputError, match="never match by meaning") as err:
            mem.remember("the fog came in")
        assert err.value.field == "embedding"
        with pytest.raises(InvalidInputError, match="item 1 has no vector"):
            mem.remember_many([{"text": "ok", "embedding": MODEL.vector("ok")}, "no vector"])
        assert mem.stats()["records"] == 1
        # Vectors given by the caller are fine.
        assert mem.remember("with its vector", embedding=MODEL.vector("with its vector")).stored


def test_asked_for_they_are_stored_and_embed_records_repairs_them(
    location: str | Path, clock: SimClock
) -> None:
    first = _built_with_model(location, clock)
    with Memory.open(location, embedder=None, clock=clock, allow_missing_vectors=True) as mem:
        fog = mem.remember("the fog came in. The ships stayed in the harbour.").id
        assert not mem.get(fog).has_embedding
        with pytest.raises(ConfigError, match="needs an embedder"):
            mem.embed_records()
    with Memory.open(location, embedder=MODEL, clock=clock) as mem:
        query = MODEL.vector("the fog came in. The ships stayed in the harbour.")
        assert fog not in [h.record.id for h in mem.peek("?", query_embedding=query, k=1)]
        assert mem.embed_records() == 1
        assert mem.embed_records() == 0  # nothing left
        assert mem.get(fog).has_embedding
        assert mem.get(first).has_embedding
        # This process's arrays picked the new vector (and its passages) up.
        assert [h.record.id for h in mem.peek("?", query_embedding=query, k=1)] == [fog]
        assert mem.embed_passages() == 0  # embedded with the record


def test_a_store_of_caller_supplied_vectors_still_takes_records_without_one(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        mem.remember("north wind", embedding=[1.0, 0.0, 0.0])
        assert mem.remember("the cat sat on the mat").stored  # documented: lexical only


def test_embed_records_gives_a_store_without_vectors_its_model(
    db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        mem.remember_many(["first without", "second without"])
    with Memory.open(db_path, embedder=MODEL, clock=clock) as mem:
        assert mem.embed_records() == 2
        assert (mem.stats()["embedding_model"], mem.stats()["embedding_dim"]) == ("test/model", 8)


def test_a_refused_duplicate_without_vectors_says_why_without_a_cosine(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        first = mem.remember("Use pnpm", kind="instruction").id
        result = mem.remember("use  PNPM", kind="instruction")
        assert not result.stored
        assert result.duplicate_of == first
        assert result.reason == f"near-duplicate of {first} (the same normalised text)"
        batch = mem.remember_many(["Deploy on Fridays", "deploy on fridays"], kind="fact")
        assert batch[1].reason is not None
        assert "cosine" not in batch[1].reason
