"""Each verb of the HTTP service, once, without I/O: a function with the engine's signature that
validates its arguments the way the engine does and returns a :class:`Call` — the request to
send and how to read the answer back into the engine's own types. ``Client`` and ``AsyncClient``
send the same calls, one blocking, one awaiting (``client/__init__.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import Enum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import TypeAdapter

from chronomem.checks import optional_instant, positive_int, record_items, require_text
from chronomem.clock import require_aware
from chronomem.config import PRESETS, ScoringConfig
from chronomem.context.block import ContextBlock
from chronomem.errors import ConfigError, InvalidInputError
from chronomem.model.audit import AuditEntry, ForgetResult
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.model.record import Hit, Kind, Record, Sensitivity, WriteResult
from chronomem.model.reflection import ReflectionResult
from chronomem.model.transfer import ImportReport
from chronomem.retrieval.options import ReadOptions

__all__ = ["Call", "ClockReading"]

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = Sequence[float] | npt.NDArray[np.floating[Any]]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClockReading:
    """A space's clock as the service reports it."""

    now: datetime
    simulated: bool


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request: ``path`` is relative to ``/v1/spaces/{space}`` (or absolute when it starts
    with ``/v1/``); ``read`` turns the answer's body into the verb's return value."""

    method: str
    path: str
    read: Callable[[bytes], T]
    body: Any = None
    params: Mapping[str, str] | None = None
    content: bytes | None = None


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _reader(kind: Any) -> Callable[[bytes], Any]:
    def read(content: bytes) -> Any:
        return _utc(_adapter(kind).validate_json(content))

    return read


def _utc(value: Any) -> Any:
    """``value`` with every instant in :data:`datetime.UTC` (pydantic gives its own tzinfo), so
    values read from the service equal the engine's in every respect, ``repr`` included."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if is_dataclass(value) and not isinstance(value, type):
        changed = {
            f.name: _utc(getattr(value, f.name))
            for f in fields(value)
            if isinstance(getattr(value, f.name), datetime | tuple | list)
            or is_dataclass(getattr(value, f.name))
        }
        return replace(value, **changed) if changed else value
    if isinstance(value, tuple):
        return tuple(_utc(v) for v in value)
    if isinstance(value, list):
        return [_utc(v) for v in value]
    return value


def _wire(value: Any) -> Any:
    """A JSON value for an argument: aware instants as ISO 8601, durations as ISO 8601, vectors
    as lists (numpy is not imported for it: a client does not need it), enums as their values."""
    if isinstance(value, datetime):
        return require_aware(value).isoformat()
    if isinstance(value, timedelta):
        return _adapter(timedelta).dump_python(value, mode="json")
    if isinstance(value, Enum):
        return value.value
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # numpy arrays and scalars
        return _wire(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): _wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_wire(v) for v in value]
    return value


def _body(**fields: Any) -> dict[str, Any]:
    """The fields that were given (``None`` means "the default")."""
    return {name: _wire(value) for name, value in fields.items() if value is not None}


def _segment(value: str, name: str) -> str:
    return quote(require_text(value, name), safe="")


def _preset_name(preset: str | ScoringConfig | None) -> str | None:
    if preset is None or isinstance(preset, str):
        return preset
    if PRESETS.get(preset.name) != preset:
        raise ConfigError(
            f"presets travel by name over HTTP; {preset.name!r} differs from the named preset "
            f"(configure the server with it instead)"
        )
    return preset.name


def _read_body(options: ReadOptions) -> dict[str, Any]:
    return _body(
        agents=options.agents, k=options.k, as_of=options.as_of, explain=options.explain,
        kinds=None if options.kinds is None else sorted(str(k) for k in options.kinds),
        include_history=options.include_history, valid_at=options.valid_at,
        preset=_preset_name(options.preset), crisis=options.crisis, asker=options.asker,
    )  # fmt: skip


# -- records ------------------------------------------------------------------------------------
def remember(
    text: str, *, agent: str = "default", kind: Kind | str = Kind.OBSERVATION,
    importance: float | None = None, occurred_at: datetime | None = None,
    valid_from: datetime | None = None, valid_until: datetime | None = None,
    domain: str | None = None, tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
    event_id: str | None = None, supersedes: Sequence[str] = (),
    sensitivity: Sensitivity | str = Sensitivity.NORMAL, embedding: Vector | None = None,
    actor: str | None = None,
) -> Call[WriteResult]:  # fmt: skip
    """:meth:`chronomem.Memory.remember`. ``actor`` is the key's: the service audits as the key."""
    body = _body(**{k: v for k, v in locals().items() if k != "actor"})
    return Call("POST", "/records", _reader(WriteResult), body)


