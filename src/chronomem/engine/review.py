"""The review queue (DESIGN §3): ``lifecycle/review.py`` finds what to propose; this module turns
the findings into proposals with stable ids, keeps them in the store (a rejected proposal stays
rejected until its records change), and applies an approved one through the normal write path —
in one transaction, audited with the approver."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from chronomem.checks import parse_instant, shown
from chronomem.clock import to_micros
from chronomem.config import ReviewConfig
from chronomem.engine import graph, lifecycle, write
from chronomem.engine.handle import Handle
from chronomem.errors import CausalLinkError, ConflictError, NotFoundError
from chronomem.lifecycle import review as rules
from chronomem.lifecycle.rules import decay_factor
from chronomem.model.event import EventKind, Provenance
from chronomem.model.record import EvidenceStatus, Kind, Record
from chronomem.model.review import Proposal, ProposalStatus, ReviewAction
from chronomem.retrieval.codes import KIND_CODES
from chronomem.retrieval.columns import columns, visible

__all__ = ["add_events", "approve", "propose", "reject", "review"]

_VERSIONED = [KIND_CODES[Kind.FACT], KIND_CODES[Kind.INSTRUCTION]]


def _agent_columns(h: Handle, agent: str, as_of_us: int, reads: dict[str, int]) -> rules.Columns:
    """The agent's open records at the instant, as the rules need them."""
    with h.store.snapshot():
        cols = columns(h.index.arrays([agent]))
        mask = visible(
            cols, as_of_us=as_of_us, valid_at_us=as_of_us, include_history=False, kinds=None,
            exclude_kinds=frozenset({Kind.CORE}),
        )  # fmt: skip
    rows = np.arange(cols.size) if mask is None else np.flatnonzero(mask)
    kind = cols.cat("kind")[rows]
    life = h.preset.lifecycle
    decays = np.isin(kind, [KIND_CODES[k] for k in life.decay_kinds])
    accessed, verified = cols.cat("last_accessed_at")[rows], cols.cat("last_verified_at")[rows]
    arrays = cols.arrays[0] if cols.arrays else None
    vectors = None
    if (
        arrays is not None
        and arrays.emb is not None
        and bool(arrays.has_embedding[: arrays.n].all())
    ):
        vectors = arrays.emb[: arrays.n][rows]
    ids = [str(i) for i in cols.cat("ids")[rows]]
    return rules.Columns(
        ids=ids,
        recorded_at=cols.cat("recorded_at")[rows],
        last_accessed_at=accessed,
        last_verified_at=verified,
        feedback=cols.cat("feedback_score")[rows],
        decay=decay_factor(accessed, verified, as_of_us, decays, life),
        versioned=np.isin(kind, _VERSIONED),
        domains=cols.derived("domain_keys")[rows],
        vectors=vectors,
        reads=np.fromiter((reads.get(i, 0) for i in ids), dtype=np.int64, count=len(ids)),
    )


def _state(record: Record) -> list[object]:
    """What a proposal depends on: when any of it changes, a rejected proposal may come back."""
    return [
        record.id, record.status.value, record.feedback_score, record.evidence_status.value,
        None if record.last_verified_at is None else to_micros(record.last_verified_at),
        to_micros(record.last_accessed_at),
    ]  # fmt: skip


def _fingerprint(
    action: ReviewAction, category: str, records: list[Record], change: Mapping[str, Any]
) -> str:
    """A proposal's id: the same finding on records in the same state has the same id. An
    extracted proposal depends on its change and on its records' ids and statuses only (a turn
    it cites may be read, and so touched, meanwhile)."""
    if change:
        state = json.dumps(
            [action.value, category, [[r.id, r.status.value] for r in records], change],
            sort_keys=True, default=str,
        )  # fmt: skip
    else:
        state = json.dumps([action.value, category, [_state(r) for r in records]], sort_keys=True)
    return hashlib.sha256(state.encode()).hexdigest()[:20]


def propose(
    h: Handle, *, action: ReviewAction, category: str, agent: str, records: list[Record],
    reasons: tuple[str, ...], change: Mapping[str, Any], now: datetime,
) -> str:  # fmt: skip
    """Queue one proposal (an extraction's), keeping its change; returns its id. Proposing the
    same change on the same records again is the same proposal."""
    kept = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in change.items()}
    proposal = Proposal(
        id=_fingerprint(action, category, records, kept), action=action, category=category,
        agent=agent, record_ids=tuple(r.id for r in records),
        reasons=tuple(r for r in reasons if r), created_at=now, change=kept,
    )  # fmt: skip
    with h.writing(now):
        h.store.put_proposals(h.space, [proposal])
    return proposal.id


