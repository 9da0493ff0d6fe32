"""Bad input gets a typed error and writes nothing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from chronomem import (
    ConfigError,
    EmbedderMismatchError,
    InvalidInputError,
    Memory,
    NotFoundError,
    SimClock,
)

from .conftest import FixedEmbedder, unit


def _count(mem: Memory) -> int:
    return int(mem.stats()["records"])


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"text": "x", "occurred_at": datetime(2024, 1, 1)}, "occurred_at"),  # noqa: DTZ001
        ({"text": "   "}, "text"),
        ({"text": ""}, "text"),
        ({"text": "x", "embedding": [1.0, float("nan"), 0.0]}, "embedding"),
        ({"text": "x", "embedding": [1.0, float("inf"), 0.0]}, "embedding"),
        ({"text": "x", "embedding": [1.0, 0.0]}, "embedding"),
        ({"text": "x", "embedding": [0.0, 0.0, 0.0]}, "embedding"),
        ({"text": "x", "importance": 0}, "importance"),
        ({"text": "x", "importance": 11}, "importance"),
        ({"text": "x", "importance": float("nan")}, "importance"),
        ({"text": "x", "importance": True}, "importance"),
        ({"text": "x", "kind": "dream"}, "kind"),
        ({"text": "x", "sensitivity": "top-secret"}, "sensitivity"),
        ({"text": "x", "tags": "single-string"}, "tags"),
        ({"text": "x", "metadata": {"f": object()}}, "metadata"),
        (
            {
                "text": "x",
                "valid_from": datetime(2024, 2, 1).astimezone(),
                "valid_until": datetime(2024, 1, 1).astimezone(),
            },
            "valid_until",
        ),
    ],
)
def test_bad_writes_raise_typed_errors_and_write_nothing(
    mem: Memory, kwargs: dict[str, Any], field: str
) -> None:
    mem.remember("existing", embedding=[1.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError) as err:
        mem.remember(**kwargs)
    assert err.value.field == field
    assert _count(mem) == 1


def test_a_bad_item_in_a_batch_writes_nothing(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="item 2"):
        mem.remember_many(["a", {"text": "b"}, {"text": "c", "importance": 99}])
    assert _count(mem) == 0


def test_missing_evidence_is_not_found_and_writes_nothing(mem: Memory) -> None:
    with pytest.raises(NotFoundError):
        mem.remember("insight", kind="reflection", evidence=["01ABCDEFGHJKMNPQRSTVWXYZ00"])
    assert _count(mem) == 0


def test_evidence_gives_depth_and_may_cite_the_same_batch(mem: Memory) -> None:
    leaf = mem.remember("leaf").id
    results = mem.remember_many([{"text": "mid", "evidence": [leaf]}])
    top = mem.remember("top", evidence=[results[0].id, leaf]).id
    assert mem.get(leaf).depth == 0
    assert mem.get(results[0].id).depth == 1
    assert mem.get(top).depth == 2


def test_bad_reads_raise_typed_errors(mem: Memory) -> None:
    mem.remember("x", embedding=[1.0, 0.0, 0.0])
    with pytest.raises(InvalidInputError, match="naive"):
        mem.recall("x", as_of=datetime(2024, 1, 1))  # noqa: DTZ001
    with pytest.raises(InvalidInputError):
        mem.recall("x", k=0)
    with pytest.raises(InvalidInputError):
        mem.recall("x", query_embedding=[1.0, 0.0])
    with pytest.raises(InvalidInputError):
        mem.recall("")
    with pytest.raises(ConfigError, match="unknown preset"):
        mem.recall("x", preset="nope")
    with pytest.raises(NotFoundError):
        mem.get("01ABCDEFGHJKMNPQRSTVWXYZ00")


def test_unknown_preset_at_open_is_refused(db_path: Path) -> None:
    with pytest.raises(ConfigError, match="known presets"):
        Memory.open(db_path, embedder=None, preset="nope")


def test_a_store_refuses_a_different_embedder(db_path: Path, clock: SimClock) -> None:
    with Memory.open(db_path, embedder=FixedEmbedder(dim=8, model_id="m1"), clock=clock) as mem:
        mem.remember("hello")
    with pytest.raises(EmbedderMismatchError, match="m1") as err:
        Memory.open(db_path, embedder=FixedEmbedder(dim=8, model_id="m2"), clock=clock)
    assert (err.value.expected_model, err.value.got_model) == ("m1", "m2")
    with pytest.raises(EmbedderMismatchError):
        Memory.open(db_path, embedder=FixedEmbedder(dim=16, model_id="m1"), clock=clock)
    with Memory.open(db_path, embedder=None, clock=clock) as mem:  # lexical + own vectors is fine
        assert _count(mem) == 1
        with pytest.raises(InvalidInputError):
            mem.remember("wrong length", embedding=unit(1, 0))


def test_caller_supplied_vectors_then_an_embedder_is_refused(
    db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        mem.remember("mine", embedding=unit(*range(1, 9)))
    with pytest.raises(EmbedderMismatchError, match="caller-supplied"):
        Memory.open(db_path, embedder=FixedEmbedder(dim=8), clock=clock)
