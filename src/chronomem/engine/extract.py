"""Extraction (issue 29; docs/design/conversations.md, part 2): an LLM proposes memories from the
new turns of a conversation — each citing the turns it comes from — and every proposal goes
through the lifecycle: validated (``extraction/validate.py``), routed by the policy
(``extraction/policy.py``), then stored through the normal write path (the write gate,
supersession, the audit log with the extractor as actor and the turns as evidence), queued for
review, or reported. Nothing is stored silently and nothing invalid is stored at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from chronomem.clock import from_micros, to_micros
from chronomem.engine import browse, lifecycle, read, write
from chronomem.engine.handle import Handle
from chronomem.engine.review import add_events, propose
from chronomem.errors import ConfigError, ExtractionError
from chronomem.extraction.policy import (
    ASSISTANT_ONLY,
    ExtractionPolicy,
    Route,
    assistant_only,
    role_of,
    route,
)
from chronomem.extraction.prompts import EXTRACTION_SCHEMA, extraction_prompt
from chronomem.extraction.report import Applied, ExtractionReport
from chronomem.extraction.validate import Answer, Extracted, Rejected, validate_extraction
from chronomem.llm.answers import ask
from chronomem.llm.base import LLMClient
from chronomem.model.filter import Condition
from chronomem.model.record import Kind, Record
from chronomem.model.review import ReviewAction
from chronomem.retrieval.options import ReadOptions

__all__ = ["extract"]

#: The kinds of open memory a proposal is matched against.
_MEMORY_KINDS = ("fact", "instruction", "plan", "decision", "observation")
_PAGE = 1000


def extract(
    h: Handle,
    agent: str,
    *,
    session: str | None,
    llm: LLMClient | None,
    policy: ExtractionPolicy | None,
    now: datetime,
) -> ExtractionReport:
    """See :meth:`Memory.extract`."""
    client = llm or h.llm
    if client is None:
        raise ConfigError("extract needs an LLM: pass llm=, or Memory.open(..., llm=...)")
    if not isinstance(client, LLMClient):
        raise ConfigError(f"llm must be an LLMClient (with complete()); got {client!r}")
    policy = policy or ExtractionPolicy()
    if not isinstance(policy, ExtractionPolicy):
        raise ConfigError(f"policy must be an ExtractionPolicy; got {policy!r}")
    marker = f"extracted:{agent}:{session or ''}"
    turns = _new_turns(h, agent, session, h.store.space_setting(h.space, marker), now)
    actor = f"extractor:{client.model}"
    applied: list[Applied] = []
    queued: list[str] = []
    rejected: list[Rejected] = []
    events: list[str] = []
    links: list[tuple[str, str]] = []
    calls = [0]
    for start in range(0, len(turns), policy.turns_per_call):
        batch = turns[start : start + policy.turns_per_call]
        shown = _open_memories(h, agent, batch, policy, now)
        prompt = extraction_prompt(
            agent, [(t.speaker or "user", role_of(t), t.text) for t in batch],
            [(m.kind.value, m.text) for m in shown], policy.memories_per_call,
        )  # fmt: skip

        def check(answer: Any, n: int = len(batch), m: int = len(shown)) -> Any:
            return validate_extraction(answer, turns=n, memories=m, limit=policy.memories_per_call)

        answer = ask(
            client, prompt, EXTRACTION_SCHEMA, check, policy.attempts, calls,
            what="extraction", error=ExtractionError,
        )  # fmt: skip
        rejected += answer.rejected
        found = _causal(h, answer, batch, policy, now, client.model)
        events += found.events
        links += found.links
        queued += found.queued
        rejected += found.rejected
        for e in answer.memories:
            cited = [batch[i] for i in e.turns]
            target = None if e.memory is None else shown[e.memory]
            way = route(e, cited, target, policy)
            if way.action == "reject":
                rejected.append(Rejected(_as_given(e), (way.reason or "",)))
            elif way.action == "review":
                queued.append(_queue(h, e, cited, target, way, agent, session, now, client.model))
            else:
                applied.append(_apply(h, e, cited, target, way, agent, session, now, actor))
        last = batch[-1]
        h.store.set_space_setting(h.space, marker, f"{to_micros(last.recorded_at)}:{last.id}")
    return ExtractionReport(
        agent=agent, session=session, turns=len(turns), applied=tuple(applied),
        queued=tuple(queued), rejected=tuple(rejected), calls=calls[0], events=tuple(events),
        links=tuple(links),
    )  # fmt: skip


def _new_turns(
    h: Handle, agent: str, session: str | None, after: str | None, now: datetime
) -> list[Record]:
    """The agent's chat turns (of ``session``, if given) recorded after the last extraction's
    last turn, oldest first."""
    where = None if session is None else Condition("session", "$eq", session)
    since = None
    done: tuple[int, str] | None = None
    if after:
        at, _, last = after.partition(":")
        done = (int(at), last)
        since = from_micros(int(at))
    found: list[Record] = []
    offset = 0
    while True:
        page = browse.records(
            h, agents=(agent,), domain=None, kinds=frozenset({Kind.CHAT}),
            include_history=False, since=since, until=None, as_of=now, limit=_PAGE,
            offset=offset, status=None, where=where,
        )  # fmt: skip
        found += page
        if len(page) < _PAGE:
            break
        offset += _PAGE
    found.sort(key=lambda r: (r.recorded_at, r.id))
    if done is not None:
        found = [r for r in found if (to_micros(r.recorded_at), r.id) > done]
    return found


def _open_memories(
    h: Handle, agent: str, batch: Sequence[Record], policy: ExtractionPolicy, now: datetime
) -> list[Record]:
    """The agent's open memories closest to what the batch says (those a proposal may replace
    or close, or repeat): one read of the batch's text, read-only."""
    text = "\n".join(t.text for t in batch)[-4000:]
    options = ReadOptions(
        agents=(agent,), k=policy.memories_shown, kinds=_MEMORY_KINDS, touch=False, as_of=now
    )
    hits = read.recall_many(h, [text], None, options, now=now)[0]
    return [hit.record for hit in hits]