def _proposal(found: rules.Found, records: list[Record], now: datetime) -> Proposal:
    return Proposal(
        id=_fingerprint(found.action, found.category, records, {}),
        action=found.action,
        category=found.category,
        agent=records[0].agent,
        record_ids=tuple(r.id for r in records),
        reasons=found.reasons,
        figures=dict(found.figures),
        created_at=now,
    )


def review(
    h: Handle, agent: str | None, *, as_of: datetime, config: ReviewConfig
) -> list[Proposal]:
    """Find, persist and return the open proposals (see :meth:`Memory.review`)."""
    at = to_micros(as_of)
    since = to_micros(as_of - config.retrieved_within)
    reads = h.store.access_counts(h.space, since_us=since)
    found: list[tuple[rules.Found, list[str]]] = []
    for name in [agent] if agent is not None else h.store.agents(h.space):
        c = _agent_columns(h, name, at, reads)
        versions = rules.versions(c, config, config.limit)
        batch = rules.one_per_record([
            *rules.stale(c, at, h.preset.lifecycle, config.limit),
            *_forgettable(h, c, rules.unused(c, at, config, config.limit * 4), config.limit),
            *versions,
            *rules.duplicates(c, config, config.limit, {f.rows for f in versions}),
            *rules.pushed_down(c, config, config.limit),
        ])  # fmt: skip
        found += [(f, [c.ids[r] for r in f.rows]) for f in batch]
        found += _flagged(h, c, config.limit)
    wanted = sorted({i for _, ids in found for i in ids})
    records = {r.id: r for r in h.records(wanted)}
    proposals = {
        p.id: p for p in (_proposal(f, [records[i] for i in ids], as_of) for f, ids in found)
    }
    stored = {p.id: p for p in h.store.proposals(h.space, ids=list(proposals))}
    with h.writing(h.now()):
        h.store.put_proposals(h.space, [p for i, p in proposals.items() if i not in stored])
        for old in h.store.proposals(h.space, status=ProposalStatus.OPEN.value):
            if old.change:  # an extraction's proposal waits for its decision
                continue
            if old.id not in proposals and (agent is None or old.agent == agent):
                h.store.decide_proposal(
                    h.space, old.id, ProposalStatus.OBSOLETE, at_us=at, by=None,
                    reason="its records changed since it was proposed",
                )  # fmt: skip
    out = [stored.get(i, p) for i, p in proposals.items()]
    queued = [
        p for p in h.store.proposals(h.space, status=ProposalStatus.OPEN.value)
        if p.change and p.id not in proposals and (agent is None or p.agent == agent)
    ]  # fmt: skip
    return [p for p in out if p.status is ProposalStatus.OPEN] + queued


def _forgettable(
    h: Handle, c: rules.Columns, found: list[rules.Found], limit: int
) -> list[rules.Found]:
    """Unused records nothing depends on (a cited or corrected record is closed, never
    forgotten)."""
    out = [f for f in found if not h.store.dependants(h.space, c.ids[f.rows[0]])]
    return out[:limit]


def _flagged(h: Handle, c: rules.Columns, limit: int) -> list[tuple[rules.Found, list[str]]]:
    """Open reflections whose evidence was superseded or purged: re-derive or close?"""
    reflections = [
        r
        for r in h.records(c.ids)
        if r.kind is Kind.REFLECTION and r.evidence_status is not EvidenceStatus.OK
    ]
    out = []
    for r in reflections[:limit]:
        why = "superseded" if r.evidence_status is EvidenceStatus.SUPERSEDED else "purged"
        said = f"cites evidence that was {why} since: re-derive it, or close it"
        found = rules.Found(ReviewAction.CLOSE, "flagged-evidence", (), (said,),
                            {"evidence_status": r.evidence_status.value})  # fmt: skip
        out.append((found, [r.id]))
    return out


def _open(h: Handle, proposal_id: str) -> Proposal:
    found = h.store.proposals(h.space, ids=[proposal_id])
    if not found:
        raise NotFoundError(f"no review proposal {shown(proposal_id)} in space {h.space!r}")
    if found[0].status is not ProposalStatus.OPEN:
        raise ConflictError(f"review proposal {proposal_id} is already {found[0].status.value}")
    return found[0]


