"""Each verb of the HTTP service, once, without I/O: a function with the engine's signature that
validates its arguments the way the engine does and returns a :class:`Call` — the request to
send and how to read the answer back into the engine's own types. ``Client`` and ``AsyncClient``
send the same calls, one blocking, one awaiting (``client/__init__.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from chronomem.checks import optional_instant, positive_int, record_items, require_text, to_enum
from chronomem.client.wire import (
    Call,
    ClockReading,
    given,
    preset_name,
    read_body,
    reader,
    segment,
    wire,
)
from chronomem.config import ScoringConfig
from chronomem.context.block import ContextBlock
from chronomem.errors import InvalidInputError
from chronomem.extraction.policy import ExtractionPolicy
from chronomem.extraction.report import ExtractionReport
from chronomem.model.audit import AuditEntry, BulkResult, ForgetResult, ScrubResult
from chronomem.model.change import MAX_WAIT_S, Change
from chronomem.model.core import DEFAULT_CORE_LIMIT, CoreBlock
from chronomem.model.filter import FilterSpec
from chronomem.model.record import Dependant, Hit, Kind, Record, Sensitivity, Status, WriteResult
from chronomem.model.reflection import ReflectionResult
from chronomem.model.review import Access, Proposal
from chronomem.retrieval.options import RankBy, ReadOptions
from chronomem.writing.calibration import Calibration
from chronomem.writing.messages import message_fields

__all__ = ["Call", "ClockReading"]  # and one function per verb

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = Sequence[float] | npt.NDArray[np.floating[Any]]


# -- records ------------------------------------------------------------------------------------
def remember(
    text: str, *, agent: str = "default", kind: Kind | str = Kind.OBSERVATION,
    importance: float | None = None, occurred_at: datetime | None = None,
    valid_from: datetime | None = None, valid_until: datetime | None = None,
    domain: str | None = None, tags: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
    event_id: str | None = None, supersedes: Sequence[str] = (),
    sensitivity: Sensitivity | str = Sensitivity.NORMAL, speaker: str | None = None,
    session: str | None = None, ttl: float | timedelta | None = None,
    expires_at: datetime | None = None, source_id: str | None = None,
    embedding: Vector | None = None,
    passage_embeddings: Sequence[Vector] | None = None, replace: bool = False,
    actor: str | None = None,
) -> Call[WriteResult]:  # fmt: skip
    """:meth:`chronomem.Memory.remember`. ``actor`` is the key's: the service audits as the key."""
    body = given(**{k: v for k, v in locals().items() if k not in {"actor", "replace"}})
    if replace:
        body["replace"] = True
    return Call("POST", "/records", reader(WriteResult), body)


def remember_many(
    items: Iterable[str | Mapping[str, Any]], *, agent: str | None = None,
    kind: Kind | str | None = None, session: str | None = None, progress: bool = False,
    actor: str | None = None,
) -> Call[list[WriteResult]]:  # fmt: skip
    """:meth:`chronomem.Memory.remember_many`."""
    batch = [given(**item) for item in record_items(items)]
    body = {"items": batch, **given(agent=agent, kind=kind, session=session)}
    return Call("POST", "/records/batch", reader(list[WriteResult]), body)


def remember_messages(
    messages: Iterable[Any], *, agent: str = "default", session: str | None = None,
    progress: bool = False, actor: str | None = None,
) -> Call[list[WriteResult]]:  # fmt: skip
    """:meth:`chronomem.Memory.remember_messages` (LangChain message objects are sent as their
    fields)."""
    if isinstance(messages, str | bytes | Mapping):
        raise InvalidInputError("messages must be a list of messages", field="messages")
    body = {
        "messages": [wire(message_fields(m)) for m in messages],
        **given(agent=agent, session=session),
    }
    return Call("POST", "/messages", reader(list[WriteResult]), body)


