from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from chronomem.scoring.components import (
    elapsed_recency,
    minmax,
    ordinal_positions,
    ordinal_recency,
)

HOUR = 3_600_000_000
ages = st.lists(st.integers(min_value=0, max_value=10**15), min_size=1, max_size=50)


@given(ages, st.floats(min_value=0.5, max_value=1.0))
def test_elapsed_recency_is_in_unit_interval_and_non_increasing_in_age(
    age_list: list[int], decay: float
) -> None:
    as_of = 10**16
    ages_arr = np.sort(np.asarray(age_list, dtype=np.int64))
    rec = elapsed_recency(as_of - ages_arr, as_of, decay, HOUR)
    assert np.all(rec <= 1.0)
    assert np.all(rec >= 0.0)
    assert np.all(np.diff(rec) <= 0.0)


def test_elapsed_recency_is_the_paper_formula_and_future_stamps_have_age_zero() -> None:
    as_of = 100 * HOUR
    last = np.asarray([as_of, as_of - HOUR, as_of - 24 * HOUR, as_of + 5 * HOUR], dtype=np.int64)
    rec = elapsed_recency(last, as_of, 0.995, HOUR)
    np.testing.assert_allclose(rec, [1.0, 0.995, 0.995**24, 1.0], rtol=1e-12)


def test_ordinal_recency_gives_the_oldest_access_the_highest_value() -> None:
    last = np.asarray([30, 10, 20, 99], dtype=np.int64)
    mask = np.asarray([True, True, True, False])
    positions = ordinal_positions(last, np.zeros(4, dtype=bool), np.arange(4), mask)
    assert positions.tolist() == [3, 1, 2, 0]
    rec = ordinal_recency(positions, 0.99)
    np.testing.assert_allclose(rec, [0.99**3, 0.99**1, 0.99**2, 0.0])


def test_equal_access_times_list_events_then_thoughts_each_newest_first() -> None:
    # The code's candidates: its event list + its thought list, each newest inserted first,
    # sorted stably by last access.
    last = np.asarray([5, 5, 5, 5, 1, 5], dtype=np.int64)
    thought = np.asarray([False, True, False, True, True, False])
    inserted = np.asarray([1, 2, 3, 4, 5, 6], dtype=np.int64)
    positions = ordinal_positions(last, thought, inserted, np.ones(6, dtype=bool))
    # access 1 first; then events 6, 3, 1; then thoughts 4, 2
    assert positions.tolist() == [4, 6, 3, 5, 1, 2]


def test_minmax_zero_range_is_half_never_nan() -> None:
    values = np.asarray([3.0, 3.0, 3.0])
    assert np.all(minmax(values, None)(values) == 0.5)
    one = np.asarray([1.0])
    assert minmax(one, np.ones(1, dtype=bool))(one)[0] == 0.5
    assert minmax(np.asarray([1.0, 2.0]), np.zeros(2, dtype=bool)) == minmax(np.empty(0), None)


def test_minmax_ignores_rows_outside_the_mask() -> None:
    values = np.asarray([0.0, 5.0, 10.0, 1000.0])
    norm = minmax(values, np.asarray([True, True, True, False]))
    np.testing.assert_allclose(norm(values[:3]), [0.0, 0.5, 1.0])
    assert minmax(values, None).at(1000.0) == 1.0
