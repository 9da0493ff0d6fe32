"""The causal graph's verbs of the HTTP service (events, links, ancestry), as ``calls.py``
defines the others: functions with the engine's signatures that return a :class:`Call`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chronomem.checks import optional_instant, positive_int, require_text, to_enum
from chronomem.client.wire import Call, given, reader, segment
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance

__all__: list[str] = []  # one function per verb

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = Sequence[float] | npt.NDArray[np.floating[Any]]


def add_event(
    text: str, *, occurred_at: datetime | None = None,
    kind: EventKind | str = EventKind.HAPPENING, scope: str | None = None,
    metadata: Mapping[str, Any] | None = None, embedding: Vector | None = None,
) -> Call[Event]:  # fmt: skip
    """:meth:`chronomem.Memory.add_event`."""
    return Call("POST", "/events", reader(Event), given(**locals()))


def events(
    *, kinds: Iterable[EventKind | str] | None = None, scope: str | None = None,
    since: datetime | None = None, until: datetime | None = None,
    as_of: datetime | None = None, limit: int = 100, offset: int = 0,
) -> Call[list[Event]]:  # fmt: skip
    """:meth:`chronomem.Memory.events`."""
    params: dict[str, Any] = {
        "kind": sorted(to_enum(EventKind, k, "kinds").value for k in kinds or ()),
        "limit": str(positive_int(limit, "limit")),
        "offset": str(positive_int(offset, "offset", minimum=0)),
    }
    for name, value in (("since", since), ("until", until), ("as_of", as_of)):
        at = optional_instant(value, name)
        if at is not None:
            params[name] = at.isoformat()
    if scope is not None:
        params["scope"] = require_text(scope, "scope")
    return Call("GET", "/events", reader(list[Event]), params=params)


def get_event(event_id: str) -> Call[Event]:
    """:meth:`chronomem.Memory.get_event`."""
    return Call("GET", f"/events/{segment(event_id, 'event_id')}", reader(Event))


def link(
    cause: str, effect: str, weight: float = 1.0,
    provenance: Provenance | str = Provenance.EXPLICIT, *, similarity: float | None = None,
) -> Call[Link]:  # fmt: skip
    """:meth:`chronomem.Memory.link`."""
    return Call("POST", "/links", reader(Link), given(**locals()))


def unlink(cause: str, effect: str) -> Call[bool]:
    """:meth:`chronomem.Memory.unlink`."""
    path = f"/links/{segment(cause, 'cause')}/{segment(effect, 'effect')}"
    return Call("DELETE", path, reader(bool))


def links() -> Call[list[Link]]:
    """:meth:`chronomem.Memory.links`."""
    return Call("GET", "/links", reader(list[Link]))


def _reach(direction: str, event_id: str, max_depth: int, as_of: datetime | None) -> Call[Any]:
    """``GET /events/{id}/ancestors`` or ``…/descendants``."""
    params = {"max_depth": str(positive_int(max_depth, "max_depth"))}
    at = optional_instant(as_of, "as_of")
    if at is not None:
        params["as_of"] = at.isoformat()
    path = f"/events/{segment(event_id, 'event_id')}/{direction}"
    return Call("GET", path, reader(list[Ancestor]), params=params)


def ancestors(
    event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
) -> Call[list[Ancestor]]:
    """:meth:`chronomem.Memory.ancestors`."""
    return _reach("ancestors", event_id, max_depth, as_of)


def descendants(
    event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
) -> Call[list[Ancestor]]:
    """:meth:`chronomem.Memory.descendants`."""
    return _reach("descendants", event_id, max_depth, as_of)


def auto_link(
    event_id: str, *, window: timedelta = timedelta(days=30), threshold: float | None = None,
    weight_scale: float = 0.5,
) -> Call[list[Link]]:  # fmt: skip
    """:meth:`chronomem.Memory.auto_link`."""
    path = f"/events/{segment(event_id, 'event_id')}/auto-link"
    body = given(window=window, threshold=threshold, weight_scale=weight_scale)
    return Call("POST", path, reader(list[Link]), body)