def remember_many(
    items: Iterable[str | Mapping[str, Any]], *, agent: str | None = None,
    kind: Kind | str | None = None, progress: bool = False, actor: str | None = None,
) -> Call[list[WriteResult]]:  # fmt: skip
    """:meth:`chronomem.Memory.remember_many`."""
    batch = [_body(**item) for item in record_items(items)]
    body = {"items": batch, **_body(agent=agent, kind=kind)}
    return Call("POST", "/records/batch", _reader(list[WriteResult]), body)


def get(record_id: str) -> Call[Record]:
    """:meth:`chronomem.Memory.get`."""
    return Call("GET", f"/records/{_segment(record_id, 'record_id')}", _reader(Record))


def history(record_id: str) -> Call[list[Record]]:
    """:meth:`chronomem.Memory.history`."""
    path = f"/records/{_segment(record_id, 'record_id')}/history"
    return Call("GET", path, _reader(list[Record]))


def audit(record_id: str | None = None) -> Call[list[AuditEntry]]:
    """:meth:`chronomem.Memory.audit`."""
    path = "/audit" if record_id is None else f"/records/{_segment(record_id, 'record_id')}/audit"
    return Call("GET", path, _reader(list[AuditEntry]))


def supersede(
    old_ids: str | Sequence[str], text: str, *, reason: str | None = None,
    actor: str | None = None, agent: str | None = None, kind: Kind | str | None = None,
    importance: float | None = None, occurred_at: datetime | None = None,
    valid_from: datetime | None = None, valid_until: datetime | None = None,
    domain: str | None = None, tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
    event_id: str | None = None, sensitivity: Sensitivity | str | None = None,
    embedding: Vector | None = None,
) -> Call[WriteResult]:  # fmt: skip
    """:meth:`chronomem.Memory.supersede`. Several old records: the first is the path's, the
    others travel as ``supersedes`` of a ``remember``."""
    fields = {k: v for k, v in locals().items() if k not in {"old_ids", "actor"}}
    ids = [old_ids] if isinstance(old_ids, str) else list(old_ids)
    if not ids:
        raise InvalidInputError("supersede needs at least one old record id", field="old_ids")
    if len(ids) > 1:
        raise InvalidInputError(
            "over HTTP, supersede one record per call, or remember(..., supersedes=[...])",
            field="old_ids",
        )
    path = f"/records/{_segment(ids[0], 'old_ids')}/supersede"
    return Call("POST", path, _reader(WriteResult), _body(**fields))


def close_record(
    record_id: str, reason: str, *, valid_until: datetime | None = None, actor: str | None = None
) -> Call[Record]:
    """:meth:`chronomem.Memory.close_record`."""
    path = f"/records/{_segment(record_id, 'record_id')}/close"
    body = _body(reason=require_text(reason, "reason"), valid_until=valid_until)
    return Call("POST", path, _reader(Record), body)


def verify(record_id: str, *, actor: str | None = None, reason: str | None = None) -> Call[Record]:
    """:meth:`chronomem.Memory.verify`."""
    path = f"/records/{_segment(record_id, 'record_id')}/verify"
    return Call("POST", path, _reader(Record), _body(reason=reason))


def feedback(
    record_id: str, signal: str | float, reason: str | None = None, *, actor: str | None = None
) -> Call[Record]:
    """:meth:`chronomem.Memory.feedback`."""
    path = f"/records/{_segment(record_id, 'record_id')}/feedback"
    return Call("POST", path, _reader(Record), _body(signal=signal, reason=reason))


def forget(
    record_id: str, reason: str, *, purge: bool = False, actor: str | None = None
) -> Call[ForgetResult]:
    """:meth:`chronomem.Memory.forget` (a purge needs an admin key)."""
    path = f"/records/{_segment(record_id, 'record_id')}/forget"
    body = _body(reason=require_text(reason, "reason"), purge=purge)
    return Call("POST", path, _reader(ForgetResult), body)


