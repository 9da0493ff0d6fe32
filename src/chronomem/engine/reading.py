"""Reads (DESIGN §2): recall, peek and batches, touching or read-only."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.clock import require_aware, to_micros
from chronomem.config import ScoringConfig, resolve_preset
from chronomem.embedders.base import as_vector
from chronomem.engine.writing import _Writing
from chronomem.errors import (
    InvalidInputError,
)
from chronomem.model.record import Hit, Kind
from chronomem.retrieval.crisis import build_crisis
from chronomem.retrieval.recall import Crisis, Query, search
from chronomem.writes import (
    optional_instant,
    require_text,
    string_tuple,
    to_enum,
)

F32 = npt.NDArray[np.float32]


class _Reading(_Writing):
    # -- reads ----------------------------------------------------------------------------
    def _query_vector(
        self, query: str, query_embedding: object, config: ScoringConfig
    ) -> F32 | None:
        if query_embedding is not None:
            vector = as_vector(query_embedding, dim=self._meta.dim, name="query_embedding")
        elif self._embedder is not None and config.relevance.value != "lexical":
            vector = self._embedder.embed([query])[0]
        else:
            return None
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    def _build_query(
        self,
        query: str,
        vector: F32 | None,
        *,
        agent: str | None,
        agents: Sequence[str] | None,
        k: int,
        as_of: datetime,
        explain: bool,
        kinds: Iterable[Kind | str] | None,
        include_history: bool,
        valid_at: datetime | None,
        config: ScoringConfig,
        crisis: Crisis | None,
        asker: str | None = None,
    ) -> Query:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive integer; got {k!r}", field="k")
        if agent is not None and agents is not None:
            raise InvalidInputError("pass agent= or agents=, not both", field="agents")
        if agent is not None:
            chosen: tuple[str, ...] = (require_text(agent, "agent"),)
        elif agents is not None:
            chosen = tuple(dict.fromkeys(string_tuple(agents, "agents")))
        else:
            chosen = tuple(self._store.agents(self._space))
        return Query(
            text=query,
            vector=vector,
            agents=chosen,
            k=k,
            as_of=require_aware(as_of, "as_of"),
            config=config,
            kinds=None if kinds is None else frozenset(to_enum(Kind, x, "kinds") for x in kinds),
            include_history=bool(include_history),
            valid_at=optional_instant(valid_at, "valid_at"),
            explain=explain,
            crisis=crisis,
            asker=None if asker is None else require_text(asker, "asker"),
        )

    def recall(
        self,
        query: str,
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        k: int = 10,
        as_of: datetime | None = None,
        touch: bool = True,
        query_embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
        explain: bool = False,
        kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False,
        valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None,
        crisis: str | None = None,
        asker: str | None = None,
    ) -> list[Hit]:
        """The top ``k`` records for ``query`` at ``as_of`` (default: now), best first.

        Args:
            agent / agents: whose memories to read; neither means every agent in the space.
                Multi-agent reads collapse records with the same normalised text into one hit
                listing every holder.
            touch: set ``last_accessed_at = as_of`` on the returned records, durably, in this
                call (never moving it backwards). ``False`` is strictly read-only.
            query_embedding: a precomputed query vector instead of the embedder's.
            explain: attach a :class:`~chronomem.model.Breakdown` to each hit.
            kinds: only these kinds are candidates.
            include_history: closed and superseded records are candidates too.
            valid_at: the world-time instant for validity windows (default ``as_of``).
            preset: override the default preset for this call.
            crisis: an event id: records associated with the crisis's causal ancestors are
                lifted even when their text does not resemble the query (DESIGN §4; the fusion
                is the preset's ``causal`` config). With an empty ``query`` the crisis's own text
                is the query.
            asker: who asks, as a transcript speaker (the ``Name`` of records written as
                ``"Name: words"``, e.g. ``"user"``): a first-person query ("what do I ...")
                refers to their lines, which gain the preset's ``speaker_weight``.

        Hits show records as they were scored, before this call's touch. An empty candidate
        set returns ``[]``.
        """
        return self.recall_many(
            [query],
            agent=agent,
            agents=agents,
            k=k,
            as_of=as_of,
            touch=touch,
            query_embeddings=None if query_embedding is None else [query_embedding],
            explain=explain,
            kinds=kinds,
            include_history=include_history,
            valid_at=valid_at,
            preset=preset,
            crisis=crisis,
            asker=asker,
        )[0]

    def peek(self, query: str, **kwargs: Any) -> list[Hit]:
        """:meth:`recall` without touching: strictly read-only."""
        kwargs["touch"] = False
        return self.recall(query, **kwargs)

    def recall_many(
        self,
        queries: Sequence[str],
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        k: int = 10,
        as_of: datetime | None = None,
        touch: bool = True,
        query_embeddings: Sequence[Any] | None = None,
        explain: bool = False,
        kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False,
        valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None,
        sequential: bool | None = None,
        crisis: str | None = None,
        asker: str | None = None,
    ) -> list[list[Hit]]:
        """Answer a batch of queries (one list of hits per query, in order).

        By default every query is scored against the same snapshot and the union of the hits is
        touched once at the end. ``sequential=True`` touches after each query, so a later query
        sees the earlier ones' touches — the Generative Agents code's behaviour, and the
        ``generative-agents-code`` preset's default. Queries are embedded in one batch.
        """
        config = self._preset if preset is None else resolve_preset(preset)
        if isinstance(queries, str):
            raise InvalidInputError("queries must be a list of strings, not one string")
        texts = list(queries)
        if query_embeddings is not None and len(query_embeddings) != len(texts):
            raise InvalidInputError("query_embeddings must have one vector per query")
        for i, text in enumerate(texts):
            if not isinstance(text, str) or (
                not text.strip()
                and crisis is None
                and (query_embeddings is None or query_embeddings[i] is None)
            ):
                raise InvalidInputError(
                    "query must be a non-empty string (or come with query_embedding or crisis)",
                    field="query",
                )
        with self._lock:
            self._require_open()
            at = require_aware(self._clock.now() if as_of is None else as_of, "as_of")
            situation = (
                None
                if crisis is None
                else build_crisis(
                    self._store, self._space, self.get_event(crisis), at, config.causal,
                    self._meta.model,
                )
            )  # fmt: skip
            if situation is not None:
                texts = [t if t.strip() else situation.event.text for t in texts]
            vectors = self._query_vectors(texts, query_embeddings, config)
            built = [
                self._build_query(
                    text,
                    vector,
                    agent=agent,
                    agents=agents,
                    k=k,
                    as_of=at,
                    explain=explain,
                    kinds=kinds,
                    include_history=include_history,
                    valid_at=valid_at,
                    config=config,
                    crisis=situation,
                    asker=asker,
                )
                for text, vector in zip(texts, vectors, strict=True)
            ]
            is_sequential = config.sequential_touch if sequential is None else sequential
            results: list[list[Hit]] = []
            pending: dict[str, None] = {}
            for q in built:
                hits = search(self._index, self._store, self._space, q)
                results.append(hits)
                if touch:
                    ids = [i for h in hits for i in h.record_ids]
                    if is_sequential:
                        self._store.touch(self._space, ids, to_micros(q.as_of))
                    else:
                        pending.update(dict.fromkeys(ids))
            if touch and pending:
                self._store.touch(self._space, list(pending), to_micros(built[0].as_of))
            return results

    def _query_vectors(
        self, texts: list[str], given: Sequence[Any] | None, config: ScoringConfig
    ) -> list[F32 | None]:
        if given is not None:
            return [
                self._query_vector(t, g, config) if g is not None else None
                for t, g in zip(texts, given, strict=True)
            ]
        if self._embedder is None or config.relevance.value == "lexical":
            return [None] * len(texts)
        vectors = self._embedder.embed(texts)
        return [self._query_vector(t, v, config) for t, v in zip(texts, vectors, strict=True)]
