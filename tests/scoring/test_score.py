from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import PRESETS
from chronomem.scoring.score import Candidates, rank, score

HOUR = 3_600_000_000


def _candidates(rng: np.random.Generator, n: int, *, ties: bool) -> Candidates:
    importance = rng.integers(1, 11, size=n).astype(np.float64)
    dense = rng.choice([0.1, 0.5, 0.9], size=n) if ties else rng.uniform(-1, 1, size=n)
    last = rng.integers(0, 500, size=n).astype(np.int64) * HOUR
    return Candidates(
        mask=rng.random(n) < 0.9,
        importance=importance,
        last_accessed_at=last,
        recorded_at=last - rng.integers(0, 3, size=n).astype(np.int64) * HOUR,
        ids=np.asarray([f"{i:026d}" for i in range(n)], dtype="<U26"),
        dense=dense,
        lexical=None,
    )


def _permute(c: Candidates, perm: np.ndarray) -> Candidates:
    return Candidates(
        mask=c.mask[perm],
        importance=c.importance[perm],
        last_accessed_at=c.last_accessed_at[perm],
        recorded_at=c.recorded_at[perm],
        ids=c.ids[perm],
        dense=None if c.dense is None else c.dense[perm],
        lexical=None,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=1, max_value=60),
    st.sampled_from(sorted(PRESETS)),
)
def test_permuting_candidates_changes_no_ranking(seed: int, n: int, preset: str) -> None:
    rng = np.random.default_rng(seed)
    c = _candidates(rng, n, ties=True)
    ids = c.ids
    config = PRESETS[preset]
    s = score(c, config, as_of_us=600 * HOUR)
    top = ids[rank(s.final, c.recorded_at, ids, 10)]
    perm = rng.permutation(n)
    cp = _permute(c, perm)
    sp = score(cp, config, as_of_us=600 * HOUR)
    top_p = ids[perm][rank(sp.final, cp.recorded_at, ids[perm], 10)]
    assert list(top) == list(top_p)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.sampled_from(sorted(PRESETS)),
)
def test_shifting_every_instant_and_as_of_changes_no_score(
    seed: int, delta: int, preset: str
) -> None:
    rng = np.random.default_rng(seed)
    c = _candidates(rng, 40, ties=False)
    shifted = replace(
        c, last_accessed_at=c.last_accessed_at + delta, recorded_at=c.recorded_at + delta
    )
    a = score(c, PRESETS[preset], as_of_us=600 * HOUR)
    b = score(shifted, PRESETS[preset], as_of_us=600 * HOUR + delta)
    np.testing.assert_array_equal(a.final, b.final)


def test_empty_and_all_equal_candidates_never_give_nan() -> None:
    for config in PRESETS.values():
        n = 5
        c = Candidates(
            mask=np.ones(n, dtype=bool),
            importance=np.full(n, 5.0),
            last_accessed_at=np.zeros(n, dtype=np.int64),
            recorded_at=np.zeros(n, dtype=np.int64),
            ids=np.asarray(list("abcde"), dtype="<U26"),
            dense=np.full(n, 0.3),
            lexical=np.zeros(n),
        )
        s = score(c, config, as_of_us=0)
        assert np.all(np.isfinite(s.final))
        none = replace(c, mask=np.zeros(n, dtype=bool))
        s_none = score(none, config, as_of_us=0)
        assert np.all(s_none.final == -np.inf)
        assert rank(s_none.final, c.recorded_at, c.ids, 3).size == 0


def test_ties_break_by_recorded_at_desc_then_id() -> None:
    final = np.asarray([1.0, 1.0, 1.0, 2.0])
    recorded = np.asarray([5, 7, 7, 0], dtype=np.int64)
    ids = np.asarray(["b", "z", "a", "q"], dtype="<U26")
    assert list(ids[rank(final, recorded, ids, 4)]) == ["q", "a", "z", "b"]
    # Ties at the k-th place are resolved over every tied row, not the first ones found.
    assert list(ids[rank(final, recorded, ids, 2)]) == ["q", "a"]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 80),
    k=st.integers(1, 12),
    out=st.floats(0.0, 1.0),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    ordinal=st.booleans(),
)
def test_rank_is_the_full_sort_whatever_share_of_rows_is_out(
    n: int, k: int, out: float, levels: int, seed: int, ordinal: bool
) -> None:
    """Every selection path (few rows left, most rows out, most rows in) gives the first ``k``
    of the full sort: final desc, then recorded_at desc and id asc (or position asc), with rows
    at -inf never ranked and every row tied with the k-th taking part."""
    rng = np.random.default_rng(seed)
    final = rng.integers(0, levels, size=n).astype(np.float64)  # few levels: many ties
    final[rng.random(n) < out] = -np.inf
    recorded = rng.integers(0, 3, size=n).astype(np.int64)
    ids = np.asarray([f"{i:03d}" for i in rng.permutation(n)], dtype="<U26")
    positions = rng.permutation(n).astype(np.int64) if ordinal else None
    live = [i for i in range(n) if final[i] > -np.inf]
    if ordinal:
        assert positions is not None
        expected = sorted(live, key=lambda i: (-final[i], positions[i]))[:k]
    else:
        expected = sorted(live, key=lambda i: (-final[i], -recorded[i], ids[i]))[:k]
    assert rank(final, recorded, ids, k, positions=positions).tolist() == expected


def test_a_dense_floor_keeps_evidence_without_shared_words() -> None:
    from chronomem.scoring.score import floored

    dense = np.asarray([0.6, 0.3, 0.3])
    lexical = np.asarray([0.0, 0.7, 0.1])
    assert floored(dense, lexical, 0.5, 0.8).tolist() == pytest.approx([0.48, 0.5, 0.24])
    assert floored(dense, lexical, 0.5, 0.5).tolist() == pytest.approx([0.3, 0.5, 0.2])  # mean
    assert floored(dense, lexical, 0.5, 1.0).tolist() == pytest.approx([0.6, 0.5, 0.3])