# -- reads --------------------------------------------------------------------------------------
def recall(
    query: str, *, agent: str | None = None, agents: Sequence[str] | None = None,
    k: int = 10, as_of: datetime | None = None, touch: bool = True,
    query_embedding: Vector | None = None, explain: bool = False,
    kinds: Iterable[Kind | str] | None = None, include_history: bool = False,
    valid_at: datetime | None = None, preset: str | ScoringConfig | None = None,
    crisis: str | None = None, asker: str | None = None, options: ReadOptions | None = None,
) -> Call[list[Hit]]:  # fmt: skip
    """:meth:`chronomem.Memory.recall`."""
    chosen = ReadOptions.from_arguments(locals())
    body = {
        **_read_body(chosen), "touch": chosen.touch,
        **_body(query=query, query_embedding=query_embedding),
    }  # fmt: skip
    return Call("POST", "/recall", _reader(list[Hit]), body)


def peek(
    query: str, *, agent: str | None = None, agents: Sequence[str] | None = None,
    k: int = 10, as_of: datetime | None = None, query_embedding: Vector | None = None,
    explain: bool = False, kinds: Iterable[Kind | str] | None = None,
    include_history: bool = False, valid_at: datetime | None = None,
    preset: str | ScoringConfig | None = None, crisis: str | None = None,
    asker: str | None = None, options: ReadOptions | None = None,
) -> Call[list[Hit]]:  # fmt: skip
    """:meth:`chronomem.Memory.peek`: never touches."""
    chosen = ReadOptions.from_arguments(locals())
    body = {**_read_body(chosen), **_body(query=query, query_embedding=query_embedding)}
    return Call("POST", "/peek", _reader(list[Hit]), body)


def recall_many(
    queries: Sequence[str], *, agent: str | None = None,
    agents: Sequence[str] | None = None, k: int = 10, as_of: datetime | None = None,
    touch: bool = True, query_embeddings: Sequence[Vector | None] | None = None,
    explain: bool = False, kinds: Iterable[Kind | str] | None = None,
    include_history: bool = False, valid_at: datetime | None = None,
    preset: str | ScoringConfig | None = None, sequential: bool | None = None,
    crisis: str | None = None, asker: str | None = None, options: ReadOptions | None = None,
) -> Call[list[list[Hit]]]:  # fmt: skip
    """:meth:`chronomem.Memory.recall_many`."""
    if isinstance(queries, str):
        raise InvalidInputError("queries must be a list of strings, not one string")
    chosen = ReadOptions.from_arguments(locals())
    vectors = None if query_embeddings is None else [
        None if v is None else _wire(v) for v in query_embeddings
    ]  # fmt: skip
    body = {
        **_read_body(chosen), "touch": chosen.touch, "queries": list(queries),
        **_body(sequential=chosen.sequential, query_embeddings=vectors),
    }  # fmt: skip
    return Call("POST", "/recall-many", _reader(list[list[Hit]]), body)


def context(
    query: str | None = None, *, agent: str | None = None, agents: Sequence[str] | None = None,
    crisis: str | None = None, k: int = 12, budget_tokens: int | None = None,
    as_of: datetime | None = None, touch: bool = True,
    preset: str | ScoringConfig | None = None,
) -> Call[ContextBlock]:  # fmt: skip
    """:meth:`chronomem.Memory.context` (tokens are counted by the server's default counter)."""
    body = _body(
        query=query, agent=agent, agents=agents, crisis=crisis, k=k,
        budget_tokens=budget_tokens, as_of=as_of, touch=touch, preset=_preset_name(preset),
    )  # fmt: skip
    return Call("POST", "/context", _reader(ContextBlock), body)


def agents() -> Call[list[str]]:
    """:meth:`chronomem.Memory.agents`."""
    return Call("GET", "/agents", _reader(list[str]))


def stats() -> Call[dict[str, Any]]:
    """:meth:`chronomem.Memory.stats` (without the server's store location)."""
    return Call("GET", "/stats", _reader(dict[str, Any]))


def accumulated_importance(agent: str) -> Call[float]:
    """:meth:`chronomem.Memory.accumulated_importance`."""
    return Call("GET", f"/agents/{_segment(agent, 'agent')}/importance", _reader(float))


# -- causal graph -------------------------------------------------------------------------------
def add_event(
    text: str, *, occurred_at: datetime | None = None,
    kind: EventKind | str = EventKind.HAPPENING, scope: str | None = None,
    metadata: Mapping[str, Any] | None = None, embedding: Vector | None = None,
) -> Call[Event]:  # fmt: skip
    """:meth:`chronomem.Memory.add_event`."""
    return Call("POST", "/events", _reader(Event), _body(**locals()))


