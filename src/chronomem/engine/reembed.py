"""Switching a store to another embedding model while it serves (docs/design/reembed.md)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from datetime import datetime

from chronomem.checks import flag, positive_int
from chronomem.embedders.base import Embedder
from chronomem.engine.handle import Handle, default_importance, stored_calibration
from chronomem.engine.write import embed_texts
from chronomem.errors import ConfigError, InvalidInputError
from chronomem.stores.base import EmbeddingMeta
from chronomem.stores.reembedding import Pending, PendingVector
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
    """The target model's vectors of ``rows`` (checked by :func:`embed_texts`): records as their
    ``read_text``, with passages when they had them; events as their text, without. One
    embedder call per group."""
    out: list[PendingVector] = []
    groups = (
        ("r", True, target.passages or "derived"),
        ("r", False, None),
        ("e", False, None),
    )
    for kind, with_passages, mode in groups:
        group = [r for r in rows if r.kind == kind and r.passages == with_passages]
        if not group:
            continue
        wholes, parts = embed_texts(
            replace(target, passages=mode),
            [r.text if kind == "e" else spoken(r.text, r.speaker) for r in group],
            [True] * len(group),
            progress=False,
        )
        out += [
            PendingVector(kind=kind, pk=r.pk, embedding=v, passages=p)
            for r, v, p in zip(group, wholes, parts, strict=True)
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
    h.index = h.index.renewed(embedder.dim)
    h.calibration = stored_calibration(h.store, embedder.model_id)
    if h.own_importance:
        h.importance = default_importance(embedder, h.calibration)


def cancel(h: Handle) -> int:
    """See :meth:`Memory.cancel_reembed`."""
    return h.store.reembed_cancel()
