"""Each verb's parameters, defined once (docs/design/verbs-and-filters.md): name, the value's
type at the wire, default, documentation, bounds and CLI spelling.

The interfaces read this table instead of restating it: the HTTP service builds its request
models (and so its OpenAPI schema) from it (``server/wire.py``), the Python clients serialise by
it (``client/wire.py``), the CLI adds its flags from it (``cli/arguments.py``), the MCP tools take
its descriptions. ``Memory`` keeps explicit, typed signatures for readers and type checkers;
``tests/test_interfaces.py`` fails when any of the five drifts from this table. Values, not code
generation: nothing here runs at import time but building the table.

A parameter's ``value`` is its JSON shape (``str``, ``int``, ``float``, ``bool``, ``datetime`` —
an instant with an offset —, ``list[str]``, ``dict[str, Any]``), optional when it may be
``None``; the engine's own checks (``checks.py``, ``ReadOptions``) still validate every value,
so each interface accepts exactly what the library accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from chronomem.config import PRESETS
from chronomem.model.core import DEFAULT_CORE_LIMIT
from chronomem.model.event import EventKind, Provenance
from chronomem.model.record import Kind, Sensitivity, Status

__all__ = [
    "LABEL_CHARS",
    "MAX_K",
    "OWN",
    "PARAMS",
    "RANK_BY",
    "RECORD",
    "VERBS",
    "Param",
    "RankBy",
    "params",
    "record_params",
]

RankBy = Literal["score", "similarity"]
RANK_BY: tuple[str, ...] = get_args(RankBy)
#: The most hits one read returns over HTTP (a library read has no such bound).
MAX_K = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One parameter of one or more verbs.

    Attributes:
        name: the keyword, the same in every interface (a CLI flag spells it its own way).
        value: its JSON shape at the wire (``X | None`` when it may be absent).
        default: the default every interface states.
        doc: what it does, in one sentence (help text, OpenAPI description).
        bounds: JSON-schema bounds at the wire (pydantic ``Field`` keywords: ``ge``, ``le``).
        choices: the allowed strings (an enumeration's values).
        wire_choices: the HTTP schema lists the choices (``False``: any string reaches the
            engine, which refuses others as the library does — presets, a ``ConfigError``).
        flag: the CLI's spelling (``"--as-of"``, ``"-k"``); ``None``: not a CLI flag.
        repeat: the flag is given once per item (``--agent a --agent b``).
        negated: a flag that turns a default-true option off (``--no-touch`` for ``touch``).
        required: every interface needs it (a close's reason); it has no default.
    """

    name: str
    value: Any
    default: Any = None
    doc: str
    bounds: Mapping[str, Any] = field(default_factory=dict)
    choices: tuple[str, ...] | None = None
    wire_choices: bool = True
    flag: str | None = None
    repeat: bool = False
    negated: bool = False
    required: bool = False

    @property
    def dest(self) -> str:
        """The attribute argparse stores the flag's value under."""
        assert self.flag is not None
        return self.flag.lstrip("-").replace("-", "_")


_INSTANT = "ISO 8601 with a timezone offset"
_KINDS = tuple(k.value for k in Kind)

