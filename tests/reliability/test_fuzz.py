"""Hypothesis fuzzing of the write and read arguments, on every store (docs/reliability.md, "Bad
input"): every argument is drawn from valid values and from junk (wrong types, NUL and lone
surrogates, naive instants, NaN and infinities, huge numbers, nested containers). Each call
either succeeds — and then what was written reads back as given — or raises a ``ChronomemError``
(an ``InvalidInputError`` naming its field) and changes nothing. Nothing else may escape."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import ChronomemError, InvalidInputError, Memory, Sensitivity
from chronomem.config import resolve_preset

from ..conftest import store_of
from .conftest import Plan, Seed
from .harness import row_counts

DIM = 3

# Text from every code point, surrogates and NUL included.
ANY_TEXT = st.text(st.characters(blacklist_categories=()), max_size=40)
NAIVE = st.datetimes()
AWARE = st.datetimes(timezones=st.just(UTC))
JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), ANY_TEXT,
    st.binary(max_size=6), st.lists(st.integers(-3, 3), max_size=4),
    st.dictionaries(ANY_TEXT, st.integers(), max_size=2), NAIVE, AWARE, st.just(object()),
)  # fmt: skip
GOOD_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=40,
).filter(str.strip)
VECTOR = st.lists(st.floats(-10, 10, width=32), min_size=DIM, max_size=DIM)


@st.composite
def _spoiled(draw: st.DrawFn, required: dict[str, Any], optional: dict[str, Any]) -> dict[str, Any]:
    """Valid arguments (a random subset of the optional ones), then up to three of them
    replaced by junk: calls that are entirely valid, and calls wrong in one or a few places."""
    arguments = draw(st.fixed_dictionaries(required, optional=optional))
    names = sorted({*required, *optional})
    for name in draw(st.sets(st.sampled_from(names), max_size=3)):
        arguments[name] = draw(JUNK)
    return arguments


def _remember_arguments(seed: Seed) -> st.SearchStrategy[dict[str, Any]]:
    ids = st.sampled_from([seed.rid, seed.cites, seed.successor, "01ABCDEFGHJKMNPQRSTVWXYZ00"])
    return _spoiled(
        {"text": GOOD_TEXT},
        {
            "agent": st.sampled_from(["ada", "bo", "cy"]),
            "kind": st.sampled_from(["observation", "fact", "plan", "reflection"]),
            "importance": st.floats(1, 10),
            "occurred_at": AWARE,
            "valid_from": AWARE,
            "valid_until": AWARE,
            "domain": GOOD_TEXT,
            "tags": st.lists(GOOD_TEXT, max_size=3),
            "metadata": st.dictionaries(GOOD_TEXT, st.integers() | GOOD_TEXT, max_size=3),
            "evidence": st.lists(ids, max_size=2),
            "event_id": st.sampled_from([seed.cause, seed.effect]),
            "sensitivity": st.sampled_from([s.value for s in Sensitivity]),
            "embedding": VECTOR,
            "actor": GOOD_TEXT,
        },
    )


def _read_arguments(seed: Seed) -> st.SearchStrategy[dict[str, Any]]:
    return _spoiled(
        {"query": GOOD_TEXT},
        {
            "agents": st.lists(st.sampled_from(["ada", "bo", "cy"]), max_size=3),
            "k": st.integers(1, 50),
            "as_of": AWARE,
            "touch": st.booleans(),
            "query_embedding": VECTOR,
            "explain": st.booleans(),
            "kinds": st.lists(st.sampled_from(["observation", "fact", "reflection"])),
            "include_history": st.booleans(),
            "valid_at": AWARE,
            "preset": st.sampled_from(["default", "generative-agents", "tcmf"]),
            "crisis": st.sampled_from([seed.effect]),
            "asker": GOOD_TEXT,
        },
    )


REFUSED = object()


def _attempt(mem: Memory, outcomes: dict[str, int], call: Callable[[], Any]) -> Any:
    """``call()``'s result, or :data:`REFUSED` after checking that the refusal was a typed
    error (naming its field, when it is invalid input) that changed nothing."""
    before = row_counts(store_of(mem))
    try:
        return call()
    except ChronomemError as exc:
        refused = exc
    assert row_counts(store_of(mem)) == before, f"a refused call wrote: {refused!r}"
    if isinstance(refused, InvalidInputError):
        assert refused.field, f"no field named: {refused!r}"
    outcomes["typed error"] += 1
    return REFUSED


def _fuzz(plan: Plan) -> Any:
    return settings(
        max_examples=plan.fuzz_examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def test_fuzzed_writes_succeed_exactly_or_change_nothing(
    seeded: tuple[Memory, Seed], plan: Plan, figures: dict[str, Any]
) -> None:
    mem, seed = seeded
    outcomes = {"stored": 0, "refused by the gate": 0, "typed error": 0}

    @_fuzz(plan)
    @given(arguments=_remember_arguments(seed))
    def check(arguments: dict[str, Any]) -> None:
        result = _attempt(mem, outcomes, lambda: mem.remember(**arguments))
        if result is REFUSED:
            return
        if not result.stored:
            outcomes["refused by the gate"] += 1
            return
        outcomes["stored"] += 1
        assert result.id is not None
        record = mem.get(result.id)

        def given_or(name: str, default: Any) -> Any:  # None means "not given"
            value = arguments.get(name)
            return default if value is None else value

        assert record.text == arguments["text"]
        assert record.agent == given_or("agent", "default")
        assert record.tags == tuple(given_or("tags", ()))
        assert dict(record.metadata) == dict(given_or("metadata", {}))
        if arguments.get("importance") is not None:
            assert math.isclose(record.importance, float(arguments["importance"]))
        assert record.has_embedding == (arguments.get("embedding") is not None)

    check()
    name = f"fuzzed writes ({type(store_of(mem)).__name__})"
    figures[f"{name}: stored / refused by the gate / typed errors"] = " / ".join(
        str(n) for n in outcomes.values()
    )


def test_fuzzed_reads_answer_within_their_bounds_or_change_nothing(
    seeded: tuple[Memory, Seed], plan: Plan, figures: dict[str, Any]
) -> None:
    mem, seed = seeded
    outcomes = {"answered": 0, "typed error": 0}

    @_fuzz(plan)
    @given(arguments=_read_arguments(seed), peek=st.booleans())
    def check(arguments: dict[str, Any], peek: bool) -> None:
        before = row_counts(store_of(mem))
        read_only = {k: v for k, v in arguments.items() if k != "touch"}
        hits = _attempt(
            mem, outcomes, lambda: mem.peek(**read_only) if peek else mem.recall(**arguments)
        )
        if hits is REFUSED:
            return
        outcomes["answered"] += 1
        k = arguments.get("k")
        if k is None:  # a spoiled value: the preset's default k
            k = resolve_preset(arguments.get("preset") or mem.preset).default_k
        as_of = arguments.get("as_of") or mem.clock.now()
        assert len(hits) <= k
        assert all(h.record.recorded_at <= as_of for h in hits)
        assert all(math.isfinite(h.score) for h in hits)
        if peek or arguments.get("touch") is False:
            assert row_counts(store_of(mem)) == before  # read-only reads change nothing

    check()
    name = f"fuzzed reads ({type(store_of(mem)).__name__})"
    figures[f"{name}: answered / typed errors"] = " / ".join(str(n) for n in outcomes.values())


def test_the_clock_is_where_the_seed_left_it(seeded: tuple[Memory, Seed]) -> None:
    """The fuzzed instants are anywhere; the store's clock is fixed, so "the future" is stable."""
    mem, _ = seeded
    assert mem.clock.now() - mem.get(seeded[1].rid).recorded_at < timedelta(days=1)
