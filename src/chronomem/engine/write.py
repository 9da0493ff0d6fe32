"""Writes (DESIGN §3): validation, importance scoring, batched embedding, then supersession, the
near-duplicate gate and the insert in one store transaction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from chronomem.arrays import F32
from chronomem.checks import record_items, shown
from chronomem.clock import to_micros
from chronomem.embedders.base import Embedder, is_thread_safe, model_languages, read_lengths
from chronomem.engine.handle import Handle
from chronomem.errors import (
    ConflictError,
    EmbedderError,
    InvalidInputError,
    NotFoundError,
)
from chronomem.lifecycle.rules import plan_closures
from chronomem.model.audit import AuditEntry
from chronomem.model.record import EvidenceStatus, Status, WriteResult
from chronomem.retrieval.codes import domain_key
from chronomem.retrieval.columns import columns
from chronomem.stores.base import StoredRecord
from chronomem.text import passage_spans, passages, spoken
from chronomem.writing.anchors import EmbeddingImportance
from chronomem.writing.drafts import REMEMBER_FIELDS, Draft, build_drafts
from chronomem.writing.gate import find_duplicate, same_batch_duplicate

__all__ = [
    "Ahead",
    "batch_items",
    "embed_ahead",
    "embed_texts",
    "open_holders",
    "record_fields",
    "write",
]


def record_fields(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The record fields among a verb's arguments (``remember(...)``'s ``locals()``: every
    parameter named like a field of :meth:`Memory.remember`)."""
    return {name: value for name, value in arguments.items() if name in REMEMBER_FIELDS}