#: Every parameter of the verbs below, by name.
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param(name="agent", value=str | None, doc="whose memories: one agent"),
        Param(
            name="agents", value=list[str] | None, flag="--agent", repeat=True,
            doc="whose memories (default: every agent of the space)",
        ),
        Param(
            name="k", value=int | None, bounds={"ge": 1, "le": MAX_K}, flag="-k",
            doc=f"how many hits (default: the preset's, 10; at most {MAX_K:,} over HTTP)",
        ),
        Param(
            name="as_of", value=datetime | None, flag="--as-of",
            doc=f"evaluate at this instant (default: now; {_INSTANT})",
        ),
        Param(
            name="touch", value=bool, default=True, flag="--no-touch", negated=True,
            doc="stamp the returned records as accessed at as_of (false: read-only)",
        ),
        Param(
            name="explain", value=bool, default=False, flag="--explain",
            doc="attach each hit's score breakdown",
        ),
        Param(
            name="kinds", value=list[str] | None, choices=_KINDS, flag="--kind", repeat=True,
            doc="only records of these kinds",
        ),
        Param(
            name="include_history", value=bool, default=False, flag="--include-history",
            doc="closed and superseded records too",
        ),
        Param(
            name="valid_at", value=datetime | None, flag="--valid-at",
            doc=f"the world-time instant for validity windows (default: as_of; {_INSTANT})",
        ),
        Param(
            name="preset", value=str | None, choices=tuple(sorted(PRESETS)), wire_choices=False,
            flag="--preset",
            doc="the scoring preset of this read (default: the handle's)",
        ),
        Param(
            name="crisis", value=str | None, flag="--crisis",
            doc="an event id: a causal (TCMF) read lifting records tied to its causes",
        ),
        Param(
            name="asker", value=str | None, flag="--asker",
            doc="who asks (a transcript speaker): first-person queries favour their lines",
        ),
        Param(
            name="dedup", value=bool, default=True, flag="--no-dedup", negated=True,
            doc="a multi-agent read collapses records of equal text into one hit listing "
            "every holder (false: each record its own hit)",
        ),
        Param(
            name="rank_by", value=str, default="score", choices=RANK_BY, flag="--rank-by",
            doc="order hits by chronomem's score, or by their raw cosine to the query (as "
            "vector stores do; records without a vector last)",
        ),
        Param(
            name="filter", value=dict[str, Any] | None, flag="--filter",
            doc="only records this filter selects, e.g. {\"tags\": \"billing\"} or "
            "{\"metadata.user\": {\"$in\": [\"ana\", \"ben\"]}} (docs/filters.md)",
        ),
        Param(
            name="session", value=str | None, flag="--session",
            doc="only records of this session (conversation, thread, run); default: every "
            "session's",
        ),
        Param(
            name="refresh_ttl", value=bool, default=False, flag="--refresh-ttl",
            doc="extend the time to live of each record returned to now plus its ttl",
        ),
        Param(
            name="sequential", value=bool | None,
            doc="recall-many touches after each query (default: the preset's choice)",
        ),
        # -- listings and bulk changes
        Param(name="domain", value=str | None, flag="--domain", doc="only records of this domain"),
        Param(
            name="since", value=datetime | None, flag="--since",
            doc=f"recorded at or after this instant ({_INSTANT})",
        ),
        Param(
            name="until", value=datetime | None, flag="--until",
            doc=f"recorded before this instant ({_INSTANT})",
        ),
        Param(
            name="limit", value=int, default=100, bounds={"ge": 1}, flag="--limit",
            doc="a page of this many",
        ),
        Param(
            name="offset", value=int, default=0, bounds={"ge": 0}, flag="--offset",
            doc="skip this many (paging)",
        ),
        Param(
            name="status", value=str | None, choices=tuple(s.value for s in Status),
            flag="--state", doc="only records in this state at as_of: open, closed or superseded",
        ),
        Param(
            name="dry_run", value=bool, default=False, flag="--dry-run",
            doc="list what would change and change nothing",
        ),
        Param(
            name="purge", value=bool, default=False, flag="--purge",
            doc="scrub the bytes from the files too (needs an admin key over HTTP)",
        ),
    )
}  # fmt: skip

_READ = (
    "agent", "agents", "k", "as_of", "explain", "kinds", "include_history", "valid_at",
    "preset", "crisis", "asker", "dedup", "rank_by", "filter", "session", "refresh_ttl",
)  # fmt: skip

#: Each verb's parameters from the table, in order (a verb's own positional arguments, such as
#: ``recall``'s query, and its vectors are the verb's, not the table's).
VERBS: dict[str, tuple[str, ...]] = {
    "peek": _READ,
    "recall": (*_READ, "touch"),
    "recall_many": (*_READ, "touch", "sequential"),
    "records": (
        "agent", "agents", "kinds", "domain", "include_history", "since", "until", "as_of",
        "limit", "offset", "status", "filter", "session", "refresh_ttl",
    ),
    "context": ("filter", "session"),
    "close_where": ("filter", "agent", "agents", "dry_run"),
    "verify_where": ("filter", "agent", "agents", "dry_run"),
    "forget_where": ("filter", "agent", "agents", "purge", "dry_run"),
    "forget": ("purge",),
    **dict.fromkeys(("close_record", "verify", "feedback", "add_event", "link", "auto_link",
                     "core_append", "core_replace"), ()),
}  # fmt: skip


