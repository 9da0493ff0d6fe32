"""Writes (DESIGN §3): validation, batched embedding, supersession and the write gate in one
transaction."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.clock import require_aware, to_micros
from chronomem.engine.base import _Base
from chronomem.errors import (
    ConfigError,
    ConflictError,
    EmbedderError,
    InvalidInputError,
    NotFoundError,
)
from chronomem.lifecycle.rules import plan_closures
from chronomem.model.audit import AuditEntry
from chronomem.model.record import EvidenceStatus, Kind, Sensitivity, WriteResult
from chronomem.retrieval.gate import find_duplicate, same_batch_duplicate
from chronomem.stores.base import StoredRecord
from chronomem.text import passages
from chronomem.writes import (
    REMEMBER_FIELDS,
    Draft,
    build_drafts,
)

F32 = npt.NDArray[np.float32]


class _Writing(_Base):
    # -- writes ---------------------------------------------------------------------------
    def remember(
        self,
        text: str,
        *,
        agent: str = "default",
        kind: Kind | str = Kind.OBSERVATION,
        importance: float | None = None,
        occurred_at: datetime | None = None,
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        domain: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
        evidence: Sequence[str] = (),
        event_id: str | None = None,
        supersedes: Sequence[str] = (),
        sensitivity: Sensitivity | str = Sensitivity.NORMAL,
        embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
        actor: str | None = None,
    ) -> WriteResult:
        """Store one record (DESIGN §3) and return a :class:`WriteResult`.

        ``recorded_at`` and the initial ``last_accessed_at`` are the clock's now; ``occurred_at``
        (world time) defaults to it. ``importance`` is 1..10; when omitted it is
        scored by the configured importance scorer (default: the documented heuristic).
        ``embedding`` supplies the vector instead of the embedder;
        with ``embedder=None`` the first vector fixes the store's dimension.

        ``supersedes`` names open records this one replaces: they are closed in the same
        transaction (see :meth:`supersede`). A fact or instruction that nearly duplicates an open
        one of the same agent and domain is not stored (``stored=False``, ``duplicate_of``) unless
        it supersedes something; see :class:`~chronomem.config.WriteGate`.

        Raises:
            InvalidInputError: bad input; nothing is written.
            NotFoundError: an evidence or superseded id does not exist in this space.
            ConflictError: a superseded record is already closed.
        """
        item = {
            "text": text,
            "agent": agent,
            "kind": kind,
            "importance": importance,
            "occurred_at": occurred_at,
            "valid_from": valid_from,
            "valid_until": valid_until,
            "domain": domain,
            "tags": tags,
            "metadata": metadata,
            "evidence": evidence,
            "event_id": event_id,
            "supersedes": supersedes,
            "sensitivity": sensitivity,
            "embedding": embedding,
        }
        return self.remember_many([item], actor=actor)[0]

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        progress: bool = False,
        actor: str | None = None,
        **defaults: Any,
    ) -> list[WriteResult]:
        """Store many records in one transaction, embedding them in batches.

        Each item is a text or a mapping with the keyword arguments of :meth:`remember`;
        ``defaults`` (e.g. ``agent="isabella"``) apply to every item that does not set them.
        Evidence may cite records earlier in the same batch. All or nothing: on any invalid
        item, nothing is written and the error names the item's position. Items the write gate
        rejects come back with ``stored=False``; the others are stored.
        """
        unknown = set(defaults) - REMEMBER_FIELDS
        if unknown:
            raise InvalidInputError(f"unknown field(s) for remember: {sorted(unknown)}")
        batch = [
            {
                **defaults,
                **{
                    k: v
                    for k, v in ({"text": raw} if isinstance(raw, str) else raw).items()
                    if v is not None
                },
            }
            for raw in items
        ]
        results = self._write(batch, progress=progress, actor=actor, reason=None)
        self._after_write(results, {str(item.get("agent", "default")) for item in batch})
        return results

    def _after_write(self, results: Sequence[WriteResult], agents: set[str]) -> None:
        """A hook after a public write (the reflection layer uses it to auto-reflect)."""

    def _write(
        self,
        batch: list[dict[str, Any]],
        *,
        progress: bool,
        actor: str | None,
        reason: str | None,
        after: Callable[[], None] | None = None,
    ) -> list[WriteResult]:
        """Validate, score, embed, then store in one transaction (``after`` runs inside it)."""
        with self._lock:
            self._require_open()
            now = require_aware(self._clock.now(), "clock.now()")
            cited = sorted({e for item in batch for e in item.get("evidence", ())})
            depths = {r.id: r.depth for r in self._store.get_records(self._space, cited)}
            drafts = build_drafts(
                batch, now=now, space=self._space, dim=self._meta.dim, ids=self._ids, depths=depths
            )
            witnessed = sorted({d.record.event_id for d in drafts if d.record.event_id})
            known = {e.id for e in self._store.get_events(self._space, witnessed)}
            for event_id in witnessed:
                if event_id not in known:
                    raise NotFoundError(
                        f"event {event_id!r} does not exist in space {self._space!r}",
                        record_id=event_id,
                    )
            drafts = self._score_missing(drafts)
            drafts = self._embed_missing(drafts, progress=progress)
            with self._store.write():
                results = self._store_drafts(drafts, now=now, actor=actor, reason=reason)
                if after is not None:
                    after()
                return results

    def _score_missing(self, drafts: list[Draft]) -> list[Draft]:
        """Importance from the configured scorer for records written without one (batched)."""
        missing = [i for i, d in enumerate(drafts) if d.needs_importance]
        if not missing:
            return drafts
        scores = self._importance.score([drafts[i].record.text for i in missing])
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

    def _embed_missing(self, drafts: list[Draft], *, progress: bool) -> list[Draft]:
        """Fill in vectors with the embedder and fix the store's dimension: the records without
        one and, when passages are on, the passages of records of more than one sentence (also
        of records whose vector was given) — all in one batched call."""
        missing = [i for i, d in enumerate(drafts) if d.embedding is None]
        if self._embedder is not None:
            wholes, parts = self._embed_with_passages(
                [drafts[i].record.text for i in missing],
                [d.record.text for d in drafts],
                progress=progress,
            )
            drafts = list(drafts)
            for i, vector in zip(missing, wholes, strict=True):
                record = replace(drafts[i].record, has_embedding=True)
                drafts[i] = replace(drafts[i], record=record, embedding=vector)
            for i, part in enumerate(parts):
                if part is not None:
                    drafts[i] = replace(drafts[i], passages=part)
        given = [d.embedding for d in drafts if d.embedding is not None]
        if given:
            self._fix_dim(int(given[0].shape[0]))
        return drafts

    def _embed_with_passages(
        self,
        texts: list[str],
        passages_of: list[str],
        *,
        progress: bool,
        with_passages: bool | None = None,
    ) -> tuple[F32, list[F32 | None]]:
        """One batched embedder call for ``texts`` and, when passages are on, the passages of each
        of ``passages_of`` (``None`` for a text of one sentence). The embedder's output is
        checked: one finite vector of the store's width per text."""
        wanted = self._passages if with_passages is None else with_passages
        split = [passages(t) if wanted else [] for t in passages_of]
        asked = texts + [p for ps in split for p in ps]
        if self._embedder is None or not asked:
            return np.empty((0, self._meta.dim or 0), np.float32), [None] * len(split)
        vectors = np.asarray(self._embedder.embed(asked, progress=progress), np.float32)
        dim = self._meta.dim or self._embedder.dim
        if vectors.shape != (len(asked), dim) or not np.all(np.isfinite(vectors)):
            raise EmbedderError(
                f"the embedder returned {vectors.shape} values (non-finite ones: "
                f"{int(np.count_nonzero(~np.isfinite(vectors)))}) for {len(asked)} texts of "
                f"dimension {dim}"
            )
        parts: list[F32 | None] = []
        start = len(texts)
        for ps in split:
            parts.append(vectors[start : start + len(ps)] if ps else None)
            start += len(ps)
        return vectors[: len(texts)], parts

    def embed_passages(self, *, progress: bool = False, batch: int = 512) -> int:
        """Backfill passage vectors: embed the sentences of every record of this space that has
        a vector, more than one sentence and no passages yet (written before store version 5,
        with ``passages=False``, or imported without them), ``batch`` records per transaction.
        Returns how many records gained passages. Every process's arrays pick them up on their
        next read. Needs an embedder."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise InvalidInputError(f"batch must be a positive integer; got {batch!r}")
        with self._lock:
            self._require_open()
            if self._embedder is None:
                raise ConfigError("embed_passages needs an embedder (Memory.open(embedder=...))")
            with self._store.snapshot():
                todo = [
                    (s.record.id, s.record.text)
                    for s in self._store.iter_records(self._space)
                    if s.embedding is not None and s.passages is None and passages(s.record.text)
                ]
            done = 0
            for start in range(0, len(todo), batch):
                chunk = todo[start : start + batch]
                parts = self._embed_with_passages(
                    [], [t for _, t in chunk], progress=progress, with_passages=True
                )[1]
                items = [
                    (rid, p) for (rid, _), p in zip(chunk, parts, strict=True) if p is not None
                ]
                self._store.set_passages(self._space, items)
                done += len(items)
            return done

    def _store_drafts(
        self, drafts: list[Draft], *, now: datetime, actor: str | None, reason: str | None
    ) -> list[WriteResult]:
        """Inside a write transaction: close what the drafts supersede, apply the write gate,
        insert the rest, audit."""
        named = [old for d in drafts for old in d.supersedes]
        if len(named) != len(set(named)):
            raise ConflictError("a record is superseded twice in one batch")
        old = {r.id: r for r in self._store.get_records(self._space, named)}
        closures, entries = [], []
        for d in drafts:
            if not d.supersedes:
                continue
            missing = [i for i in d.supersedes if i not in old]
            if missing:
                raise NotFoundError(
                    f"cannot supersede {missing[0]!r}: no such record in space {self._space!r}",
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
        threshold = self._gate.threshold(self._meta.model)
        for d in drafts:
            duplicate = None
            if not d.supersedes and d.record.kind in self._gate.kinds:
                earlier = [
                    (a.record, a.embedding) for a in accepted if a.record.kind in self._gate.kinds
                ]
                duplicate = same_batch_duplicate(
                    earlier, d.record, d.embedding, threshold
                ) or find_duplicate(
                    self._index.arrays([d.record.agent])[0],
                    d.record,
                    d.embedding,
                    gate=self._gate,
                    threshold=threshold,
                    as_of_us=to_micros(now),
                )
            if duplicate is not None:
                results.append(
                    WriteResult(
                        stored=False,
                        id=None,
                        reason=f"near-duplicate of {duplicate.record_id} "
                        f"(cosine {duplicate.similarity:.3f} >= {threshold})",
                        duplicate_of=duplicate.record_id,
                    )
                )
                continue
            accepted.append(d)
            results.append(WriteResult(stored=True, id=d.record.id))
        self._store.insert_records(
            self._space,
            [
                StoredRecord(record=d.record, embedding=d.embedding, passages=d.passages)
                for d in accepted
            ],
        )
        self._store.close_records(self._space, closures)
        if closures:  # records citing a replaced record no longer rest on current evidence
            self._store.flag_evidence(
                self._space, [c.record_id for c in closures], EvidenceStatus.SUPERSEDED.value
            )
        if entries:
            self._store.append_audit(self._space, entries)
        return results