def batch_items(
    items: Iterable[str | Mapping[str, Any]], defaults: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each item as a mapping of :meth:`Memory.remember` fields, ``defaults`` filling what it
    does not set (``None`` values count as not set)."""
    unknown = set(defaults) - REMEMBER_FIELDS
    if unknown:
        raise InvalidInputError(f"unknown field(s) for remember: {sorted(unknown)}")
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidInputError(
            f"items must be a list of texts or mappings of remember fields; got "
            f"{type(items).__name__} (one record: remember(), or wrap it in a list)",
            field="items",
        )
    given = {k: v for k, v in defaults.items() if v is not None}
    return [
        {**given, **{k: v for k, v in item.items() if v is not None}}
        for item in record_items(items)
    ]


@dataclass(frozen=True, slots=True)
class Ahead:
    """Vectors made before the handle's lock (:func:`embed_ahead`) for the texts ``asked``, in
    the order :func:`embed_texts` asks for them, with the plan they came from (for ``texts``,
    ``need`` and ``mode``: :func:`embed_texts` reuses it rather than split and tokenise again)."""

    key: tuple[list[str], list[bool], str | None]
    plan: tuple[list[str], list[list[str]], list[bool]]
    vectors: F32
    #: the embedder that made them: under the lock they serve only if the handle still embeds
    #: with it (this handle's ``reembed`` may have adopted another model meanwhile)
    embedder: Embedder

    @property
    def asked(self) -> list[str]:
        return self.plan[0]


def embed_ahead(h: Handle, batch: list[dict[str, Any]], *, progress: bool) -> Ahead | None:
    """Before the handle's lock: embed what :func:`write` will ask the embedder for (the texts
    of items without a vector, and the passages), when the embedder may be called from several
    threads at once — the model run, most of a write's time, then holds up no other call.
    ``None`` (embed under the lock, as before) for an embedder that is not thread-safe, items
    that are not well-formed (the write reports them) and a scorer that must run first."""
    said = [item.get("text") for item in batch]
    embedder = h.embedder
    if (
        not batch
        or not is_thread_safe(embedder)
        or not all(isinstance(t, str) and t.strip() for t in said)
        or not all(isinstance(item.get("speaker"), str | None) for item in batch)
        or not (_reuses_vectors(h) or all(item.get("importance") is not None for item in batch))
    ):
        return None
    texts = [spoken(str(t), item.get("speaker")) for t, item in zip(said, batch, strict=True)]
    key = (texts, [item.get("embedding") is None for item in batch], h.passages)
    plan = _plan(embedder, *key)
    if embedder is None or not plan[0]:
        return None
    vectors = np.asarray(embedder.embed(plan[0], progress=progress))
    return Ahead(key=key, plan=plan, vectors=vectors, embedder=embedder)


def write(
    h: Handle,
    batch: list[dict[str, Any]],
    *,
    now: datetime,
    progress: bool = False,
    actor: str | None = None,
    reason: str | None = None,
    after: Callable[[], None] | None = None,
    ready: Ahead | None = None,
) -> list[WriteResult]:
    """Validate, score, embed (or take the vectors ``ready`` from :func:`embed_ahead`), then
    store in one transaction (``after`` runs inside it)."""
    h.require_model()
    # Only well-formed citations are looked up; build_drafts reports the others by field.
    cited = sorted(
        {
            e
            for item in batch
            if isinstance(evidence := item.get("evidence", ()), list | tuple)
            for e in evidence
            if isinstance(e, str)
        }
    )
    depths = {r.id: r.depth for r in h.records(cited)}
    drafts = build_drafts(batch, now=now, space=h.space, dim=h.meta.dim, ids=h.ids, depths=depths)
    witnessed = sorted({d.record.event_id for d in drafts if d.record.event_id})
    known = {e.id for e in h.store.get_events(h.space, witnessed)}
    for event_id in witnessed:
        if event_id not in known:
            raise NotFoundError(
                f"event {shown(event_id)} does not exist in space {h.space!r}", event_id=event_id
            )
    if h.embedder is None:
        without = [i for i, d in enumerate(drafts) if d.embedding is None]
        if without:
            where = "the record has" if len(drafts) == 1 else f"item {without[0]} has"
            h.check_missing_vectors(where)
    # Scoring comes first (a failing LLM scorer costs no embedding and records no dimension),
    # except for the anchor scorer, which reuses the vectors embedding makes.
    embedded_here = [d.embedding is None and h.embedder is not None for d in drafts]
    if not _reuses_vectors(h):
        drafts = _score_missing(h, drafts, embedded_here)
    drafts = _embed_missing(h, drafts, progress=progress, ready=ready)
    drafts = _score_missing(h, drafts, embedded_here)  # nothing left to score unless reuses
    with h.writing(now):
        results = _store_drafts(h, drafts, now=now, actor=actor, reason=reason)
        if after is not None:
            after()
        return results


def _reuses_vectors(h: Handle) -> bool:
    """The Memory's importance scorer is the anchor scorer over the Memory's own embedder."""
    return isinstance(h.importance, EmbeddingImportance) and h.importance.embedder is h.embedder


def _score_missing(h: Handle, drafts: list[Draft], embedded_here: list[bool]) -> list[Draft]:
    """Importance from the configured scorer for records written without one (batched). The
    anchor scorer reuses the vectors this write's embedder call made (``embedded_here``)."""
    missing = [i for i, d in enumerate(drafts) if d.needs_importance]
    if not missing:
        return drafts
    scorer = h.importance
    vectors = [v for i in missing if embedded_here[i] and (v := drafts[i].embedding) is not None]
    if (
        isinstance(scorer, EmbeddingImportance)
        and _reuses_vectors(h)
        and len(vectors) == len(missing)
    ):
        scores = scorer.score_vectors(np.stack(vectors), [drafts[i].record.text for i in missing])
    else:  # other scorers, and records with a caller's vector: from the texts
        scores = scorer.score([drafts[i].record.text for i in missing])
    if len(scores) != len(missing):
        raise InvalidInputError(
            f"the importance scorer returned {len(scores)} scores for {len(missing)} texts"
        )
    out = list(drafts)
    for i, value in zip(missing, scores, strict=True):
        if isinstance(value, bool) or not (
            isinstance(value, int | float) and math.isfinite(value) and 1 <= value <= 10
        ):
            raise InvalidInputError(
                f"the importance scorer returned {value!r} for {out[i].record.text[:60]!r};"
                " importance must be a number from 1 to 10",
                field="importance",
            )
        out[i] = replace(out[i], record=replace(out[i].record, importance=float(value)),
                         needs_importance=False)  # fmt: skip
    return out