_WHY = "why (kept in the audit log; optional)"
_LIMIT = Param(
    name="limit",
    value=int,
    default=DEFAULT_CORE_LIMIT,
    bounds={"ge": 1},
    flag="--limit",
    doc=f"the block's size limit in characters (default {DEFAULT_CORE_LIMIT:,})",
)

#: The parameters of one verb alone (besides its subject: the record or event a route's path
#: names), the shared ones being in :data:`PARAMS`.
OWN: dict[str, tuple[Param, ...]] = {
    "close_record": (
        Param(
            name="reason", value=str, required=True, flag="--reason",
            doc="why it stopped applying (kept on the record and in the audit log)",
        ),
        Param(
            name="valid_until", value=datetime | None, flag="--valid-until",
            doc="when it stopped applying (default now)",
        ),
    ),
    "verify": (Param(name="reason", value=str | None, flag="--reason", doc=_WHY),),
    "feedback": (
        Param(
            name="signal", value=Literal["helpful", "harmful"] | float, required=True,
            doc="helpful, harmful, or a number in [-1, 1]",
        ),
        Param(name="reason", value=str | None, flag="--reason", doc=_WHY),
    ),
    "forget": (
        Param(
            name="reason", value=str, required=True, flag="--reason",
            doc="why (kept in the audit log; the content is not)",
        ),
    ),
    "add_event": (
        Param(name="text", value=str, required=True, doc="what happened"),
        Param(
            name="occurred_at", value=datetime | None, flag="--occurred-at",
            doc="world time (default: now)",
        ),
        Param(
            name="kind", value=str, default=EventKind.HAPPENING.value, flag="--kind",
            choices=tuple(k.value for k in EventKind), doc="what kind of event",
        ),
        Param(
            name="scope", value=str | None, flag="--scope",
            doc="institution, district... (for the scope fallback)",
        ),
        Param(
            name="metadata", value=dict[str, Any] | None, flag="--metadata",
            doc="a JSON object kept with the event",
        ),
        Param(
            name="embedding", value=list[float] | None, doc="its vector, instead of the embedder's"
        ),
    ),
    "link": (
        Param(
            name="weight", value=float, default=1.0, bounds={"gt": 0, "le": 1}, flag="--weight",
            doc="how strong the evidence is that the cause led to the effect, in (0, 1]",
        ),
        Param(
            name="provenance", value=str, default=Provenance.EXPLICIT.value, flag="--provenance",
            choices=tuple(v.value for v in Provenance),
            doc="explicit (asserted) or inferred (a guess an explicit link replaces)",
        ),
        Param(
            name="similarity", value=float | None, flag="--similarity",
            doc="an inferred link's similarity, if any",
        ),
    ),
    "context": (
        Param(
            name="min_relevance", value=float | None, default=0.5, bounds={"ge": 0, "le": 1},
            flag="--min-relevance",
            doc="leave out memories less relevant than this fraction of the best one, unless a "
            "cause of the crisis lifted them (0: keep all k)",
        ),
    ),
    "auto_link": (
        Param(
            name="window", value=timedelta, default=timedelta(days=30), flag="--window",
            doc="link the events this long before it (default 30 days)",
        ),
        Param(
            name="threshold", value=float | None, flag="--threshold",
            doc="the least cosine (default: the preset's association threshold)",
        ),
        Param(
            name="weight_scale", value=float, default=0.5, flag="--weight-scale",
            doc="a link's weight is this times the similarity",
        ),
    ),
    "core_append": (
        Param(name="text", value=str, required=True, doc="the text to append"), _LIMIT,
    ),
    "core_replace": (
        Param(name="old", value=str, required=True, doc="the exact text to replace"),
        Param(name="new", value=str, required=True, doc="what replaces it"),
        _LIMIT,
    ),
}  # fmt: skip

#: The longest speaker or session label (``writing/drafts.py`` refuses longer ones).
LABEL_CHARS = 100

