"""A read request after validation: what ``retrieval/recall.py`` scores (DESIGN §2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from chronomem.arrays import F32, F64, I64
from chronomem.config import ScoringConfig
from chronomem.graph.boost import CausalEvent
from chronomem.model.event import Event
from chronomem.model.filter import Filter
from chronomem.model.record import Kind

__all__ = ["Crisis", "Query"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Query:
    """A validated read request.

    ``vector`` is the unit-normalised query embedding, or ``None`` (lexical relevance only);
    ``raw_vector`` the same embedding before normalisation, as given or embedded (float64
    cosines divide by its own norm, as the Generative Agents code does: see
    :func:`chronomem.retrieval.relevance.similarities`).
    ``valid_at`` is the world-time instant for validity windows (default: ``as_of``).
    ``asker`` is who asks (a transcript speaker name): first-person queries refer to them.
    ``languages``: the languages the query vector's model reads (``None``: every language);
    cosines count only where it reads both the query and the record (DESIGN §9).
    ``switched_to``: the model the store switched to after the reading handle opened with
    another (its reads are lexical; the hits say so).
    ``filter``: only the records it selects are candidates (``retrieval/filtering.py``).
    """

    text: str
    vector: F32 | None
    agents: tuple[str, ...]
    k: int
    as_of: datetime
    config: ScoringConfig
    raw_vector: F32 | None = None
    kinds: frozenset[Kind] | None = None
    include_history: bool = False
    valid_at: datetime | None = None
    explain: bool = False
    crisis: Crisis | None = None
    asker: str | None = None
    dedup: bool = True
    by_similarity: bool = False
    languages: frozenset[str] | None = None
    switched_to: str | None = None
    filter: Filter | None = None

    @property
    def ranks_versions(self) -> bool:
        """Whether version-aware ranking applies: it needs the query's vector, and a crisis read
        has none of it (it asks why something happened, not for the current state of anything:
        the band would hand the newest of the chain's memories a lead over its root)."""
        return self.vector is not None and self.crisis is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Crisis:
    """A crisis read's causal inputs: the events that may lift records (ancestors, then scope
    fallbacks), the association threshold of this store's embedder and the cosine of full
    association."""

    event: Event
    events: tuple[CausalEvent, ...]
    threshold: float
    full: float
    languages: frozenset[str] | None = None  # what the embedder reads (None: every language)
    #: The instants (µs, ``[since, until)``) at which the graph knows exactly the links and
    #: events these inputs were built from: a read at any of them may reuse the inputs while
    #: the space's ``graph_seq`` holds (empty by default: built by hand, kept for no read).
    instants: tuple[int, int] = (0, 0)
    #: The events' unit vectors as columns (``graph.boost.event_matrix``), built once per crisis.
    matrix: F32 | None = None
    #: Every row's strongest true ancestor (contribution, event) for the agents last read,
    #: kept while this crisis is: ``rows → …``, one entry, keyed by each agent's row count and
    #: vectors version (``AgentArrays.vectors``), so it holds while their vectors do.
    ancestry: dict[tuple[tuple[int, int], ...], tuple[F64, I64]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: The same per agent: agent → (the vectors version they hold for, its first rows'
    #: (contribution, event)), extended by a later read as the agent's rows grow and replaced
    #: once its vectors change.
    parts: dict[str, tuple[int, tuple[F64, I64]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: The agents it was read over once (their vectors versions).
    asked: set[tuple[int, ...]] = field(default_factory=set, compare=False, repr=False)