def _embed_missing(
    h: Handle, drafts: list[Draft], *, progress: bool, ready: Ahead | None = None
) -> list[Draft]:
    """Fill in vectors with the embedder and fix the store's dimension: the records without one
    and, when passages are on, the passages of records of more than one sentence (also of
    records whose vector was given) — all in one batched call."""
    missing = [i for i, d in enumerate(drafts) if d.embedding is None]
    if h.embedder is not None:
        wholes, parts = embed_texts(
            h,
            [d.record.read_text for d in drafts],
            [d.embedding is None for d in drafts],
            progress=progress,
            ready=ready,
        )
        drafts = list(drafts)
        for i, vector in zip(missing, wholes, strict=True):
            record = replace(drafts[i].record, has_embedding=True)
            drafts[i] = replace(drafts[i], record=record, embedding=vector)
        for i, part in enumerate(parts):
            if part is not None and drafts[i].passages is None:  # the caller's stay
                drafts[i] = replace(drafts[i], passages=part)
    given = [d.embedding for d in drafts if d.embedding is not None]
    if given:
        h.fix_dim(int(given[0].shape[0]))
    return drafts


def embed_texts(
    h: Handle,
    texts: list[str],
    need: list[bool],
    *,
    progress: bool,
    with_passages: bool | None = None,
    ready: Ahead | None = None,
) -> tuple[F32, list[F32 | None]]:
    """One batched embedder call for the vectors of the ``texts`` that ``need`` one and, when
    passages are on, the passages of each text (``None`` for a text of one sentence) — or the
    vectors ``ready`` made for exactly these. With ``passages="derived"`` a text with passages
    is not embedded whole: its vector is the length-weighted mean of its passages'. The output is
    checked: one finite vector of the store's width per text asked."""
    mode = h.passages if with_passages is None else (h.passages or "derived")
    planned = (
        ready is not None and ready.embedder is h.embedder and ready.key == (texts, need, mode)
    )
    asked, split, derive = ready.plan if ready and planned else _plan(h.embedder, texts, need, mode)
    if h.embedder is None or not asked:
        return np.empty((0, h.meta.dim or 0), np.float32), [None] * len(split)
    if ready is not None and ready.asked == asked and ready.embedder is h.embedder:
        vectors = np.asarray(ready.vectors, np.float32)
    else:
        vectors = np.asarray(h.embedder.embed(asked, progress=progress), np.float32)
    dim = h.meta.dim or h.embedder.dim
    if vectors.shape != (len(asked), dim) or not np.all(np.isfinite(vectors)):
        raise EmbedderError(
            f"the embedder returned {vectors.shape} values (non-finite ones: "
            f"{int(np.count_nonzero(~np.isfinite(vectors)))}) for {len(asked)} texts of "
            f"dimension {dim}"
        )
    parts: list[F32 | None] = []
    start = len(asked) - sum(len(ps) for ps in split)
    for ps in split:
        parts.append(vectors[start : start + len(ps)] if ps else None)
        start += len(ps)
    wholes = iter(vectors)
    out = [
        _mean_direction(part, text) if d and part is not None else next(wholes)
        for text, n, d, part in zip(texts, need, derive, parts, strict=True)
        if n
    ]
    return (np.stack(out) if out else np.empty((0, dim), np.float32)), parts


def _mean_direction(vectors: F32, text: str) -> F32:
    """A record's vector from its passages' (the first ``len(vectors)`` of ``text``): the unit
    vector along their mean, each weighted by its sentences' length in characters, as a whole
    text's mean pooling weighs each token."""
    weights = np.asarray([e - s for s, e in passage_spans(text)[: len(vectors)]], np.float64)
    mean = weights @ vectors.astype(np.float64)
    out: F32 = (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)
    return out


