"""Filtered reads and listings (issue 28; docs/filters.md): random filters over random records,
on a real SQLite file and a real PostgreSQL database, against an oracle written from the
documented semantics over the records themselves — not from the masks it checks."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronomem import Memory, SimClock
from chronomem.errors import InvalidInputError
from chronomem.model.filter import from_mem0, parse_filter
from chronomem.model.record import Record

from ..conftest import T0

TAGS = ("billing", "travel", "urgent", "café")
USERS = ("ana", "ben", "chloé", "dai")
MISSING = object()


def _records(m: Memory, clock: SimClock, n: int, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(n):
        clock.advance(timedelta(minutes=7))
        metadata: dict[str, Any] = {"n": i}
        if rng.random() < 0.8:
            metadata["user"] = rng.choice(USERS)
        if rng.random() < 0.5:
            metadata["flag"] = rng.random() < 0.5
        if rng.random() < 0.4:
            metadata["list"] = rng.sample(USERS, rng.randint(0, 2))
        if rng.random() < 0.4:
            metadata["nested"] = {"x": rng.randint(0, 3)}
        m.remember(
            f"record {i} about {rng.choice(('billing', 'travel', 'lunch'))}",
            agent=rng.choice(("a", "b", "c")),
            kind=rng.choice(("fact", "observation", "plan", "chat")),
            tags=rng.sample(TAGS, rng.randint(0, 2)),
            metadata=metadata,
            importance=rng.randint(1, 10),
            domain=rng.choice((None, "Work", "home")),
            speaker=rng.choice((None, "user", "Priya")),
            sensitivity=rng.choice(("normal", "normal", "personal")),
            embedding=np.random.default_rng(i).normal(size=8).astype(np.float32),
        )
    for r in m.records(limit=1_000)[::9]:
        if r.status.value == "open":
            clock.advance(timedelta(minutes=1))
            m.close_record(r.id, "no longer true")


def _condition(rng: random.Random) -> dict[str, Any]:
    choices: list[dict[str, Any]] = [
        {"kind": rng.choice(("fact", "plan"))},
        {"kind": {"$in": ["fact", "chat"]}},
        {"kind": {"$nin": ["observation"]}},
        {"tags": rng.choice(TAGS)},
        {"tags": {"$contains": rng.choice(TAGS)}},
        {"tags": {"$in": list(rng.sample(TAGS, 2))}},
        {"tags": {"$nin": [rng.choice(TAGS)]}},
        {"tags": {"$exists": rng.random() < 0.5}},
        {"agent": rng.choice("abc")},
        {"agent": {"$ne": rng.choice("abc")}},
        {"domain": rng.choice(("work", "Home", None))},
        {"domain": {"$exists": True}},
        {"speaker": rng.choice(("user", "Priya"))},
        {"speaker": {"$ne": "user"}},
        {"speaker": {"$exists": False}},
        {"sensitivity": "personal"},
        {"status": rng.choice(("open", "closed"))},
        {"importance": {rng.choice(("$gt", "$gte", "$lt", "$lte")): rng.randint(1, 10)}},
        {"importance": {"$in": [3, 7]}},
        {"recorded_at": {"$gte": (T0 + timedelta(hours=rng.randint(0, 10))).isoformat()}},
        {"valid_until": {"$exists": True}},
        {"metadata.user": rng.choice(USERS)},
        {"metadata.user": {"$in": list(rng.sample(USERS, 2))}},
        {"metadata.user": {"$nin": [rng.choice(USERS)]}},
        {"metadata.user": {"$exists": rng.random() < 0.5}},
        {"metadata.n": {rng.choice(("$gt", "$lte")): rng.randint(0, 80)}},
        {"metadata.flag": rng.random() < 0.5},
        {"metadata.list": rng.choice(USERS)},
        {"metadata.list": {"$contains": rng.choice(USERS)}},
        {"metadata.nested.x": rng.randint(0, 3)},
        {"metadata": {"nested": {"x": {"$gte": 2}}}},
        {"metadata.user": {"$contains": "n"}},
    ]
    return rng.choice(choices)


def _spec(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    roll = rng.random()
    if depth < 2 and roll < 0.2:
        return {"$or": [_spec(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    if depth < 2 and roll < 0.3:
        return {"$not": _spec(rng, depth + 1)}
    if depth < 2 and roll < 0.45:
        return {"$and": [_spec(rng, depth + 1) for _ in range(2)]}
    if roll < 0.6:  # two fields in one object: their AND
        return {**_condition(rng), **_condition(rng)}
    return _condition(rng)


# -- the oracle: the documented semantics, on Record values ---------------------------------------
def _field(r: Record, name: str, as_of: Any) -> Any:
    if name.startswith("metadata."):
        value: Any = dict(r.metadata)
        for step in name.split(".")[1:]:
            value = value.get(step, MISSING) if isinstance(value, dict) else MISSING
        return value
    if name == "status":
        ended = r.superseded_at is not None and r.superseded_at <= as_of
        return r.status.value if ended else "open"
    if name == "tags":
        return list(r.tags)
    value = getattr(r, name)
    return getattr(value, "value", value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _eq(have: Any, want: Any, name: str) -> bool:
    if want is None:
        return have is MISSING or have is None or have == []
    if name in ("domain", "speaker") and isinstance(have, str):
        return have.casefold() == want.casefold()
    if isinstance(have, list):
        return any(_same(e, want) for e in have)
    return _same(have, want)


def _compare(have: Any, op: str, want: Any, name: str) -> bool:
    if isinstance(want, str) and name.endswith("_at") and not name.startswith("metadata"):
        from chronomem.checks import parse_instant

        want = parse_instant(want, name)
    if op == "$exists":
        present = have is not MISSING and have is not None and have != []
        return present == want
    if op == "$eq":
        return _eq(have, want, name)
    if op == "$ne":
        return not _eq(have, want, name)
    if op == "$in":
        return any(_eq(have, w, name) for w in want)
    if op == "$nin":
        return not any(_eq(have, w, name) for w in want)
    if op == "$contains":
        if isinstance(have, str):
            return want.casefold() in have.casefold() if name == "speaker" else want in have
        return isinstance(have, list) and any(_same(e, want) for e in have)
    if have is MISSING or have is None or isinstance(have, bool):
        return False
    if isinstance(have, str) != isinstance(want, str):
        return False
    return {"$gt": have > want, "$gte": have >= want, "$lt": have < want, "$lte": have <= want}[op]


def _matches(r: Record, spec: dict[str, Any], as_of: Any) -> bool:
    for key, value in spec.items():
        if key == "$and":
            ok = all(_matches(r, s, as_of) for s in value)
        elif key == "$or":
            ok = any(_matches(r, s, as_of) for s in value)
        elif key == "$not":
            ok = not _matches(r, value, as_of)
        elif key == "metadata":
            ok = _matches(r, {f"metadata.{k}": v for k, v in value.items()}, as_of)
        elif isinstance(value, dict) and not all(k.startswith("$") for k in value):
            ok = _matches(r, {f"{key}.{k}": v for k, v in value.items()}, as_of)
        elif isinstance(value, dict):
            have = _field(r, key, as_of)
            ok = all(_compare(have, op, want, key) for op, want in value.items())
        else:
            ok = _compare(_field(r, key, as_of), "$eq", value, key)
        if not ok:
            return False
    return True


@pytest.fixture
def filled(location: str | Path, clock: SimClock) -> Memory:
    clock.set(T0)
    m = Memory.open(location, embedder=None, clock=clock)
    _records(m, clock, 90, seed=5)
    return m


def test_listings_and_reads_select_what_the_oracle_selects(filled: Memory) -> None:
    m = filled
    every = m.records(include_history=True, limit=1_000)
    now = m.clock.now()
    rng = random.Random(11)
    checked = 0
    for _ in range(150):
        spec = _spec(rng)
        expected = {r.id for r in every if _matches(r, spec, now)}
        listed = {r.id for r in m.records(include_history=True, limit=1_000, filter=spec)}
        assert listed == expected, spec
        hits = m.peek("record billing", filter=spec, include_history=True, k=1_000)
        assert {h.record.id for h in hits} == expected, spec
        checked += bool(expected)
    assert checked > 60  # most filters select something: the comparison is not vacuous
    m.close()


def test_a_narrow_filter_ranks_as_the_unfiltered_read_does(filled: Memory) -> None:
    """Scores under fixed normalisation do not depend on the other candidates: a filtered read is
    the unfiltered ranking restricted to the filter, however far down its records sit."""
    m = filled
    query = np.random.default_rng(3).normal(size=8).astype(np.float32)
    spec = {"metadata.user": "dai", "kind": "plan"}
    everything = m.peek("lunch", query_embedding=query, k=1_000)
    wanted = [h for h in everything if _matches(h.record, spec, m.clock.now())]
    assert len(wanted) >= 2
    assert everything[0].record.id != wanted[0].record.id
    hits = m.peek("lunch", query_embedding=query, k=len(wanted), filter=spec)
    assert [h.record.id for h in hits] == [h.record.id for h in wanted]
    assert [h.score for h in hits] == pytest.approx([h.score for h in wanted], abs=1e-6)
    m.close()


def test_filter_columns_follow_writes_and_purges(db_path: Path, clock: SimClock) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        first = m.remember("the invoice is due", tags=["billing"], metadata={"user": "ana"})
        spec = {"tags": "billing", "metadata.user": "ana"}
        assert [r.id for r in m.records(filter=spec)] == [first.id]
        clock.advance(timedelta(minutes=1))
        second = m.remember("the invoice was paid", tags=["billing"], metadata={"user": "ana"})
        assert {r.id for r in m.records(filter=spec)} == {first.id, second.id}
        m.forget(first.id, "noise", purge=True)
        assert [r.id for r in m.records(filter=spec)] == [second.id]
    with Memory.open(db_path, embedder=None, clock=clock, index_snapshot=0) as m:
        assert [r.id for r in m.records(filter=spec)] == [second.id]
    with Memory.open(db_path, embedder=None, clock=clock, index_snapshot=0) as m:  # the snapshot
        assert [r.id for r in m.records(filter=spec)] == [second.id]
        assert m.records(filter={"tags": "travel"}) == []


def test_explain_names_the_filter_and_core_blocks_come_when_named(
    db_path: Path, clock: SimClock
) -> None:
    clock.set(T0)
    with Memory.open(db_path, embedder=None, clock=clock) as m:
        m.remember("Ana prefers tea", kind="fact", tags=["drinks"])
        m.core_append("default", "persona", "I am a helpful assistant")
        hit = m.peek("tea", filter={"tags": "drinks"}, explain=True)[0]
        assert hit.breakdown is not None
        assert hit.breakdown.filter == "tags $eq 'drinks'"
        assert m.peek("assistant", filter={"kind": "fact"})[0].record.kind.value == "fact"
        core = m.records(filter={"kind": "core"})
        assert [r.kind.value for r in core] == ["core"]


def _deep(levels: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "fact"}
    for _ in range(levels):
        spec = {"$not": spec}
    return spec


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"kindx": "fact"}, "filter.kindx"),
        ({"importance": {"$gt": "high"}}, "filter.importance.$gt"),
        ({"$or": [{"kind": "fact"}, {"kind": "nope"}]}, "filter.$or[1].kind"),
        ({"tags": {"$lt": 3}}, "filter.tags.$lt"),
        ({"$xor": []}, "filter.$xor"),
        ({"$and": []}, "filter.$and"),
        ({"metadata.": 1}, "filter.metadata."),
        ({"recorded_at": {"$gt": "2025-01-01T00:00:00"}}, "filter.recorded_at.$gt"),
        ({"kind": {"$in": "fact"}}, "filter.kind.$in"),
        ({"tags": {"$exists": "yes"}}, "filter.tags.$exists"),
        ({"metadata.a": {"$eq": {"b": 1}}}, "filter.metadata.a.$eq"),
        ([{"kind": "fact"}], "filter"),
        ({"$not": {}}, "filter.$not"),
        ({"$and": [{}]}, "filter.$and[0]"),
        ({"$not": {"metadata": {}}}, "filter.$not"),
        (_deep(40), "filter" + ".$not" * 33),
    ],
)
def test_a_bad_filter_names_its_part(spec: Any, where: str, db_path: Path) -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_filter(spec)
    assert raised.value.field == where
    with Memory.open(db_path, embedder=None) as m, pytest.raises(InvalidInputError):
        m.records(filter=spec)


def test_a_filter_round_trips_through_its_json_spelling() -> None:
    rng = random.Random(2)
    for _ in range(200):
        parsed = parse_filter(_spec(rng))
        assert parsed is not None
        assert parse_filter(parsed.to_spec()) == parsed


def test_mem0_filters_map_onto_the_grammar() -> None:
    spec = {
        "AND": [
            {"user_id": "ana"},
            {"created_at": {"gte": "2025-01-01T00:00:00+00:00"}},
            {"OR": [{"categories": {"contains": "food"}}, {"city": {"in": ["Lyon"]}}]},
            {"NOT": [{"run_id": "*"}]},
        ]
    }
    assert from_mem0({"user_id": "ana", "agent_id": "bot"}) == {
        "$and": [{"agent": "ana"}, {"agent": "bot"}]
    }
    assert from_mem0({"NOT": [{"a": 1}, {"b": 2}]}) == {
        "$not": {"$and": [{"metadata.a": 1}, {"metadata.b": 2}]}
    }
    assert from_mem0(spec) == {
        "$and": [
            {"agent": "ana"},
            {"recorded_at": {"$gte": "2025-01-01T00:00:00+00:00"}},
            {"$or": [{"tags": {"$contains": "food"}}, {"metadata.city": {"$in": ["Lyon"]}}]},
            {"$not": {"metadata.run_id": {"$exists": True}}},
        ]
    }
    assert parse_filter(from_mem0(spec)) is not None


def test_true_and_one_are_different_filters(db_path: Path) -> None:
    """Python holds True == 1; JSON does not, and neither do filters (nor their cached
    columns)."""
    with Memory.open(db_path, embedder=None) as m:
        flagged = m.remember("flagged", metadata={"flag": True})
        counted = m.remember("counted", metadata={"flag": 1})
        assert [r.id for r in m.records(filter={"metadata.flag": True})] == [flagged.id]
        assert [r.id for r in m.records(filter={"metadata.flag": 1})] == [counted.id]
        assert [r.id for r in m.records(filter={"metadata.flag": {"$in": [1.0]}})] == [counted.id]


def test_absent_values_in_code_columns(db_path: Path) -> None:
    """Sessions and speakers are codes (-1: none); None in a comparison means "none"."""
    with Memory.open(db_path, embedder=None) as m:
        one = m.remember("in a session", session="t1", speaker="ana@example.com").id
        two = m.remember("in another", session="t2").id
        none = m.remember("in none").id

        def ids(spec: dict[str, Any]) -> set[str | None]:
            return {r.id for r in m.records(filter=spec)}

        assert ids({"session": {"$ne": None}}) == {one, two}
        assert ids({"session": None}) == {none}
        assert ids({"session": {"$in": [None, "t1"]}}) == {one, none}
        assert ids({"session": {"$nin": [None, "t1"]}}) == {two}
        assert ids({"session": {"$ne": "t1"}}) == {two, none}
        assert ids({"session": {"$contains": "t"}}) == {one, two}
        # a speaker field the transcript convention cannot read is still the speaker
        assert ids({"speaker": "Ana@Example.com"}) == {one}


def test_tags_compare_as_a_whole_list_too(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as m:
        both = m.remember("x", tags=["a", "b"]).id
        m.remember("y", tags=["a"])
        assert [r.id for r in m.records(filter={"tags": ["a", "b"]})] == [both]
        assert len(m.records(filter={"tags": "a"})) == 2


def test_a_write_extends_the_filter_columns_without_testing_every_row_again(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronomem.retrieval import filtering

    parsed: list[int] = []
    original = filtering._parsed_metadata

    def counting(a: Any, start: int) -> Any:
        parsed.append(start)
        return original(a, start)

    monkeypatch.setattr(filtering, "_parsed_metadata", counting)
    with Memory.open(db_path, embedder=None) as m:
        m.remember_many([{"text": f"n{i}", "metadata": {"user": f"u{i % 3}"}} for i in range(30)])
        assert len(m.records(filter={"metadata.user": "u1"})) == 10
        m.remember("one more", metadata={"user": "u1"})
        assert len(m.records(filter={"metadata.user": "u1"})) == 11
        assert len(m.records(filter={"metadata.user": {"$in": ["u2"]}})) == 10
    assert parsed == [0, 30]  # every row once, then only the new one


def test_core_blocks_named_by_a_filter_inside_a_session(db_path: Path) -> None:
    with Memory.open(db_path, embedder=None) as m:
        m.core_append("default", "persona", "I am careful")
        assert m.records(filter={"kind": "core"}, session=None)
        assert m.records(filter={"kind": "core"}, session="s") == []  # none in that session
        nested = {"$and": [{"$and": [{"kind": "core"}, {"tags": {"$exists": False}}]}]}
        assert m.peek("careful", filter=nested)  # named at any depth of ANDs


def test_other_values_of_a_coded_path_test_no_row_again(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A metadata path of scalars is coded once per agent: a filter on another user then
    compares codes, whatever the number of users (lists keep the row-by-row rule)."""
    from chronomem.retrieval import filtering

    tested: list[str] = []
    original = filtering._tested

    def counting(a: Any, c: Any, start: int) -> Any:
        tested.append(c.name)
        return original(a, c, start)

    monkeypatch.setattr(filtering, "_tested", counting)
    with Memory.open(db_path, embedder=None) as m:
        m.remember_many(
            [
                {"text": f"n{i}", "metadata": {"user": f"u{i % 40}", "list": ["x"]}}
                for i in range(80)
            ]
        )
        for user in range(40):
            assert len(m.records(filter={"metadata.user": f"u{user}"})) == 2
        assert len(m.records(filter={"metadata.user": {"$nin": ["u1", "u2"]}})) == 76
        assert len(m.records(filter={"metadata.user": {"$exists": True}})) == 80
        assert tested == []  # codes, never a row-by-row test
        assert len(m.records(filter={"metadata.list": "x"})) == 80
        assert tested == ["metadata.list"]


def test_another_handles_writes_reach_a_handles_filter_columns(
    location: str | Path, clock: SimClock
) -> None:
    """Two handles on one store: the filter columns one handle built follow the other's
    writes, closes and purges (the arrays sync through the store's change sequence)."""
    clock.set(T0)
    with (
        Memory.open(location, embedder=None, clock=clock) as reader,
        Memory.open(location, embedder=None, clock=clock) as writer,
    ):
        first = writer.remember("one", metadata={"user": "ana"}, tags=["t"], session="s1").id
        spec = {"metadata.user": "ana", "tags": "t", "session": "s1"}
        assert [r.id for r in reader.records(filter=spec)] == [first]
        clock.advance(timedelta(minutes=1))
        second = writer.remember("two", metadata={"user": "ana"}, tags=["t"], session="s1").id
        assert {r.id for r in reader.records(filter=spec)} == {first, second}
        writer.close_record(str(first), "done")
        assert [r.id for r in reader.records(filter={**spec, "status": "open"})] == [second]
        writer.forget_where({"metadata.user": "ana"}, "erase", purge=True)
        assert reader.records(filter=spec, include_history=True) == []