def records(
    *, agent: str | None = None, agents: Sequence[str] | None = None,
    kinds: Iterable[Kind | str] | None = None, domain: str | None = None,
    include_history: bool = False, since: datetime | None = None,
    until: datetime | None = None, as_of: datetime | None = None, limit: int = 100,
    offset: int = 0, status: Status | str | None = None, filter: FilterSpec | None = None,
    session: str | None = None, refresh_ttl: bool = False,
) -> Call[list[Record]]:  # fmt: skip
    """:meth:`chronomem.Memory.records`."""
    options = ReadOptions.from_arguments(
        {
            "agent": agent,
            "agents": agents,
            "kinds": kinds,
            "as_of": as_of,
            "filter": filter,
            "session": session,
            "refresh_ttl": refresh_ttl,
        }
    )
    params: dict[str, Any] = {
        "agent": list(options.agents or ()), "kind": sorted(map(str, options.kinds or ())),
        "include_history": str(bool(include_history)).lower(),
        "limit": str(positive_int(limit, "limit")),
        "offset": str(positive_int(offset, "offset", minimum=0)),
    }  # fmt: skip
    for name, value in (("since", since), ("until", until), ("as_of", options.as_of)):
        at = optional_instant(value, name)
        if at is not None:
            params[name] = at.isoformat()
    if domain is not None:
        params["domain"] = require_text(domain, "domain")
    if status is not None:
        params["status"] = to_enum(Status, status, "status").value
    if options.where is not None:
        params["filter"] = json.dumps(options.where.to_spec())
    if options.session is not None:
        params["session"] = options.session
    if options.refresh_ttl:
        params["refresh_ttl"] = "true"
    return Call("GET", "/records", reader(list[Record]), params=params)


def get(record_id: str) -> Call[Record]:
    """:meth:`chronomem.Memory.get`."""
    return Call("GET", f"/records/{segment(record_id, 'record_id')}", reader(Record))


def get_many(record_ids: Sequence[str]) -> Call[list[Record]]:
    """:meth:`chronomem.Memory.get_many`."""
    if isinstance(record_ids, str):
        raise InvalidInputError("record_ids must be a list of ids", field="record_ids")
    return Call("POST", "/records/get-many", reader(list[Record]), {"record_ids": list(record_ids)})


def dependants(record_id: str) -> Call[list[Dependant]]:
    """:meth:`chronomem.Memory.dependants`."""
    path = f"/records/{segment(record_id, 'record_id')}/dependants"
    return Call("GET", path, reader(list[Dependant]))


def history(record_id: str) -> Call[list[Record]]:
    """:meth:`chronomem.Memory.history`."""
    path = f"/records/{segment(record_id, 'record_id')}/history"
    return Call("GET", path, reader(list[Record]))


def audit(record_id: str | None = None) -> Call[list[AuditEntry]]:
    """:meth:`chronomem.Memory.audit`."""
    path = "/audit" if record_id is None else f"/records/{segment(record_id, 'record_id')}/audit"
    return Call("GET", path, reader(list[AuditEntry]))


def changes(after: int = 0, *, limit: int = 100, wait: float = 0.0) -> Call[list[Change]]:
    """:meth:`chronomem.Memory.changes`; ``wait`` (seconds, at most 60) makes it a long poll:
    with no change after ``after`` yet, the answer comes when one commits, or empty."""
    after = positive_int(after, "after", minimum=0)
    if not 0 <= wait <= MAX_WAIT_S:
        raise InvalidInputError(f"wait must be 0–{MAX_WAIT_S:g} s; got {wait!r:.40}", field="wait")
    params = {"after": after, "limit": positive_int(limit, "limit"), "wait": wait}
    return Call("GET", "/changes", reader(list[Change]), params=params, waits=wait)


