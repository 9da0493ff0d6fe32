"""The options of a read, as one frozen value (DESIGN §2): built once from the keyword arguments
of :meth:`~chronomem.Memory.recall` (or by an adapter: the CLI, the HTTP service, the MCP server)
and passed down unchanged. Constructing one validates and normalises every field, so a bad option
fails with :class:`~chronomem.errors.InvalidInputError` naming it, wherever the value was built.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from chronomem.checks import (
    flag,
    optional_instant,
    optional_text,
    positive_int,
    string_tuple,
    to_enum,
)
from chronomem.config import ScoringConfig, resolve_preset
from chronomem.errors import InvalidInputError
from chronomem.model.filter import AllOf, Condition, Filter, FilterSpec, parse_filter
from chronomem.model.record import Kind
from chronomem.verbs import RANK_BY, RankBy

__all__ = ["RANK_BY", "RankBy", "ReadOptions"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    """How to read (every field has the meaning of the same keyword of
    :meth:`~chronomem.Memory.recall`).

    Attributes:
        agents: whose memories; ``None`` reads every agent of the space. Normalised to a tuple
            without repeats.
        k: how many hits, at least 1 (``None``: the preset's ``default_k``, 10 for every preset
            but ``generative-agents-code``, 30).
        as_of: the instant the read is evaluated at (``None``: the clock's now).
        touch: stamp ``last_accessed_at = as_of`` on the returned records.
        explain: attach a :class:`~chronomem.model.Breakdown` to each hit.
        kinds: only records of these kinds are candidates (normalised to a frozenset of
            :class:`~chronomem.model.Kind`).
        include_history: closed and superseded records are candidates too.
        valid_at: the world-time instant for validity windows (``None``: ``as_of``).
        preset: a preset name or config for this read (normalised to a
            :class:`~chronomem.config.ScoringConfig`; ``None``: the handle's).
        crisis: an event id: a causal (TCMF) read of that crisis.
        asker: who asks, as a transcript speaker name.
        sequential: ``recall_many`` touches after each query (``None``: the preset's choice).
        actor: who reads, for the space's access log (when it is on).
        dedup: a multi-agent read collapses records of equal text into one hit listing every
            holder (DESIGN §2 step 8); ``False`` returns each record as its own hit.
        rank_by: ``"score"`` (chronomem's final score, DESIGN §2 step 7) or ``"similarity"``
            (the raw cosine of query and record, :attr:`~chronomem.model.Hit.similarity`, as
            vector stores order results; records without a vector after the others, by
            score). Scores are the same either way.
        filter: only records this filter selects are candidates (docs/filters.md; a mapping
            is parsed into a :data:`~chronomem.model.filter.Filter`), applied before scoring.
        session: only records of this session (conversation, thread, run); ``None``: every
            session's and those of none. The same as ``{"session": ...}`` in the filter.
        refresh_ttl: move the expiry of each returned record with a time to live to the read's
            now plus its ``ttl`` (a write, even on a read that does not touch).
    """

    agents: Sequence[str] | None = None
    k: int | None = None
    as_of: datetime | None = None
    touch: bool = True
    explain: bool = False
    kinds: Collection[Kind | str] | None = None
    include_history: bool = False
    valid_at: datetime | None = None
    preset: str | ScoringConfig | None = None
    crisis: str | None = None
    asker: str | None = None
    sequential: bool | None = None
    actor: str | None = None
    dedup: bool = True
    rank_by: RankBy = "score"
    filter: FilterSpec | None = None
    session: str | None = None
    refresh_ttl: bool = False

    def __post_init__(self) -> None:
        put = object.__setattr__
        if self.agents is not None:
            put(self, "agents", tuple(dict.fromkeys(string_tuple(self.agents, "agents"))))
        if self.k is not None:
            put(self, "k", positive_int(self.k, "k"))
        put(self, "as_of", optional_instant(self.as_of, "as_of"))
        put(self, "valid_at", optional_instant(self.valid_at, "valid_at"))
        for name in ("touch", "explain", "include_history", "dedup", "refresh_ttl"):
            flag(getattr(self, name), name)
        if self.sequential is not None:
            flag(self.sequential, "sequential")
        if self.kinds is not None:
            if isinstance(self.kinds, str | bytes) or not isinstance(self.kinds, Iterable):
                raise InvalidInputError("kinds must be a list of kinds", field="kinds")
            put(self, "kinds", frozenset(to_enum(Kind, x, "kinds") for x in self.kinds))
        if self.preset is not None:
            put(self, "preset", resolve_preset(self.preset))
        put(self, "crisis", optional_text(self.crisis, "crisis"))
        put(self, "asker", optional_text(self.asker, "asker"))
        put(self, "actor", optional_text(self.actor, "actor"))
        put(self, "session", optional_text(self.session, "session"))
        put(self, "filter", parse_filter(self.filter))
        if self.rank_by not in RANK_BY:
            raise InvalidInputError(
                f"rank_by must be one of {', '.join(RANK_BY)}; got {self.rank_by!r}",
                field="rank_by",
            )

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> ReadOptions:
        """The options of a read verb from its arguments (its ``locals()``): every parameter
        named like a field, ``agent`` / ``agents`` (one or the other), and ``options`` — an
        options value given whole, which the other read keywords must then leave at their
        defaults."""
        if arguments.get("agent") is not None and arguments.get("agents") is not None:
            raise InvalidInputError("pass agent= or agents=, not both", field="agents")
        named = {f.name: arguments[f.name] for f in fields(cls) if f.name in arguments}
        if arguments.get("agent") is not None:
            named["agents"] = (arguments["agent"],)
        given = cls(**named)
        whole = arguments.get("options")
        if whole is None:
            return given
        if given != cls():  # the verbs that take options= share these defaults
            raise InvalidInputError(
                "pass the read options either as options= or as keyword arguments, not both",
                field="options",
            )
        if not isinstance(whole, ReadOptions):
            raise InvalidInputError("options must be a ReadOptions", field="options")
        return whole

    @property
    def where(self) -> Filter | None:
        """The filter as given, parsed (construction parses a mapping)."""
        return self.filter  # type: ignore[return-value]

    @property
    def parsed_filter(self) -> Filter | None:
        """The records the read may see: the filter and the session."""
        where = self.where
        if self.session is None:
            return where
        session = Condition("session", "$eq", self.session)
        return session if where is None else AllOf((session, where))
