"""Switching a store to another embedding model while it serves (docs/design/reembed.md)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from chronomem.checks import flag, positive_int
from chronomem.embedders.base import Embedder
from chronomem.engine.handle import Handle, default_importance, stored_calibration
from chronomem.engine.write import embed_texts
from chronomem.errors import ConfigError, EmbedderError, InvalidInputError
from chronomem.retrieval.space import SpaceIndex
from chronomem.stores.base import EmbeddingMeta, Pending, PendingVector
from chronomem.text import spoken

__all__ = ["ReembedReport", "cancel", "reembed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReembedReport:
    """What a :meth:`~chronomem.Memory.reembed` call did.

    Attributes:
        model, dim: the target model and its dimension.
        embedded: records and events this call embedded (a resumed switch skips what an
            earlier call did).
        stragglers: of those, written during the switch and embedded in the cut-over.
        total: the store's records and events with vectors.
        cut_over: whether the store now holds the new model's vectors (``False``: the vectors
            wait beside the old ones; run again to finish).
    """

    model: str
    dim: int
    embedded: int
    stragglers: int
    total: int
    cut_over: bool


def _vectors(target: Handle, rows: list[Pending]) -> list[PendingVector]:
    """The target model's vectors of ``rows``: records as their ``read_text``, with passages
    when they had them; events as their text. One embedder call per kind of row."""
    out: list[PendingVector] = []
    for with_passages in (True, False):
        group = [r for r in rows if r.kind == "r" and r.passages == with_passages]
        if not group:
            continue
        mode = (target.passages or "derived") if with_passages else None
        wholes, parts = embed_texts(
            replace(target, passages=mode),
            [spoken(r.text, r.speaker) for r in group],
            [True] * len(group),
            progress=False,
        )
        out += [
            PendingVector(kind="r", pk=r.pk, embedding=v, passages=p)
            for r, v, p in zip(group, wholes, parts, strict=True)
        ]
    events = [r for r in rows if r.kind == "e"]
    if events:
        assert target.embedder is not None
        vectors = np.asarray(target.embedder.embed([e.text for e in events]), np.float32)
        if vectors.shape != (len(events), target.meta.dim) or not np.all(np.isfinite(vectors)):
            raise EmbedderError(f"the embedder returned {vectors.shape} values for events")
        out += [
            PendingVector(kind="e", pk=e.pk, embedding=v)
            for e, v in zip(events, vectors, strict=True)
        ]
    return out


def reembed(
    h: Handle, embedder: Embedder, *, now: datetime, batch: int, progress: bool, cut_over: bool
) -> ReembedReport:
    """See :meth:`Memory.reembed`. Call without the handle's lock held: batches are embedded
    outside any transaction; the cut-over holds the store's write lock and the handle's."""
    positive_int(batch, "batch")
    flag(progress, "progress")
    flag(cut_over, "cut_over")
    if not isinstance(embedder, Embedder):
        raise ConfigError(f"reembed needs an Embedder; got {embedder!r}")
    model, dim = embedder.model_id, embedder.dim
    if model == h.meta.model and dim == h.meta.dim:
        raise InvalidInputError(
            f"{h.store.location} already holds {model!r} vectors; nothing to switch",
            field="embedder",
        )
    h.store.reembed_start(model, dim, now.isoformat())
    target = replace(h, embedder=embedder, meta=EmbeddingMeta(model=model, dim=dim))
    embedded = 0
    while rows := h.store.reembed_todo(batch):
        h.store.reembed_put(_vectors(target, rows))
        embedded += len(rows)
        if progress:
            state = h.store.reembed_state()
            if state is not None:
                print(f"reembed {model}: {state.done}/{state.total}", file=sys.stderr, flush=True)
    state = h.store.reembed_state()
    total = 0 if state is None else state.total
    if not cut_over:
        return ReembedReport(
            model=model, dim=dim, embedded=embedded, stragglers=0, total=total, cut_over=False
        )
    with h.lock:
        h.require_open()
        late = h.store.reembed_cut_over(model, dim, lambda rest: _vectors(target, rest))
        adopt(h, embedder)
    return ReembedReport(
        model=model, dim=dim, embedded=embedded + late, stragglers=late, total=total + late,
        cut_over=True,
    )  # fmt: skip


def adopt(h: Handle, embedder: Embedder) -> None:
    """After the cut-over: the handle that ran it reads and writes with the new model."""
    h.embedder = embedder
    h.meta = EmbeddingMeta(model=embedder.model_id, dim=embedder.dim)
    h.meta_pending = False
    h.store.vector_model = embedder.model_id
    h.switched_to = None
    h.index = SpaceIndex(
        h.store, h.space, embedder.dim,
        snapshot_records=h.index.snapshot_records, compact_records=h.index.compact_records,
    )  # fmt: skip
    h.calibration = stored_calibration(h.store, embedder.model_id)
    if h.own_importance:
        h.importance = default_importance(embedder, h.calibration)


def cancel(h: Handle) -> int:
    """See :meth:`Memory.cancel_reembed`."""
    return h.store.reembed_cancel()