def supersede(
    old_ids: str | Sequence[str], text: str, *, reason: str | None = None,
    actor: str | None = None, agent: str | None = None, kind: Kind | str | None = None,
    importance: float | None = None, occurred_at: datetime | None = None,
    valid_from: datetime | None = None, valid_until: datetime | None = None,
    domain: str | None = None, tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
    event_id: str | None = None, sensitivity: Sensitivity | str | None = None,
    speaker: str | None = None, session: str | None = None,
    ttl: float | timedelta | None = None, expires_at: datetime | None = None,
    source_id: str | None = None, embedding: Vector | None = None,
    passage_embeddings: Sequence[Vector] | None = None,
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
    path = f"/records/{segment(ids[0], 'old_ids')}/supersede"
    return Call("POST", path, reader(WriteResult), given(**fields))


def close_record(
    record_id: str, reason: str, *, valid_until: datetime | None = None, actor: str | None = None
) -> Call[Record]:
    """:meth:`chronomem.Memory.close_record`."""
    path = f"/records/{segment(record_id, 'record_id')}/close"
    body = given(reason=require_text(reason, "reason"), valid_until=valid_until)
    return Call("POST", path, reader(Record), body)


def verify(record_id: str, *, actor: str | None = None, reason: str | None = None) -> Call[Record]:
    """:meth:`chronomem.Memory.verify`."""
    path = f"/records/{segment(record_id, 'record_id')}/verify"
    return Call("POST", path, reader(Record), given(reason=reason))


def expire() -> Call[list[str]]:
    """:meth:`chronomem.Memory.expire`."""
    return Call("POST", "/expire", reader(list[str]), {})


def feedback(
    record_id: str, signal: str | float, reason: str | None = None, *, actor: str | None = None
) -> Call[Record]:
    """:meth:`chronomem.Memory.feedback`."""
    path = f"/records/{segment(record_id, 'record_id')}/feedback"
    return Call("POST", path, reader(Record), given(signal=signal, reason=reason))


def forget(
    record_id: str, reason: str, *, purge: bool = False, actor: str | None = None
) -> Call[ForgetResult]:
    """:meth:`chronomem.Memory.forget` (a purge needs an admin key)."""
    path = f"/records/{segment(record_id, 'record_id')}/forget"
    body = given(reason=require_text(reason, "reason"), purge=purge)
    return Call("POST", path, reader(ForgetResult), body)


# -- changes by filter ---------------------------------------------------------------------------
def _selection(
    filter: FilterSpec, agent: str | None, agents: Sequence[str] | None
) -> dict[str, Any]:
    chosen = ReadOptions.from_arguments({"agent": agent, "agents": agents, "filter": filter})
    if chosen.parsed_filter is None:
        raise InvalidInputError("a change by filter needs a filter", field="filter")
    return {"filter": chosen.parsed_filter.to_spec(), **given(agents=chosen.agents)}


def close_where(
    filter: FilterSpec, reason: str, *, agent: str | None = None,
    agents: Sequence[str] | None = None, valid_until: datetime | None = None,
    dry_run: bool = False, actor: str | None = None,
) -> Call[BulkResult]:  # fmt: skip
    """:meth:`chronomem.Memory.close_where`."""
    body = {
        **_selection(filter, agent, agents), "reason": require_text(reason, "reason"),
        "dry_run": dry_run, **given(valid_until=optional_instant(valid_until, "valid_until")),
    }  # fmt: skip
    return Call("POST", "/records/close-where", reader(BulkResult), body)


def verify_where(
    filter: FilterSpec, *, agent: str | None = None, agents: Sequence[str] | None = None,
    reason: str | None = None, dry_run: bool = False, actor: str | None = None,
) -> Call[BulkResult]:  # fmt: skip
    """:meth:`chronomem.Memory.verify_where`."""
    body = {**_selection(filter, agent, agents), "dry_run": dry_run, **given(reason=reason)}
    return Call("POST", "/records/verify-where", reader(BulkResult), body)


def forget_where(
    filter: FilterSpec, reason: str, *, agent: str | None = None,
    agents: Sequence[str] | None = None, purge: bool = False, dry_run: bool = False,
    actor: str | None = None,
) -> Call[BulkResult]:  # fmt: skip
    """:meth:`chronomem.Memory.forget_where` (a purge needs an admin key)."""
    body = {
        **_selection(filter, agent, agents), "reason": require_text(reason, "reason"),
        "purge": purge, "dry_run": dry_run,
    }  # fmt: skip
    return Call("POST", "/records/forget-where", reader(BulkResult), body)


# -- reads --------------------------------------------------------------------------------------
def recall(
    query: str, *, agent: str | None = None, agents: Sequence[str] | None = None,
    k: int | None = None, as_of: datetime | None = None, touch: bool = True,
    query_embedding: Vector | None = None, explain: bool = False,
    kinds: Iterable[Kind | str] | None = None, include_history: bool = False,
    valid_at: datetime | None = None, preset: str | ScoringConfig | None = None,
    crisis: str | None = None, asker: str | None = None, dedup: bool = True,
    rank_by: RankBy = "score", filter: FilterSpec | None = None, session: str | None = None,
    refresh_ttl: bool = False, options: ReadOptions | None = None,
) -> Call[list[Hit]]:  # fmt: skip
    """:meth:`chronomem.Memory.recall`."""
    chosen = ReadOptions.from_arguments(locals())
    body = {**read_body(chosen, "recall"), **given(query=query, query_embedding=query_embedding)}
    return Call("POST", "/recall", reader(list[Hit]), body)


def peek(
    query: str, *, agent: str | None = None, agents: Sequence[str] | None = None,
    k: int | None = None, as_of: datetime | None = None, query_embedding: Vector | None = None,
    explain: bool = False, kinds: Iterable[Kind | str] | None = None,
    include_history: bool = False, valid_at: datetime | None = None,
    preset: str | ScoringConfig | None = None, crisis: str | None = None,
    asker: str | None = None, dedup: bool = True, rank_by: RankBy = "score",
    filter: FilterSpec | None = None, session: str | None = None, refresh_ttl: bool = False,
    options: ReadOptions | None = None,
) -> Call[list[Hit]]:  # fmt: skip
    """:meth:`chronomem.Memory.peek`: never touches."""
    chosen = ReadOptions.from_arguments(locals())
    body = {**read_body(chosen), **given(query=query, query_embedding=query_embedding)}
    return Call("POST", "/peek", reader(list[Hit]), body)


def recall_many(
    queries: Sequence[str], *, agent: str | None = None,
    agents: Sequence[str] | None = None, k: int | None = None, as_of: datetime | None = None,
    touch: bool = True, query_embeddings: Sequence[Vector | None] | None = None,
    explain: bool = False, kinds: Iterable[Kind | str] | None = None,
    include_history: bool = False, valid_at: datetime | None = None,
    preset: str | ScoringConfig | None = None, sequential: bool | None = None,
    crisis: str | None = None, asker: str | None = None, dedup: bool = True,
    rank_by: RankBy = "score", filter: FilterSpec | None = None, session: str | None = None,
    refresh_ttl: bool = False, options: ReadOptions | None = None,
) -> Call[list[list[Hit]]]:  # fmt: skip
    """:meth:`chronomem.Memory.recall_many`."""
    if isinstance(queries, str):
        raise InvalidInputError("queries must be a list of strings, not one string")
    chosen = ReadOptions.from_arguments(locals())
    vectors = None if query_embeddings is None else [
        None if v is None else wire(v) for v in query_embeddings
    ]  # fmt: skip
    body = {
        **read_body(chosen, "recall_many"), "queries": list(queries),
        **given(query_embeddings=vectors),
    }  # fmt: skip
    return Call("POST", "/recall-many", reader(list[list[Hit]]), body)


def context(
    query: str | None = None, *, agent: str | None = None, agents: Sequence[str] | None = None,
    crisis: str | None = None, k: int = 12, budget_tokens: int | None = None,
    as_of: datetime | None = None, touch: bool = True,
    preset: str | ScoringConfig | None = None, filter: FilterSpec | None = None,
    session: str | None = None, min_relevance: float | None = 0.5,
) -> Call[ContextBlock]:  # fmt: skip
    """:meth:`chronomem.Memory.context` (tokens are counted by the server's default counter)."""
    scope = ReadOptions.from_arguments({"filter": filter, "session": session})
    body = given(
        query=query, agent=agent, agents=agents, crisis=crisis, k=k,
        budget_tokens=budget_tokens, as_of=as_of, touch=touch, preset=preset_name(preset),
        filter=None if scope.where is None else scope.where.to_spec(), session=scope.session,
        min_relevance=min_relevance,
    )  # fmt: skip
    return Call("POST", "/context", reader(ContextBlock), body)


def agents() -> Call[list[str]]:
    """:meth:`chronomem.Memory.agents`."""
    return Call("GET", "/agents", reader(list[str]))


def stats() -> Call[dict[str, Any]]:
    """:meth:`chronomem.Memory.stats` (without the server's store location)."""
    return Call("GET", "/stats", reader(dict[str, Any]))


def accumulated_importance(agent: str) -> Call[float]:
    """:meth:`chronomem.Memory.accumulated_importance`."""
    return Call("GET", f"/agents/{segment(agent, 'agent')}/importance", reader(float))


# -- core memory blocks -------------------------------------------------------------------------
def core_blocks(agent: str, *, as_of: datetime | None = None) -> Call[list[CoreBlock]]:
    """:meth:`chronomem.Memory.core_blocks`."""
    at = optional_instant(as_of, "as_of")
    params = None if at is None else {"as_of": at.isoformat()}
    path = f"/agents/{segment(agent, 'agent')}/core"
    return Call("GET", path, reader(list[CoreBlock]), params=params)


def core_append(
    agent: str, label: str, text: str, *, actor: str | None = None,
    limit: int = DEFAULT_CORE_LIMIT,
) -> Call[CoreBlock]:  # fmt: skip
    """:meth:`chronomem.Memory.core_append` (the audit names the key)."""
    path = f"/agents/{segment(agent, 'agent')}/core/{segment(label, 'label')}/append"
    return Call("POST", path, reader(CoreBlock), given(text=text, limit=limit))


def core_replace(
    agent: str, label: str, old: str, new: str, *, actor: str | None = None,
    limit: int = DEFAULT_CORE_LIMIT,
) -> Call[CoreBlock]:  # fmt: skip
    """:meth:`chronomem.Memory.core_replace` (the audit names the key)."""
    path = f"/agents/{segment(agent, 'agent')}/core/{segment(label, 'label')}/replace"
    return Call("POST", path, reader(CoreBlock), {"old": old, "new": new, "limit": limit})


# -- reflection ---------------------------------------------------------------------------------
def reflect(
    agent: str, *, as_of: datetime | None = None, touch: bool | None = None
) -> Call[ReflectionResult]:
    """:meth:`chronomem.Memory.reflect`, with the server's LLM."""
    body = given(agent=require_text(agent, "agent"), as_of=as_of, touch=touch)
    return Call("POST", "/reflections", reader(ReflectionResult), body)


def extract(
    agent: str = "default", *, session: str | None = None, policy: ExtractionPolicy | None = None
) -> Call[ExtractionReport]:
    """:meth:`chronomem.Memory.extract`, with the server's LLM (the policy's mode and trusted
    speakers travel; its sizes are the server's)."""
    chosen = policy or ExtractionPolicy()
    body = {
        **given(agent=require_text(agent, "agent"), session=session), "mode": chosen.mode,
        "trusted_speakers": sorted(chosen.trusted_speakers),
    }  # fmt: skip
    return Call("POST", "/extractions", reader(ExtractionReport), body)


def maybe_reflect(agent: str, *, as_of: datetime | None = None) -> Call[ReflectionResult | None]:
    """:meth:`chronomem.Memory.maybe_reflect`, with the server's LLM: ``None`` when not due."""
    body = given(agent=require_text(agent, "agent"), as_of=as_of)
    return Call("POST", "/reflections/if-due", reader(ReflectionResult | None), body)


def embed_passages(*, progress: bool = False, batch: int = 512) -> Call[int]:
    """:meth:`chronomem.Memory.embed_passages` (admin; the server embeds in its own batches)."""
    positive_int(batch, "batch")
    return Call("POST", "/embed-passages", reader(int))


def embed_records(*, progress: bool = False, batch: int = 512) -> Call[int]:
    """:meth:`chronomem.Memory.embed_records` (admin; the server embeds in its own batches)."""
    positive_int(batch, "batch")
    return Call("POST", "/embed-records", reader(int))


def calibrate(*, progress: bool = False) -> Call[Calibration]:
    """:meth:`chronomem.Memory.calibrate` (admin; the server measures its own embedder)."""
    return Call("POST", "/calibrate", reader(Calibration))


def scrub() -> Call[ScrubResult]:
    """:meth:`chronomem.Memory.scrub` (admin; rewrites the whole store's files, every space's)."""
    return Call("POST", "/scrub", reader(ScrubResult))


# -- review and the access log ------------------------------------------------------------------
def review(
    agent: str | None = None, *, as_of: datetime | None = None, config: None = None
) -> Call[list[Proposal]]:
    """:meth:`chronomem.Memory.review` (the server's review settings)."""
    params: dict[str, Any] = {}
    if agent is not None:
        params["agent"] = require_text(agent, "agent")
    at = optional_instant(as_of, "as_of")
    if at is not None:
        params["as_of"] = at.isoformat()
    return Call("GET", "/review", reader(list[Proposal]), params=params)


def proposals(status: str | None = None) -> Call[list[Proposal]]:
    """:meth:`chronomem.Memory.proposals`."""
    params = None if status is None else {"status": require_text(status, "status")}
    return Call("GET", "/review/proposals", reader(list[Proposal]), params=params)


def approve(proposal_id: str, *, actor: str | None = None) -> Call[Proposal]:
    """:meth:`chronomem.Memory.approve` (the audit names the key)."""
    return Call("POST", f"/review/{segment(proposal_id, 'proposal_id')}/approve", reader(Proposal))


def reject(proposal_id: str, reason: str, *, actor: str | None = None) -> Call[Proposal]:
    """:meth:`chronomem.Memory.reject`."""
    path = f"/review/{segment(proposal_id, 'proposal_id')}/reject"
    return Call("POST", path, reader(Proposal), {"reason": require_text(reason, "reason")})


def set_access_log(on: bool) -> Call[bool]:
    """:meth:`chronomem.Memory.set_access_log` (admin)."""
    return Call("PUT", "/access-log", reader(bool), {"on": on})


def accesses(record_id: str | None = None, *, limit: int = 100) -> Call[list[Access]]:
    """:meth:`chronomem.Memory.accesses`."""
    params: dict[str, Any] = {"limit": str(positive_int(limit, "limit"))}
    if record_id is not None:
        params["record_id"] = require_text(record_id, "record_id")
    return Call("GET", "/accesses", reader(list[Access]), params=params)
