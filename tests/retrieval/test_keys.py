"""Where store keys sit among an agent's rows (``AgentArrays.rows_of``): a table from key to row
for an agent whose keys fill their range, a binary search otherwise — the same answer, through
appends and removals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import Memory, SimClock
from chronomem.retrieval import index as index_module
from chronomem.retrieval.index import AgentArrays

from ..conftest import T0, store_of


def _searched(a: AgentArrays, pks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys = a.pk[: a.n]
    at = np.minimum(np.searchsorted(keys, pks), a.n - 1)
    held = keys[at] == pks
    return np.where(held, at, 0), held


@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["append", "remove"]), st.integers(1, 40)), min_size=1, max_size=6
    ),
    gaps=st.booleans(),
)
def test_rows_of_is_a_binary_search_through_appends_and_removals(
    steps: list[tuple[str, int]], gaps: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With the table in use from a few rows (``_DENSE_KEYS_FROM`` lowered), every answer
    equals a binary search over the held keys — keys of another agent in between (``gaps``) or
    not, keys asked that are held, removed, or never written."""
    path = tmp_path_factory.mktemp("keys") / "m.db"
    saved = index_module._DENSE_KEYS_FROM
    index_module._DENSE_KEYS_FROM = 4
    try:
        with Memory.open(path, embedder=None, clock=SimClock(T0)) as mem:
            ids: list[str] = []
            for kind, count in [("append", 30), *steps]:
                if kind == "append":
                    for i in range(count):
                        ids.append(mem.remember(f"note {len(ids)} {i}", agent="a").id or "")
                        if gaps:  # eight of another agent's between two of this one's
                            mem.remember_many([f"other {i}.{j}" for j in range(8)], agent="b")
                else:
                    for rid in ids[: min(count, len(ids) - 1)]:
                        mem.forget(rid, "gone")
                    ids = ids[min(count, len(ids) - 1) :]
                with store_of(mem).snapshot():
                    (a,) = mem._h.index.arrays(["a"])
                keys = a.pk[: a.n]
                asked = np.arange(int(keys.min()) - 3, int(keys.max()) + 4, dtype=np.int64)
                got, want = a.rows_of(asked), _searched(a, asked)
                assert got[1].tolist() == want[1].tolist()
                assert got[0][got[1]].tolist() == want[0][want[1]].tolist()
                assert (a._pk_table is not None) == (not gaps and a.n >= 4)
    finally:
        index_module._DENSE_KEYS_FROM = saved