def approve(h: Handle, proposal_id: str, *, now: datetime, actor: str | None) -> Proposal:
    """Apply an open proposal through the normal write path, in one transaction — unless its
    records changed since it was proposed: then it is marked obsolete and nothing else is
    written."""
    proposal = _open(h, proposal_id)
    reason = f"review {proposal.id} ({proposal.category}): {proposal.reasons[0]}"
    ids = proposal.record_ids
    with h.writing(now):
        found = {r.id: r for r in h.records(list(ids))}
        records = [found[i] for i in ids if i in found]
        if (
            _fingerprint(proposal.action, proposal.category, records, proposal.change)
            != proposal.id
        ):
            h.store.decide_proposal(
                h.space, proposal.id, ProposalStatus.OBSOLETE, at_us=to_micros(now), by=actor,
                reason="its records changed since it was proposed",
            )  # fmt: skip
            changed = True
        else:
            changed = False
            _apply(h, proposal, now=now, reason=reason, actor=actor)
            if not h.store.decide_proposal(
                h.space, proposal.id, ProposalStatus.APPROVED, at_us=to_micros(now), by=actor,
                reason=None,
            ):  # fmt: skip
                raise ConflictError(f"review proposal {proposal.id} was decided concurrently")
    if changed:
        raise ConflictError(
            f"review proposal {proposal.id} no longer applies: its records changed since it was"
            " proposed (run review again)"
        )
    return replace(proposal, status=ProposalStatus.APPROVED, decided_at=now, decided_by=actor)


def _apply(h: Handle, proposal: Proposal, *, now: datetime, reason: str, actor: str | None) -> None:
    """The proposal's action through the engine's own lifecycle verbs."""
    ids = proposal.record_ids
    if proposal.action is ReviewAction.EVENTS:
        _, refused = add_events(h, proposal.change, now=now)
        if refused:
            raise ConflictError(f"review proposal {proposal.id}: " + "; ".join(refused.values()))
    elif proposal.change:  # an extracted memory: written, or replacing the first record
        fields = dict(proposal.change)
        if fields.get("occurred_at"):
            fields["occurred_at"] = parse_instant(fields["occurred_at"], "occurred_at")
        if proposal.action is ReviewAction.ADD:
            write.write(h, [fields], now=now, actor=actor, reason=reason)
        else:
            lifecycle.supersede(h, [ids[0]], fields, now=now, reason=reason, actor=actor)
    elif proposal.action is ReviewAction.VERIFY:
        lifecycle.verify(h, ids[0], now=now, actor=actor, reason=reason)
    elif proposal.action is ReviewAction.CLOSE:
        lifecycle.close_record(h, ids[0], now=now, reason=reason, valid_until=None, actor=actor)
    elif proposal.action is ReviewAction.FORGET:
        lifecycle.forget(h, ids[0], now=now, reason=reason, purge=False, actor=actor)
    else:  # the last record stays: a copy of it supersedes all of them
        keep = h.record(ids[-1])
        fields = {
            "text": keep.text, "agent": keep.agent, "kind": keep.kind,
            "importance": keep.importance, "occurred_at": keep.occurred_at,
            "domain": keep.domain, "tags": keep.tags, "metadata": keep.metadata,
            "event_id": keep.event_id, "sensitivity": keep.sensitivity,
            "embedding": h.store.get_embedding(h.space, keep.id),
        }  # fmt: skip
        lifecycle.supersede(h, list(ids), fields, now=now, reason=reason, actor=actor)


def add_events(
    h: Handle, change: Mapping[str, Any], *, now: datetime
) -> tuple[list[str], dict[tuple[str, str], str]]:
    """Add extracted events (``change["events"]``) and link them (``change["links"]``: indices
    into the events, weights) with provenance ``inferred-llm``, in one transaction. Returns the
    events' ids and the links the graph's rules refused, with why."""
    made: list[str] = []
    refused: dict[tuple[str, str], str] = {}
    with h.writing(now):
        for ev in change.get("events", []):
            event = graph.add_event(
                h, ev["text"], now=now, occurred_at=parse_instant(ev["occurred_at"], "occurred_at"),
                kind=EventKind.HAPPENING, scope=None, metadata=ev.get("metadata"), embedding=None,
            )  # fmt: skip
            made.append(event.id)
        for link in change.get("links", []):
            cause, effect = made[link["cause"]], made[link["effect"]]
            try:
                graph.link(
                    h, cause, effect, now=now, weight=float(link["weight"]),
                    provenance=Provenance.INFERRED_LLM, similarity=None,
                )  # fmt: skip
            except CausalLinkError as exc:
                refused[(cause, effect)] = str(exc)
    return made, refused


def reject(
    h: Handle, proposal_id: str, *, reason: str, now: datetime, actor: str | None
) -> Proposal:
    """Record the rejection: the same proposal does not come back unless its records change."""
    proposal = _open(h, proposal_id)
    h.store.decide_proposal(
        h.space, proposal.id, ProposalStatus.REJECTED, at_us=to_micros(now), by=actor,
        reason=reason,
    )  # fmt: skip
    return replace(
        proposal, status=ProposalStatus.REJECTED, decided_at=now, decided_by=actor,
        decision_reason=reason,
    )  # fmt: skip
