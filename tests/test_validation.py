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
        ({"text": "nul \x00 byte"}, "text"),
        ({"text": "lone \ud800 surrogate"}, "text"),
        ({"text": "x", "agent": "a\x00b"}, "agent"),
        ({"text": "x", "agent": "\udfff"}, "agent"),
        ({"text": "x", "domain": "d\x00"}, "domain"),
        ({"text": "x", "tags": ["ok", "t\ud83d"]}, "tags"),
        ({"text": "x", "metadata": {"k": ["v\x00"]}}, "metadata"),
        ({"text": "x", "metadata": {"k\udc80": 1}}, "metadata"),
        ({"text": "x", "embedding": [True, False, True]}, "embedding"),
        ({"text": "x", "embedding": ["1", "0", "0"]}, "embedding"),
        ({"text": "x", "embedding": [10**400, 0, 0]}, "embedding"),
        ({"text": "x", "evidence": 7}, "evidence"),
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


@pytest.mark.parametrize("items", [None, 5, "abc", {"text": "one record"}, b"bytes"])
def test_a_batch_that_is_not_a_list_of_items_is_refused(mem: Memory, items: Any) -> None:
    with pytest.raises(InvalidInputError, match="items must be a list") as err:
        mem.remember_many(items)
    assert err.value.field == "items"
    assert _count(mem) == 0


def test_text_that_some_store_cannot_hold_is_refused_everywhere(mem: Memory) -> None:
    """One text rule at the API edge, the same on every store: no NUL, no lone surrogate."""
    rid = mem.remember("kept", embedding=[1.0, 0.0, 0.0]).id
    for bad in ("a\x00b", "a\ud800b"):
        with pytest.raises(InvalidInputError, match="query"):
            mem.recall(bad)
        with pytest.raises(InvalidInputError, match="actor"):
            mem.verify(rid, actor=bad)
        with pytest.raises(InvalidInputError, match="reason"):
            mem.feedback(rid, "helpful", reason=bad)
        with pytest.raises(InvalidInputError, match="text"):
            mem.add_event(bad)
        with pytest.raises(InvalidInputError, match="agents"):
            mem.peek("kept", agents=[bad])
    assert mem.audit() == []
    assert _count(mem) == 1


def test_an_unknown_field_in_a_batch_item_is_named(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown field.* txt") as err:
        mem.remember_many([{"text": "x"}, {"txt": "typo"}])
    assert err.value.field == "txt"
    assert _count(mem) == 0


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