#: The fields of a new record: ``remember``'s keywords, each item of ``remember_many`` and the
#: replacement of ``supersede`` (which takes what it leaves unset from the old record, so no
#: default is stated here: an unset field is the engine's to fill). ``text`` is each verb's own
#: subject (the CLI's positional); ``agent``, ``kind`` and ``sensitivity`` have per-command CLI
#: defaults (``remember``: the library's; ``supersede``: the old record's), and ``embedding`` /
#: ``passage_embeddings`` are not typed at a shell.
RECORD: dict[str, Param] = {
    p.name: p
    for p in (
        Param(name="text", value=str, doc="what to remember"),
        Param(name="agent", value=str | None, doc="whose memory (default: 'default')"),
        Param(
            name="kind", value=str | None, choices=_KINDS, doc="what it is (default: observation)"
        ),
        Param(
            name="importance", value=float | None, bounds={"ge": 1, "le": 10}, flag="--importance",
            doc="1 (mundane) .. 10 (life-changing); default: the importance scorer's",
        ),
        Param(
            name="occurred_at", value=datetime | None, flag="--occurred-at",
            doc=f"world time: when it happened, {_INSTANT} (default: now)",
        ),
        Param(
            name="valid_from", value=datetime | None, flag="--valid-from",
            doc="a fact's or instruction's window opens (world time)",
        ),
        Param(
            name="valid_until", value=datetime | None, flag="--valid-until",
            doc="... and closes (default: open)",
        ),
        Param(
            name="domain", value=str | None, flag="--domain",
            doc="its topic: the write gate compares records of one domain",
        ),
        Param(
            name="tags", value=list[str] | None, flag="--tag", repeat=True,
            doc="a tag (repeatable)",
        ),
        Param(
            name="metadata", value=dict[str, Any] | None, flag="--metadata",
            doc="a JSON object kept with the record",
        ),
        Param(
            name="evidence", value=list[str] | None, flag="--evidence", repeat=True,
            doc="a cited record id (repeatable)",
        ),
        Param(
            name="event_id", value=str | None, flag="--event",
            doc="the causal event this memory witnesses (event id)",
        ),
        Param(
            name="sensitivity", value=str | None, choices=tuple(s.value for s in Sensitivity),
            doc="personal and secret records are purged when forgotten",
        ),
        Param(
            name="speaker", value=str | None, bounds={"max_length": LABEL_CHARS},
            flag="--speaker", doc="who said it: a name, or a role such as 'user'",
        ),
        Param(
            name="session", value=str | None, bounds={"max_length": LABEL_CHARS},
            flag="--session", doc="the conversation, thread or run it belongs to",
        ),
        Param(
            name="ttl", value=timedelta | None, bounds={"gt": timedelta(0)}, flag="--ttl",
            doc="time to live: closed (audited, kept in history) when it runs out; seconds, "
            "an ISO 8601 duration (PT2H) or, at the CLI, 30m, 2h, 7d",
        ),
        Param(
            name="expires_at", value=datetime | None, flag="--expires-at",
            doc=f"... or the instant it closes, {_INSTANT} (not with ttl)",
        ),
        Param(
            name="source_id", value=str | None, bounds={"max_length": 200}, flag="--source-id",
            doc="the id of what it was made from (a message): the agent keeps one record of "
            "each, so a retried write is not stored twice",
        ),
        Param(
            name="embedding", value=list[float] | None, doc="its vector, instead of the embedder's"
        ),
        Param(
            name="passage_embeddings", value=list[list[float]] | None,
            doc="more vectors the record matches by (one per passage), with its embedding",
        ),
        Param(
            name="supersedes", value=list[str] | None, flag="--supersedes", repeat=True,
            doc="an id this record replaces (repeatable)",
        ),
        Param(
            name="replace", value=bool, default=False, flag="--replace",
            doc="with a domain: become the agent's one open record of exactly that domain (the "
            "open ones are superseded in the same transaction: a keyed write)",
        ),
    )
}  # fmt: skip


def record_params(*, without: tuple[str, ...] = ()) -> tuple[Param, ...]:
    """The fields of a new record (:data:`RECORD`), those named in ``without`` left out."""
    return tuple(p for name, p in RECORD.items() if name not in without)


def params(verb: str, *, without: tuple[str, ...] = ()) -> tuple[Param, ...]:
    """The table's parameters of ``verb``: the shared ones it names, then its own (those named
    in ``without`` left out)."""
    shared = tuple(PARAMS[name] for name in VERBS[verb] if name not in without)
    return shared + tuple(p for p in OWN.get(verb, ()) if p.name not in without)