def _fields(
    e: Extracted, cited: Sequence[Record], way: Route, agent: str, session: str | None, model: str
) -> dict[str, Any]:
    """The record a proposal writes: its statement, citing its turns, when they were said."""
    return {
        "text": e.text, "agent": agent, "kind": e.kind, "session": session,
        "evidence": [t.id for t in cited], "sensitivity": way.sensitivity,
        "occurred_at": max(t.occurred_at for t in cited),
        "tags": ["preference"] if e.label == "preference" else [],
        "metadata": {"extracted_by": model, "from_turns": [t.id for t in cited]},
    }  # fmt: skip


def _apply(
    h: Handle, e: Extracted, cited: Sequence[Record], target: Record | None, way: Route,
    agent: str, session: str | None, now: datetime, actor: str,
) -> Applied:  # fmt: skip
    turns = tuple(t.id for t in cited)
    reason = f"extracted from turns {', '.join(turns)}"
    if e.op == "CLOSE":
        assert target is not None
        lifecycle.close_record(h, target.id, now=now, reason=reason, valid_until=None, actor=actor)
        return Applied(op="CLOSE", record_id=target.id, replaced=None, turns=turns, stored=True)
    fields = _fields(e, cited, way, agent, session, actor.removeprefix("extractor:"))
    if e.op == "SUPERSEDE":
        assert target is not None
        done = lifecycle.supersede(h, [target.id], fields, now=now, reason=reason, actor=actor)
        replaced: str | None = target.id
    else:
        done = write.write(h, [fields], now=now, actor=actor, reason=reason)[0]
        replaced = None
    return Applied(
        op=e.op, record_id=done.id if done.stored else done.duplicate_of, replaced=replaced,
        turns=turns, stored=done.stored, reason=done.reason,
    )  # fmt: skip