def get_event(event_id: str) -> Call[Event]:
    """:meth:`chronomem.Memory.get_event`."""
    return Call("GET", f"/events/{_segment(event_id, 'event_id')}", _reader(Event))


def link(
    cause: str, effect: str, weight: float = 1.0,
    provenance: Provenance | str = Provenance.EXPLICIT, *, similarity: float | None = None,
) -> Call[Link]:  # fmt: skip
    """:meth:`chronomem.Memory.link`."""
    return Call("POST", "/links", _reader(Link), _body(**locals()))


def unlink(cause: str, effect: str) -> Call[bool]:
    """:meth:`chronomem.Memory.unlink`."""
    path = f"/links/{_segment(cause, 'cause')}/{_segment(effect, 'effect')}"
    return Call("DELETE", path, _reader(bool))


def links() -> Call[list[Link]]:
    """:meth:`chronomem.Memory.links`."""
    return Call("GET", "/links", _reader(list[Link]))


def _reach(direction: str, event_id: str, max_depth: int, as_of: datetime | None) -> Call[Any]:
    """``GET /events/{id}/ancestors`` or ``…/descendants``."""
    params = {"max_depth": str(positive_int(max_depth, "max_depth"))}
    at = optional_instant(as_of, "as_of")
    if at is not None:
        params["as_of"] = at.isoformat()
    path = f"/events/{_segment(event_id, 'event_id')}/{direction}"
    return Call("GET", path, _reader(list[Ancestor]), params=params)


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
    path = f"/events/{_segment(event_id, 'event_id')}/auto-link"
    body = _body(window=window, threshold=threshold, weight_scale=weight_scale)
    return Call("POST", path, _reader(list[Link]), body)


# -- reflection ---------------------------------------------------------------------------------
def reflect(
    agent: str, *, as_of: datetime | None = None, touch: bool | None = None
) -> Call[ReflectionResult]:
    """:meth:`chronomem.Memory.reflect`, with the server's LLM."""
    body = _body(agent=require_text(agent, "agent"), as_of=as_of, touch=touch)
    return Call("POST", "/reflections", _reader(ReflectionResult), body)


def embed_passages(*, progress: bool = False, batch: int = 512) -> Call[int]:
    """:meth:`chronomem.Memory.embed_passages` (admin; the server embeds in its own batches)."""
    positive_int(batch, "batch")
    return Call("POST", "/embed-passages", _reader(int))


# -- moving data in and out (admin) ---------------------------------------------------------------
def export(path: str | os.PathLike[str]) -> Call[int]:
    """:meth:`chronomem.Memory.export`: the archive is written to ``path`` on this machine."""
    target = Path(path)

    def save(content: bytes) -> int:
        tmp = target.with_name(f".{target.name}.download")
        tmp.write_bytes(content)
        os.replace(tmp, target)
        return sum(
            1 for line in content.splitlines()[1:] if json.loads(line).get("type") == "record"
        )

    return Call("GET", "/export", save)


def import_(path: str | os.PathLike[str]) -> Call[ImportReport]:
    """:meth:`chronomem.Memory.import_`: the archive at ``path`` on this machine is uploaded."""
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(f"archive not found: {source}", field="path")
    return Call("POST", "/import", _reader(ImportReport), content=source.read_bytes())


# -- the space's clock --------------------------------------------------------------------------
def clock_reading() -> Call[ClockReading]:
    """The space's clock: its now and whether it is simulated."""
    return Call("GET", "/clock", _reader(ClockReading))


def set_clock(now: datetime | None) -> Call[ClockReading]:
    """Set the space's simulated now (``None``: follow the wall clock again); admin."""
    return Call(
        "PUT", "/clock", _reader(ClockReading), {"now": _wire(optional_instant(now, "now"))}
    )


def advance_clock(by: timedelta) -> Call[ClockReading]:
    """Move the space's simulated clock forward by ``by``; admin."""
    return Call("POST", "/clock/advance", _reader(ClockReading), {"by": _wire(by)})


def health() -> Call[dict[str, Any]]:
    """The service's health (no key needed)."""
    return Call("GET", "/v1/health", _reader(dict[str, Any]))