def _plan(
    embedder: Embedder | None, texts: list[str], need: list[bool], mode: str | None
) -> tuple[list[str], list[list[str]], list[bool]]:
    """What :func:`embed_texts` asks ``embedder`` for, in its order (the texts embedded whole,
    then every passage), each text's passages, and which texts get their vector from their
    passages (``"derived"``: those with passages, cut where the model stops reading)."""
    split = [passages(t) for t in texts] if mode is not None else [[] for _ in texts]
    if mode == "derived" and embedder is not None:
        split = _read_passages(embedder, texts, split)
    derive = [mode == "derived" and n and bool(ps) for n, ps in zip(need, split, strict=True)]
    wholes = [t for t, n, d in zip(texts, need, derive, strict=True) if n and not d]
    return wholes + [p for ps in split for p in ps], split, derive


def _read_passages(embedder: Embedder, texts: list[str], split: list[list[str]]) -> list[list[str]]:
    """The passages of each text that start within what the model reads of it (all of them
    for a text it reads whole); none where fewer than two are left."""
    long = [i for i, ps in enumerate(split) if ps]
    out = list(split)
    for i, end in zip(long, read_lengths(embedder, [texts[i] for i in long]), strict=True):
        if end < len(texts[i]):
            spans = passage_spans(texts[i])
            kept = [p for p, (s, _) in zip(split[i], spans, strict=True) if s < end]
            out[i] = kept if len(kept) > 1 else []
    return out


def _replacing(h: Handle, drafts: list[Draft], *, now: datetime) -> list[Draft]:
    """Inside the write transaction, after taking the space's write lock (so that concurrent
    replacing writes of one domain serialise and exactly one open record remains): each draft
    with ``replace`` supersedes the open records of its agent whose domain is exactly its own."""
    if not any(d.replace for d in drafts):
        return drafts
    slots = [(d.record.agent, d.record.domain) for d in drafts if d.replace]
    if len(slots) != len(set(slots)):
        raise InvalidInputError(
            "two items of one batch replace the same agent and domain", field="replace"
        )
    h.store.lock_space(h.space)
    out = []
    for d in drafts:
        if d.replace:
            assert d.record.domain is not None  # build_drafts refuses replace without a domain
            holders = open_holders(h, d.record.agent, d.record.domain, now=now)
            if holders:
                named = tuple(dict.fromkeys((*d.supersedes, *holders)))
                record = replace(
                    d.record,
                    supersedes=named,
                    valid_from=d.record.valid_from or d.record.occurred_at,
                )
                d = replace(d, record=record, supersedes=named)
        out.append(d)
    return out


def _not_made_yet(h: Handle, drafts: list[Draft]) -> tuple[list[Draft], dict[int, WriteResult]]:
    """Inside the write transaction: the drafts whose ``(agent, source_id)`` no record holds
    yet, and for the others (by position) the result naming the record made from that source —
    a retried write lands once. Takes the space's write lock first, so retries running at once
    in several processes serialise and the later one finds the earlier one's records."""
    keyed: list[tuple[int, tuple[str, str]]] = []
    for i, d in enumerate(drafts):
        if d.record.source_id is not None:
            keyed.append((i, (d.record.agent, d.record.source_id)))
    if not keyed:
        return drafts, {}
    h.store.lock_space(h.space)
    stored = h.store.stored_sources(h.space, [key for _, key in keyed])
    made: dict[int, WriteResult] = {}
    first: dict[tuple[str, str], str] = {}
    for i, key in keyed:
        held = stored.get(key) or first.get(key)
        if held is None:
            first[key] = drafts[i].record.id
            continue
        why = f"already stored: record {held} was made from source_id {shown(key[1])}"
        made[i] = WriteResult(stored=False, id=None, reason=why, duplicate_of=held)
    return [d for i, d in enumerate(drafts) if i not in made], made


