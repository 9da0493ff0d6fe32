"""Read options are one frozen value: validated once, wherever built, and equivalent to the
keyword arguments of the read verbs."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from chronomem import InvalidInputError, Kind, Memory, NotFoundError, ReadOptions, SimClock

from ..conftest import unit


def test_options_are_normalised_on_construction() -> None:
    options = ReadOptions(agents=["ada", "bo", "ada"], kinds=["fact", Kind.PLAN], preset="tcmf")
    assert options.agents == ("ada", "bo")
    assert options.kinds == frozenset({Kind.FACT, Kind.PLAN})
    assert options.preset is not None
    assert not isinstance(options.preset, str)
    assert options.preset.name == "tcmf"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"k": 0}, "k"),
        ({"k": True}, "k"),
        ({"k": 2.5}, "k"),
        ({"agents": "ada"}, "agents"),
        ({"agents": ["ada", " "]}, "agents"),
        ({"kinds": ["dream"]}, "kinds"),
        ({"kinds": "fact"}, "kinds"),
        ({"as_of": datetime(2024, 1, 1)}, "as_of"),  # noqa: DTZ001
        ({"valid_at": "2024-01-01"}, "valid_at"),
        ({"touch": "yes"}, "touch"),
        ({"sequential": 1}, "sequential"),
        ({"crisis": ""}, "crisis"),
        ({"asker": "  "}, "asker"),
    ],
)
def test_a_bad_option_is_refused_naming_it(fields: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        ReadOptions(**fields)  # type: ignore[arg-type]
    assert caught.value.field == field


def test_options_give_the_same_hits_as_keywords(mem: Memory, clock: SimClock) -> None:
    mem.remember("the cafe opens at 8", agent="ada", kind="fact", embedding=unit(1, 0, 0))
    mem.remember("the bakery opens at 7", agent="bo", kind="fact", embedding=unit(0.9, 0.1, 0))
    mem.remember("ada likes tea", agent="ada", embedding=unit(0, 1, 0))
    clock.advance(timedelta(hours=3))
    by_keywords = mem.peek(
        "opens", agents=["ada"], k=2, kinds=["fact"], query_embedding=unit(1, 0, 0), explain=True
    )
    options = ReadOptions(agents=("ada",), k=2, kinds=[Kind.FACT], explain=True)
    by_options = mem.peek("opens", options=options, query_embedding=unit(1, 0, 0))
    assert [h.record.id for h in by_options] == [h.record.id for h in by_keywords]
    assert [h.breakdown for h in by_options] == [h.breakdown for h in by_keywords]


def test_options_and_read_keywords_together_are_refused(mem: Memory) -> None:
    mem.remember("x", embedding=unit(1, 0))
    with pytest.raises(InvalidInputError) as caught:
        mem.recall("x", k=3, options=ReadOptions(k=5), query_embedding=unit(1, 0))
    assert caught.value.field == "options"
    with pytest.raises(InvalidInputError):
        mem.recall("x", agent="a", agents=["b"])


def test_peek_never_touches_even_with_touching_options(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("x", embedding=unit(1, 0)).id
    before = mem.get(rid).last_accessed_at  # type: ignore[arg-type]
    clock.advance(timedelta(hours=1))
    hits = mem.peek("x", options=ReadOptions(touch=True), query_embedding=unit(1, 0))
    assert [h.record.id for h in hits] == [rid]
    assert mem.get(rid).last_accessed_at == before  # type: ignore[arg-type]
    mem.recall("x", options=ReadOptions(touch=True), query_embedding=unit(1, 0))
    assert mem.get(rid).last_accessed_at == clock.now()  # type: ignore[arg-type]


def test_a_missing_event_names_itself_as_an_event(mem: Memory) -> None:
    missing = "01ABCDEFGHJKMNPQRSTVWXYZ00"
    with pytest.raises(NotFoundError) as caught:
        mem.get_event(missing)
    assert caught.value.event_id == missing
    assert caught.value.record_id is None
    with pytest.raises(NotFoundError) as caught:
        mem.recall("x", crisis=missing)
    assert caught.value.event_id == missing
    with pytest.raises(NotFoundError) as caught:
        mem.remember("x", event_id=missing, embedding=unit(1, 0))
    assert caught.value.event_id == missing
