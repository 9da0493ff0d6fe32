"""From a crisis and the graph to the events that may lift records (DESIGN §4). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from chronomem.arrays import F32
from chronomem.config import CausalConfig
from chronomem.graph.ancestry import Reach
from chronomem.graph.boost import CausalEvent
from chronomem.model.event import Event
from chronomem.text import event_key

__all__ = ["causal_events"]


def causal_events(
    *,
    crisis: Event,
    reach: Mapping[str, Reach],
    events: Mapping[str, Event],
    vectors: Mapping[str, F32],
    scope_events: Sequence[Event],
    config: CausalConfig,
) -> list[CausalEvent]:
    """The crisis's true ancestors (those in ``events``: visible at the read's instant) with
    their effective strength (best over depths of strength × depth weight; ``chain`` weighting
    counts depths from the deepest of them), then the scope-fallback events: in the crisis's
    scope, not ancestors, counted at ``fallback_factor × the weakest ancestor's effective
    strength`` (``fallback_factor`` when there is no ancestor), so strictly below every true
    ancestor."""
    out: list[CausalEvent] = []
    visible = [event_id for event_id in sorted(reach) if event_id in events]
    deepest = max((reach[event_id].deepest for event_id in visible), default=1)
    for event_id in visible:
        r = reach[event_id]
        effective, depth = r.best(
            config.depth_weighting, config.max_depth, deepest=deepest, step=config.chain_step
        )
        out.append(
            CausalEvent(
                event_id=event_id,
                key=event_key(event_id),
                vector=vectors.get(event_id),
                effective=effective,
                depth=depth,
                strength=r.by_depth[depth - 1],
                path=r.paths[depth - 1],
            )
        )
    if config.fallback_factor <= 0.0:
        return out
    weakest = min((e.effective for e in out), default=1.0)
    fallback = config.fallback_factor * weakest
    for event in scope_events:
        if event.id == crisis.id or event.id in reach:
            continue
        out.append(
            CausalEvent(
                event_id=event.id,
                key=event_key(event.id),
                vector=vectors.get(event.id),
                effective=fallback,
                depth=0,
                strength=fallback,
                path=(event.id,),
                fallback=True,
            )
        )
    return out
