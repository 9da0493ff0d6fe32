"""Bounded traversal: exact against brute force, cycles, depth bounds (hypothesis)."""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem.config import DepthWeighting
from chronomem.graph.ancestry import depth_weight, traverse

NODES = [f"e{i}" for i in range(7)]

edges_strategy = st.lists(
    st.tuples(
        st.sampled_from(NODES),
        st.sampled_from(NODES),
        st.sampled_from([0.1, 0.25, 0.5, 0.8, 1.0]),
    ).filter(lambda e: e[0] != e[1]),
    max_size=18,
    unique_by=lambda e: (e[0], e[1]),
)


def _brute_force(edges, start, max_depth):  # type: ignore[no-untyped-def]
    """Best product of weights over every walk of exactly d links ending at ``start`` that does
    not pass through ``start`` before its end."""
    parents: dict[str, list[tuple[str, float]]] = {}
    for cause, effect, weight in edges:
        parents.setdefault(effect, []).append((cause, weight))
    best: dict[tuple[str, int], float] = {}

    def walk(node: str, depth: int, strength: float) -> None:
        if depth == max_depth:
            return
        for cause, weight in parents.get(node, []):
            if cause == start:
                continue
            value = strength * weight
            key = (cause, depth + 1)
            best[key] = max(best.get(key, 0.0), value)
            walk(cause, depth + 1, value)

    walk(start, 0, 1.0)
    return best


@settings(max_examples=200, deadline=None)
@given(edges_strategy, st.sampled_from(NODES), st.integers(min_value=1, max_value=4))
def test_traversal_is_exact_bounded_and_never_returns_the_start(edges, start, max_depth) -> None:  # type: ignore[no-untyped-def]
    reach = traverse(edges, start, max_depth)
    assert start not in reach  # never its own ancestor, even through a cycle
    expected = _brute_force(edges, start, max_depth)
    assert {node for node, _ in expected} == set(reach)
    weight = {(c, e): w for c, e, w in edges}
    for node, r in reach.items():
        assert len(r.by_depth) == max_depth
        assert 1 <= r.depth <= max_depth
        for d, strength in enumerate(r.by_depth, start=1):
            assert math.isclose(strength, expected.get((node, d), 0.0))
            if strength > 0:
                path = r.paths[d - 1]
                assert (path[0], path[-1], len(path)) == (node, start, d + 1)
                product = math.prod(weight[(a, b)] for a, b in itertools.pairwise(path))
                assert math.isclose(product, strength)
        assert r.strength == max(r.by_depth) <= 1.0


def test_cycles_terminate_and_depth_counts_links() -> None:
    edges = [("a", "b", 1.0), ("b", "a", 1.0), ("b", "crisis", 0.5), ("crisis", "a", 1.0)]
    reach = traverse(edges, "crisis", 10)
    assert set(reach) == {"a", "b"}
    assert reach["b"].depth == 1
    assert reach["a"].depth == 2
    assert reach["a"].path(2) == ("a", "b", "crisis")


def test_descendants_go_downstream() -> None:
    edges = [("drought", "rationing", 0.9), ("rationing", "riot", 0.8)]
    reach = traverse(edges, "drought", 4, upstream=False)
    assert set(reach) == {"rationing", "riot"}
    assert math.isclose(reach["riot"].strength, 0.72)
    assert reach["riot"].path() == ("riot", "rationing", "drought")


def test_depth_weightings() -> None:
    assert [depth_weight(DepthWeighting.FLAT, d, 4) for d in (1, 4)] == [1.0, 1.0]
    assert [depth_weight(DepthWeighting.PROXIMATE, d, 4) for d in (1, 4)] == [1.0, 0.25]
    assert [depth_weight(DepthWeighting.ROOT, d, 4) for d in (1, 4)] == [0.25, 1.0]
    edges = [("root", "mid", 1.0), ("mid", "crisis", 1.0), ("root", "crisis", 0.3)]
    r = traverse(edges, "crisis", 4)["root"]
    assert r.best(DepthWeighting.FLAT, 4) == (1.0, 2)  # the strong 2-link path wins
    assert r.best(DepthWeighting.PROXIMATE, 4) == (0.5, 2)
    assert r.best(DepthWeighting.ROOT, 4) == (0.5, 2)
