"""The causal graph's verbs and context blocks of the facade (DESIGN §4): events, links,
inferred links, the graph's reads (``ancestors``, ``descendants``, ``links``, ``events``) and
prompt-ready context blocks. :class:`~chronomem.Memory` takes them from :class:`CausalVerbs`.
Each verb checks its arguments, takes the handle's lock, reads the clock once and calls
``engine/graph.py`` (``engine/browse.py`` for ``events``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from chronomem.checks import (
    bounded_text,
    number_in,
    optional_instant,
    optional_text,
    positive_duration,
    positive_int,
    require_text,
    to_enum,
)
from chronomem.config import ScoringConfig
from chronomem.context.block import ContextBlock, TokenCounter, approximate_tokens
from chronomem.engine import browse, graph, read
from chronomem.engine.view import MemoryView, Vector
from chronomem.errors import InvalidInputError
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.model.filter import FilterSpec
from chronomem.retrieval.options import ReadOptions

__all__ = ["CausalVerbs"]


class CausalVerbs(MemoryView):
    """The causal graph's verbs and context blocks (see the module docstring)."""

    def get_event(self, event_id: str) -> Event:
        """The event with this id. Raises :class:`NotFoundError`."""
        with self._call() as h:
            return h.event(event_id)

    def links(self) -> list[Link]:
        """Every link of the space."""
        with self._call() as h:
            return h.store.links(h.space)

    def ancestors(
        self, event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
    ) -> list[Ancestor]:
        """Every event upstream of ``event_id`` within ``max_depth`` links, nearest first, each
        with its depth (fewest links), path strength (best product of weights within the bound)
        and that path (ancestor first). Cycles terminate; an event is never its own ancestor."""
        return self._reach(event_id, max_depth, as_of, upstream=True)

    def descendants(
        self, event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
    ) -> list[Ancestor]:
        """Every event downstream of ``event_id`` within ``max_depth`` links (paths start at
        ``event_id``)."""
        return self._reach(event_id, max_depth, as_of, upstream=False)

    def _reach(
        self, event_id: str, max_depth: int, as_of: datetime | None, *, upstream: bool
    ) -> list[Ancestor]:
        positive_int(max_depth, "max_depth")
        at = optional_instant(as_of, "as_of")
        with self._call() as h:
            return graph.reach(h, event_id, max_depth, as_of=at or h.now(), upstream=upstream)

    def events(
        self, *, kinds: Iterable[EventKind | str] | None = None, scope: str | None = None,
        since: datetime | None = None, until: datetime | None = None,
        as_of: datetime | None = None, limit: int = 100, offset: int = 0,
    ) -> list[Event]:  # fmt: skip
        """Browse the causal graph's events: those recorded by ``as_of`` (default now) of these
        kinds and ``scope``, that occurred in ``[since, until)``, in order of ``occurred_at``
        (then id), ``limit`` from ``offset``. Read-only."""
        chosen = None if kinds is None else {to_enum(EventKind, k, "kinds") for k in kinds}
        window = (optional_instant(since, "since"), optional_instant(until, "until"))
        at = optional_instant(as_of, "as_of")
        limit, offset = positive_int(limit, "limit"), positive_int(offset, "offset", minimum=0)
        with self._call() as h:
            return browse.events(
                h, kinds=chosen, scope=optional_text(scope, "scope"), since=window[0],
                until=window[1], as_of=at or h.now(), limit=limit, offset=offset,
            )  # fmt: skip

    def add_event(
        self,
        text: str,
        *,
        occurred_at: datetime | None = None,
        kind: EventKind | str = EventKind.HAPPENING,
        scope: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        embedding: Vector | None = None,
    ) -> Event:
        """Add a node to the space-wide causal graph (a crisis, decision, outcome, happening).

        ``scope`` groups events (an institution, a district) for the scope fallback of crisis
        reads. The event is embedded like a record (or takes ``embedding``), so records can be
        associated with it by similarity.
        """
        text = bounded_text(text, "text")
        chosen = to_enum(EventKind, kind, "kind")
        scope = optional_text(scope, "scope")
        occurred = optional_instant(occurred_at, "occurred_at")
        with self._call() as h:
            return graph.add_event(
                h, text, now=h.now(), occurred_at=occurred, kind=chosen, scope=scope,
                metadata=metadata, embedding=embedding,
            )  # fmt: skip

    def link(
        self,
        cause: str,
        effect: str,
        weight: float = 1.0,
        provenance: Provenance | str = Provenance.EXPLICIT,
        *,
        similarity: float | None = None,
    ) -> Link:
        """Add the causal link ``cause -> effect`` with a weight in (0, 1] (how strong the
        evidence is that the cause led to the effect). An explicit link replaces an inferred one
        of the same pair; an inferred link never replaces an explicit one (the explicit link is
        returned unchanged).

        Raises:
            NotFoundError: either event does not exist. InvalidInputError: a self-link, or a
            weight outside (0, 1]. CauseAfterEffectError: the cause occurred after the effect
            (simultaneous is allowed). CausalCycleError: the effect already leads to the cause,
            so the link would close a cycle (``err.path``). Both name the two events
            (``err.cause``, ``err.effect``); nothing is written.
        """
        chosen = to_enum(Provenance, provenance, "provenance")
        weight = number_in(weight, "weight", 0.0, 1.0, low_open=True)
        if similarity is not None:
            similarity = number_in(similarity, "similarity", -1.0, 1.0)
        with self._call() as h:
            return graph.link(
                h, cause, effect, now=h.now(), weight=weight, provenance=chosen,
                similarity=similarity,
            )  # fmt: skip

    def unlink(self, cause: str, effect: str) -> bool:
        """Remove the link ``cause -> effect``; returns whether there was one."""
        cause, effect = require_text(cause, "cause"), require_text(effect, "effect")
        with self._call() as h:
            return h.store.delete_link(h.space, cause, effect)

    def auto_link(
        self, event_id: str, *, window: timedelta = timedelta(days=30),
        threshold: float | None = None, weight_scale: float = 0.5,
    ) -> list[Link]:  # fmt: skip
        """Propose ``inferred`` links into ``event_id`` from events that occurred in the
        ``window`` before it and whose cosine similarity to it is at or above ``threshold``
        (default: the preset's per-embedder association threshold). The weight,
        ``weight_scale × similarity`` (at most 0.5 by default), says how weak this evidence is
        next to an explicit link. Never a self-link, never a link that would close a cycle;
        existing explicit links are left alone. Returns the links written.

        Raises:
            ConfigError: the events have no vectors (open the store with an embedder).
        """
        window = positive_duration(window, "window")
        weight_scale = number_in(weight_scale, "weight_scale", 0.0, 1.0, low_open=True)
        if threshold is not None:
            threshold = number_in(threshold, "threshold", -1.0, 1.0)
        with self._call() as h:
            return graph.auto_link(
                h, event_id, now=h.now(), window=window, threshold=threshold,
                weight_scale=weight_scale,
            )  # fmt: skip

    def context(
        self, query: str | None = None, *, agent: str | None = None,
        agents: Sequence[str] | None = None, crisis: str | None = None, k: int = 12,
        budget_tokens: int | None = None, as_of: datetime | None = None, touch: bool = True,
        preset: str | ScoringConfig | None = None, filter: FilterSpec | None = None,
        session: str | None = None, count_tokens: TokenCounter = approximate_tokens,
        min_relevance: float | None = 0.5,
    ) -> ContextBlock:  # fmt: skip
        """A prompt-ready block: the question, the ranked evidence (holders, date, importance,
        id, lifecycle markers) and, with a ``crisis``, the causal chain from root to crisis with
        link weights — as ``.text`` and as data.

        ``budget_tokens`` caps the text (counted by ``count_tokens``): the lowest-ranked
        evidence and the causes farthest from the crisis are dropped first, the proximate causes
        last. With an empty ``query`` the crisis's text is the question. ``touch``, ``filter``
        and ``session`` as in :meth:`recall` (a filter keeps the evidence; the causal chain is
        the crisis's).

        ``min_relevance`` (in [0, 1]) leaves out hits whose relevance is below that fraction of
        the best hit's, unless a cause of the crisis lifted them (the best hit always stays; the
        block's ``relevance_floor`` and ``omitted_irrelevant`` say what was cut, and hits left
        out are not touched); ``None`` or 0 keeps all ``k``.
        """
        if budget_tokens is not None:
            positive_int(budget_tokens, "budget_tokens")
        if min_relevance is not None:
            min_relevance = number_in(min_relevance, "min_relevance", 0.0, 1.0)
        read.check_queries(["" if query is None else query], None, crisis=crisis is not None)
        if not callable(count_tokens):
            raise InvalidInputError("count_tokens must be callable", field="count_tokens")
        options = ReadOptions.from_arguments(locals())
        with self._call() as h:
            return graph.context(
                h, query, options, now=h.now(), budget_tokens=budget_tokens,
                count_tokens=count_tokens, min_relevance=min_relevance,
            )  # fmt: skip