def _in_order(results: list[WriteResult], made: dict[int, WriteResult]) -> list[WriteResult]:
    """The results of the written drafts with those of the already made ones put back in
    their places."""
    if not made:
        return results
    rest = iter(results)
    return [made[i] if i in made else next(rest) for i in range(len(results) + len(made))]


def open_holders(h: Handle, agent: str, domain: str, *, now: datetime) -> list[str]:
    """The ids of the agent's open records (not closed or superseded) whose domain is exactly
    ``domain`` (case and spacing included), oldest first."""
    arrays = h.index.arrays([agent])[0]
    if arrays.n == 0:
        return []
    cols = columns([arrays])
    rows = np.flatnonzero(
        (cols.cat("superseded_at") > to_micros(now)) & (arrays.domain_keys() == domain_key(domain))
    )
    found = h.records([str(i) for i in cols.cat("ids")[rows]])
    return [r.id for r in found if r.domain == domain and r.status is Status.OPEN]


def _store_drafts(
    h: Handle, drafts: list[Draft], *, now: datetime, actor: str | None, reason: str | None
) -> list[WriteResult]:
    """Inside a write transaction: close what the drafts supersede, apply the write gate, insert
    the rest, audit."""
    drafts = _replacing(h, drafts, now=now)
    drafts, made = _not_made_yet(h, drafts)
    named = [old for d in drafts for old in d.supersedes]
    if len(named) != len(set(named)):
        raise ConflictError("a record is superseded twice in one batch")
    old = {r.id: r for r in h.records(named)}
    closures, entries = [], []
    for d in drafts:
        if not d.supersedes:
            continue
        missing = [i for i in d.supersedes if i not in old]
        if missing:
            raise NotFoundError(
                f"cannot supersede {shown(missing[0])}: no such record in space {h.space!r}",
                record_id=missing[0],
            )
        plans = plan_closures(
            [old[i] for i in d.supersedes], at=now, successor=d.record, reason=reason
        )
        closures += plans
        entries += [
            AuditEntry(seq=0, at=now, action="supersede", record_id=p.record_id, actor=actor,
                       reason=reason, detail={"by": d.record.id})
            for p in plans
        ]  # fmt: skip
    results: list[WriteResult] = []
    accepted: list[Draft] = []
    threshold = h.gate.threshold(h.meta.model, h.calibrated("gate"))
    languages = model_languages(h.embedder)
    for d in drafts:
        duplicate = None
        if not d.supersedes and not d.replace and d.record.kind in h.gate.kinds:
            earlier = [(a.record, a.embedding) for a in accepted if a.record.kind in h.gate.kinds]
            arrays = h.index.arrays([d.record.agent])[0]
            duplicate = same_batch_duplicate(
                earlier, d.record, d.embedding, threshold, languages
            ) or find_duplicate(
                arrays,
                d.record,
                d.embedding,
                gate=h.gate,
                threshold=threshold,
                as_of_us=to_micros(now),
                languages=languages,
                int8=h.index.scans_int8(arrays),
            )
        if duplicate is not None:
            results.append(
                WriteResult(
                    stored=False,
                    id=None,
                    reason=duplicate.reason(threshold),
                    duplicate_of=duplicate.record_id,
                )
            )
            continue
        accepted.append(d)
        results.append(WriteResult(stored=True, id=d.record.id))
    results = _in_order(results, made)
    h.store.insert_records(
        h.space,
        [
            StoredRecord(record=d.record, embedding=d.embedding, passages=d.passages)
            for d in accepted
        ],
    )
    h.store.close_records(h.space, closures)
    if closures:  # records citing a replaced record no longer rest on current evidence
        h.store.flag_evidence(
            h.space, [c.record_id for c in closures], EvidenceStatus.SUPERSEDED.value
        )
    if entries:
        h.store.append_audit(h.space, entries)
    return results
