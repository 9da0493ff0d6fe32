"""Bounded traversal of the causal graph (DESIGN §4). Pure: edges in, reach out.

A dynamic programme over exact hop counts: ``best[d][e]`` is the strongest product of link
weights over paths of exactly ``d`` links between ``e`` and the start. Counting hops instead of
marking visited nodes makes cycles harmless and the depth bound exact; paths that come back to the
start are dropped, so an event is never its own ancestor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from chronomem.config import DepthWeighting

__all__ = ["Reach", "depth_weight", "path_between", "traverse"]


def depth_weight(
    mode: DepthWeighting, depth: int, max_depth: int, *, deepest: int = 1, step: float = 0.0
) -> float:
    """The weight of an ancestor ``depth`` links upstream (DESIGN §4; ``chain``: 1 at the read's
    ``deepest`` ancestor, ``step`` less per link nearer the crisis)."""
    if mode is DepthWeighting.CHAIN:
        return 1.0 - step * max(0, deepest - depth)
    if mode is DepthWeighting.PROXIMATE:
        return 1.0 / depth
    if mode is DepthWeighting.ROOT:
        return depth / max_depth
    return 1.0


@dataclass(frozen=True, slots=True)
class Reach:
    """How one event is reached from the start.

    ``by_depth[d - 1]`` is the best strength over paths of exactly ``d`` links (0 when none);
    ``paths[d - 1]`` the event ids of that path, from this event to the start.
    """

    event_id: str
    by_depth: tuple[float, ...]
    paths: tuple[tuple[str, ...], ...]

    @property
    def depth(self) -> int:
        """The fewest links within the bound."""
        return next(d for d, s in enumerate(self.by_depth, start=1) if s > 0.0)

    @property
    def strength(self) -> float:
        """The best product of weights over paths within the bound."""
        return max(self.by_depth)

    @property
    def deepest(self) -> int:
        """The most links of a path within the bound."""
        return max(d for d, s in enumerate(self.by_depth, start=1) if s > 0.0)

    def best(
        self, mode: DepthWeighting, max_depth: int, *, deepest: int = 1, step: float = 0.0
    ) -> tuple[float, int]:
        """``(strength × depth weight, depth)`` maximised over depths."""
        return max(
            (s * depth_weight(mode, d, max_depth, deepest=deepest, step=step), d)
            for d, s in enumerate(self.by_depth, start=1)
            if s > 0.0
        )

    def path(self, depth: int | None = None) -> tuple[str, ...]:
        """The best path at ``depth`` (default: the best-strength one)."""
        if depth is None:
            depth = 1 + max(range(len(self.by_depth)), key=lambda i: (self.by_depth[i], -i))
        return self.paths[depth - 1]


def traverse(
    edges: Iterable[tuple[str, str, float]],
    start: str,
    max_depth: int,
    *,
    upstream: bool = True,
) -> dict[str, Reach]:
    """Every event within ``max_depth`` links of ``start`` (its ancestors when ``upstream``,
    else its descendants), with per-depth best strengths and paths. ``start`` is never included.

    ``edges`` are ``(cause, effect, weight)`` with weights in (0, 1].
    """
    if max_depth < 1:
        return {}
    neighbours: dict[str, list[tuple[str, float]]] = {}
    for cause, effect, weight in edges:
        src, dst = (effect, cause) if upstream else (cause, effect)
        neighbours.setdefault(src, []).append((dst, weight))
    for targets in neighbours.values():
        targets.sort()  # deterministic tie-breaking between equal-strength paths

    # level[node] = (best strength over exactly-d-link paths, that path from node to start)
    level: dict[str, tuple[float, tuple[str, ...]]] = {start: (1.0, (start,))}
    per_depth: list[dict[str, tuple[float, tuple[str, ...]]]] = []
    for _ in range(max_depth):
        nxt: dict[str, tuple[float, tuple[str, ...]]] = {}
        for node in sorted(level):
            strength, path = level[node]
            for other, weight in neighbours.get(node, ()):
                if other == start:
                    continue
                value = strength * weight
                if value > nxt.get(other, (0.0, ()))[0]:
                    nxt[other] = (value, (other, *path))
        per_depth.append(nxt)
        level = nxt
        if not level:
            break
    reached = sorted({node for level_d in per_depth for node in level_d})
    out = {}
    for node in reached:
        by_depth = tuple(
            per_depth[d][node][0] if d < len(per_depth) and node in per_depth[d] else 0.0
            for d in range(max_depth)
        )
        paths = tuple(
            per_depth[d][node][1] if d < len(per_depth) and node in per_depth[d] else ()
            for d in range(max_depth)
        )
        out[node] = Reach(node, by_depth, paths)
    return out


def path_between(edges: Iterable[tuple[str, str]], start: str, goal: str) -> tuple[str, ...] | None:
    """The shortest chain of ``(cause, effect)`` edges from ``start`` to ``goal`` (event ids,
    ``start`` first), or ``None``: the link ``goal -> start`` would close a cycle exactly when
    there is one. Unbounded, so a cycle of any length is found."""
    following: dict[str, list[str]] = {}
    for cause, effect in edges:
        following.setdefault(cause, []).append(effect)
    came_from: dict[str, str] = {start: start}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for other in sorted(following.get(node, ())):
                if other in came_from:
                    continue
                came_from[other] = node
                if other == goal:
                    path = [goal]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return tuple(reversed(path))
                nxt.append(other)
        frontier = nxt
    return None
