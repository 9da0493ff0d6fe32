from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronomem import InvalidInputError, SimClock, Ticks, require_aware
from chronomem.clock import from_micros, to_micros

aware = st.datetimes(
    min_value=datetime(1, 1, 2),  # noqa: DTZ001 - hypothesis bounds are naive by design
    max_value=datetime(9999, 12, 30),  # noqa: DTZ001
    timezones=st.just(UTC),
)


def test_naive_datetime_is_rejected_with_a_clear_error() -> None:
    with pytest.raises(InvalidInputError, match="naive"):
        require_aware(datetime(2024, 1, 1), "as_of")  # noqa: DTZ001


def test_other_offsets_are_converted_to_utc() -> None:
    local = datetime(2024, 1, 1, 10, tzinfo=timezone(timedelta(hours=2)))
    assert require_aware(local) == datetime(2024, 1, 1, 8, tzinfo=UTC)
    assert require_aware(local).tzinfo is UTC


@given(aware)
def test_micros_round_trip_exactly(instant: datetime) -> None:
    assert from_micros(to_micros(instant)) == instant


def test_sim_clock_set_and_advance() -> None:
    clock = SimClock(datetime(2023, 2, 13, 8, tzinfo=UTC))
    assert clock.advance(hours=2, minutes=30) == datetime(2023, 2, 13, 10, 30, tzinfo=UTC)
    assert clock.advance(timedelta(days=1)).day == 14
    clock.set(datetime(2023, 1, 1, tzinfo=UTC))
    assert clock.now() == datetime(2023, 1, 1, tzinfo=UTC)
    with pytest.raises(InvalidInputError):
        clock.set(datetime(2023, 1, 1))  # noqa: DTZ001
    with pytest.raises(InvalidInputError):
        clock.advance(timedelta(hours=-1))


@given(st.integers(min_value=-10_000, max_value=10_000))
def test_ticks_map_integers_to_instants_and_back(tick: int) -> None:
    ticks = Ticks(start=datetime(1200, 3, 1, tzinfo=UTC), step=timedelta(hours=6))
    assert ticks.tick(ticks.instant(tick)) == tick
    assert ticks.instant(tick) - ticks.instant(tick - 1) == timedelta(hours=6)


def test_ticks_reject_non_positive_steps() -> None:
    with pytest.raises(InvalidInputError):
        Ticks(start=datetime(2024, 1, 1, tzinfo=UTC), step=timedelta())