def _queue(
    h: Handle, e: Extracted, cited: Sequence[Record], target: Record | None, way: Route,
    agent: str, session: str | None, now: datetime, model: str,
) -> str:  # fmt: skip
    """A review proposal of ``e`` (its change kept in full): a person approves or rejects it."""
    change = {} if e.op == "CLOSE" else _fields(e, cited, way, agent, session, model)
    records = ([] if target is None else [target]) + list(cited)
    action = {"ADD": ReviewAction.ADD, "SUPERSEDE": ReviewAction.SUPERSEDE}.get(
        e.op, ReviewAction.CLOSE
    )
    said = f"{e.op.lower()} {e.text!r}" if e.text else f"close {target.text!r}" if target else e.op
    return propose(
        h, action=action, category="extracted", agent=agent, records=records,
        reasons=(f"extracted: {said}", way.reason or ""), change=change, now=now,
    )  # fmt: skip


#: An inferred link's weight is the model's confidence, at most this: below an explicit link's.
MAX_INFERRED_WEIGHT = 0.5


@dataclass(frozen=True, slots=True)
class _Causal:
    events: list[str]
    links: list[tuple[str, str]]
    queued: list[str]
    rejected: list[Rejected]


def _causal(
    h: Handle, answer: Answer, batch: Sequence[Record], policy: ExtractionPolicy, now: datetime,
    model: str,
) -> _Causal:  # fmt: skip
    """The answer's events and causes: an event resting on the assistant's turns alone is
    refused; the rest are added (or, under ``mode="review"``, queued as one proposal) and the
    causes between them linked with provenance ``inferred-llm`` and the model's confidence as
    weight (at most :data:`MAX_INFERRED_WEIGHT`); a link the graph's rules refuse (a cause
    after its effect) is reported with the reason."""
    out = _Causal([], [], [], [])
    kept: dict[int, dict[str, Any]] = {}
    for i, ev in enumerate(answer.events):
        cited = [batch[t] for t in ev.turns]
        if assistant_only(cited):
            out.rejected.append(Rejected({"event": ev.text}, (ASSISTANT_ONLY,)))
            continue
        kept[i] = {
            "text": ev.text, "occurred_at": max(t.occurred_at for t in cited).isoformat(),
            "metadata": {"extracted_by": model, "from_turns": [t.id for t in cited]},
        }  # fmt: skip
    causes: list[dict[str, Any]] = []
    for c in answer.causes:
        if c.cause in kept and c.effect in kept:
            weight = min(c.confidence, MAX_INFERRED_WEIGHT)
            causes.append({"cause": c.cause, "effect": c.effect, "weight": weight})
        else:
            out.rejected.append(Rejected(asdict(c), ("one of its events was refused",)))
    if not kept:
        return out
    order = sorted(kept)
    change = {
        "events": [kept[i] for i in order],
        "links": [
            {**c, "cause": order.index(int(c["cause"])), "effect": order.index(int(c["effect"]))}
            for c in causes
        ],
    }
    if policy.mode == "review":
        turns = sorted({t for i in order for t in kept[i]["metadata"]["from_turns"]})
        records = [t for t in batch if t.id in turns]
        said = f"extracted: {len(order)} event(s), {len(causes)} cause(s)"
        why = (said, "the policy reviews every extraction")
        queued = propose(
            h, action=ReviewAction.EVENTS, category="extracted", agent=records[0].agent,
            records=records, reasons=why, change=change, now=now,
        )  # fmt: skip
        out.queued.append(queued)
        return out
    made, refused = add_events(h, change, now=now)
    out.events.extend(made)
    out.links.extend((made[c["cause"]], made[c["effect"]]) for c in change["links"]
                     if (made[c["cause"]], made[c["effect"]]) not in refused)  # fmt: skip
    out.rejected.extend(
        Rejected({"cause": a, "effect": b}, (why,)) for (a, b), why in refused.items()
    )
    return out


def _as_given(e: Extracted) -> dict[str, Any]:
    """A valid proposal as the model gave it (1-based numbers), for the report."""
    out: dict[str, Any] = {"op": e.op, "kind": e.label, "turns": [i + 1 for i in e.turns]}
    if e.text is not None:
        out["text"] = e.text
    if e.memory is not None:
        out["memory"] = e.memory + 1
    return out
