"""The causal graph and crisis reads (DESIGN §4): events, links, ancestry, auto-linking, TCMF
and context blocks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.clock import require_aware, to_micros
from chronomem.config import ScoringConfig, resolve_preset
from chronomem.context.block import (
    ChainLink,
    ContextBlock,
    TokenCounter,
    approximate_tokens,
    build_block,
    chain_links,
)
from chronomem.embedders.base import as_vector
from chronomem.engine.lifecycle import _Lifecycle
from chronomem.errors import (
    ConfigError,
    InvalidInputError,
)
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.retrieval.crisis import graph_at
from chronomem.writes import (
    metadata_dict,
    optional_instant,
    require_text,
    to_enum,
)


class _Causal(_Lifecycle):
    # -- causal graph (DESIGN §4) ------------------------------------------------------------
    def add_event(
        self,
        text: str,
        *,
        occurred_at: datetime | None = None,
        kind: EventKind | str = EventKind.HAPPENING,
        scope: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
    ) -> Event:
        """Add a node to the space-wide causal graph (a crisis, decision, outcome, happening).

        ``scope`` groups events (an institution, a district) for the scope fallback of crisis
        reads. The event is embedded like a record (or takes ``embedding``), so records can be
        associated with it by similarity.
        """
        text = require_text(text, "text")
        kind = to_enum(EventKind, kind, "kind")
        if scope is not None:
            scope = require_text(scope, "scope")
        with self._lock:
            self._require_open()
            now = require_aware(self._clock.now(), "clock.now()")
            vector = None if embedding is None else as_vector(embedding, dim=self._meta.dim)
            if vector is None and self._embedder is not None:
                vector = self._embedder.embed([text])[0]
            if vector is not None:
                self._fix_dim(int(vector.shape[0]))
            event = Event(
                id=self._ids.new_id(now),
                space=self._space,
                text=text,
                kind=kind,
                scope=scope,
                occurred_at=optional_instant(occurred_at, "occurred_at") or now,
                recorded_at=now,
                metadata=metadata_dict(metadata),
                has_embedding=vector is not None,
            )
            self._store.insert_event(self._space, event, vector)
            return event

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
            weight outside (0, 1].
        """
        provenance = Provenance(to_enum(Provenance, provenance, "provenance"))
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not (math.isfinite(weight) and 0.0 < weight <= 1.0)
        ):
            raise InvalidInputError(f"weight must be in (0, 1]; got {weight!r}", field="weight")
        if cause == effect:
            raise InvalidInputError(f"an event cannot cause itself ({cause})", field="effect")
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                for event_id in (cause, effect):
                    self.get_event(event_id)
                existing = self._store.get_link(self._space, cause, effect)
                if (
                    existing is not None
                    and existing.provenance is Provenance.EXPLICIT
                    and provenance is Provenance.INFERRED
                ):
                    return existing
                new = Link(
                    cause=cause,
                    effect=effect,
                    weight=float(weight),
                    provenance=provenance,
                    created_at=now,
                    similarity=similarity,
                )
                self._store.put_link(self._space, new)
            return new

    def unlink(self, cause: str, effect: str) -> bool:
        """Remove the link ``cause -> effect``; returns whether there was one."""
        with self._lock:
            self._require_open()
            return self._store.delete_link(self._space, cause, effect)

    def links(self) -> list[Link]:
        """Every link of the space."""
        with self._lock:
            self._require_open()
            return self._store.links(self._space)

    def _reach(
        self, event_id: str, max_depth: int, as_of: datetime | None, *, upstream: bool
    ) -> list[Ancestor]:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise InvalidInputError(f"max_depth must be a positive integer; got {max_depth!r}")
        with self._lock:
            self._require_open()
            self.get_event(event_id)
            at = self._clock.now() if as_of is None else require_aware(as_of, "as_of")
            _, reach, events = graph_at(
                self._store, self._space, event_id, at, max_depth, upstream=upstream
            )
        found = [
            Ancestor(
                event=events[i],
                depth=r.depth,
                strength=r.strength,
                path=r.path() if upstream else tuple(reversed(r.path())),
            )
            for i, r in reach.items()
            if i in events
        ]
        return sorted(found, key=lambda a: (a.depth, -a.strength, a.event.occurred_at, a.event.id))

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

    def auto_link(
        self,
        event_id: str,
        *,
        window: timedelta = timedelta(days=30),
        threshold: float | None = None,
        weight_scale: float = 0.5,
    ) -> list[Link]:
        """Propose ``inferred`` links into ``event_id`` from events that occurred in the
        ``window`` before it and whose cosine similarity to it is at or above ``threshold``
        (default: the preset's per-embedder association threshold). The weight,
        ``weight_scale × similarity`` (at most 0.5 by default), says how weak this evidence is
        next to an explicit link. Never a self-link; existing explicit links are left alone.
        Returns the links written.

        Raises:
            ConfigError: the events have no vectors (open the store with an embedder).
        """
        if window <= timedelta():
            raise InvalidInputError("window must be positive", field="window")
        if not 0.0 < weight_scale <= 1.0:
            raise InvalidInputError("weight_scale must be in (0, 1]", field="weight_scale")
        limit = (
            self._preset.causal.association_threshold(self._meta.model)
            if threshold is None
            else threshold
        )
        with self._lock:
            effect = self.get_event(event_id)
            earlier = [
                e
                for e in self._store.events_between(
                    self._space,
                    after_us=to_micros(effect.occurred_at - window),
                    before_us=to_micros(effect.occurred_at),
                )
                if e.id != effect.id
            ]
            vectors = self._store.event_embeddings(
                self._space, [effect.id, *(e.id for e in earlier)]
            )
            if effect.id not in vectors:
                raise ConfigError(
                    f"auto_link needs event vectors; event {effect.id} has none (open the store "
                    f"with an embedder, or pass embedding= to add_event)"
                )
            target = vectors[effect.id] / np.linalg.norm(vectors[effect.id])
            made = []
            for cause in earlier:
                vector = vectors.get(cause.id)
                if vector is None:
                    continue
                similarity = float(np.dot(vector / np.linalg.norm(vector), target))
                if similarity < limit:
                    continue
                link = self.link(
                    cause.id,
                    effect.id,
                    weight=weight_scale * max(similarity, 0.0),
                    provenance=Provenance.INFERRED,
                    similarity=similarity,
                )
                if link.provenance is Provenance.INFERRED:
                    made.append(link)
            return made

    def context(
        self,
        query: str | None = None,
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        crisis: str | None = None,
        k: int = 12,
        budget_tokens: int | None = None,
        as_of: datetime | None = None,
        touch: bool = True,
        preset: str | ScoringConfig | None = None,
        count_tokens: TokenCounter = approximate_tokens,
    ) -> ContextBlock:
        """A prompt-ready block: the question, the ranked evidence (holders, date, importance,
        id, lifecycle markers) and, with a ``crisis``, the causal chain from root to crisis with
        link weights — as ``.text`` and as data.

        ``budget_tokens`` caps the text (counted by ``count_tokens``, default
        :func:`~chronomem.context.block.approximate_tokens`): the lowest-ranked evidence and the
        causes farthest from the crisis are dropped first, the proximate causes last. With an
        empty ``query`` the crisis's text is the question. ``touch`` as in :meth:`recall`.
        """
        if budget_tokens is not None and (
            isinstance(budget_tokens, bool)
            or not isinstance(budget_tokens, int)
            or budget_tokens < 1
        ):
            raise InvalidInputError(
                "budget_tokens must be a positive integer", field="budget_tokens"
            )
        if not (query and query.strip()) and crisis is None:
            raise InvalidInputError("context needs a query or a crisis", field="query")
        config = self._preset if preset is None else resolve_preset(preset)
        with self._lock:
            self._require_open()
            at = require_aware(self._clock.now() if as_of is None else as_of, "as_of")
            hits = self.recall(
                query or "", agent=agent, agents=agents, k=k, as_of=at, touch=touch,
                preset=config, crisis=crisis,
            )  # fmt: skip
            event = None
            chain: list[ChainLink] = []
            if crisis is not None:
                event = self.get_event(crisis)
                links, reach, events = graph_at(
                    self._store, self._space, event.id, at, config.causal.max_depth
                )
                depth_of = {i: r.depth for i, r in reach.items() if i in events}
                chain = chain_links(event, links, depth_of, events)
        question = query if query and query.strip() else (event.text if event else "")
        return build_block(
            question=question,
            as_of=at,
            hits=hits,
            crisis=event,
            chain=chain,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
        )
