"""Reading the causal graph for a read: what the links known at an instant reach, and the
causal events a crisis read fuses (DESIGN §4)."""

from __future__ import annotations

from datetime import datetime

from chronomem.clock import to_micros
from chronomem.config import CausalConfig
from chronomem.graph.ancestry import Reach, traverse
from chronomem.graph.causal_events import causal_events
from chronomem.model.event import Event, Link
from chronomem.retrieval.query import Crisis
from chronomem.stores.base import MemoryStore

__all__ = ["build_crisis", "graph_at"]


def graph_at(
    store: MemoryStore,
    space: str,
    event_id: str,
    as_of: datetime,
    max_depth: int,
    *,
    upstream: bool = True,
) -> tuple[list[Link], dict[str, Reach], dict[str, Event]]:
    """The links known at ``as_of``, what they reach from ``event_id`` within ``max_depth``, and
    those events (recorded by ``as_of``)."""
    links = store.links(space, as_of_us=to_micros(as_of))
    reach = traverse(
        [(x.cause, x.effect, x.weight) for x in links], event_id, max_depth, upstream=upstream
    )
    events = {e.id: e for e in store.get_events(space, sorted(reach)) if e.recorded_at <= as_of}
    return links, reach, events


def build_crisis(
    store: MemoryStore,
    space: str,
    event: Event,
    as_of: datetime,
    causal: CausalConfig,
    model_id: str | None,
) -> Crisis:
    """The causal events of a crisis read at ``as_of``: the crisis's ancestors and the
    scope-fallback events, with the association threshold of the store's embedder."""
    _, reach, events = graph_at(store, space, event.id, as_of, causal.max_depth)
    scope_events: list[Event] = []
    if event.scope is not None and causal.fallback_window is not None:
        scope_events = [
            e
            for e in store.events_between(
                space,
                after_us=to_micros(event.occurred_at - causal.fallback_window),
                before_us=to_micros(event.occurred_at),
                scope=event.scope,
            )
            if e.recorded_at <= as_of
        ]
    wanted = [*events, *(e.id for e in scope_events)]
    return Crisis(
        event=event,
        events=tuple(
            causal_events(
                crisis=event,
                reach=reach,
                events=events,
                vectors=store.event_embeddings(space, wanted),
                scope_events=scope_events,
                config=causal,
            )
        ),
        threshold=causal.association_threshold(model_id),
        full=causal.full_association(model_id),
    )
