"""The engine's shared state: one :class:`Handle` per open :class:`~chronomem.Memory`.

A handle holds the store, the embedder, the clock, the preset, the space, the in-memory index
and the lock, plus the few helpers every verb module needs (the embedder check, the store's
vector dimension, lookups by id, audit entries). The verb modules (``write``, ``read``,
``lifecycle``, ``graph``, ``reflect``, ``transfer``) are plain functions over a handle; the
facade takes the lock and reads the clock before calling them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from chronomem.checks import require_text
from chronomem.clock import Clock, SystemClock, require_aware
from chronomem.config import ReflectionConfig, ScoringConfig, WriteGate, resolve_preset
from chronomem.embedders.base import Embedder
from chronomem.errors import (
    ConfigError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from chronomem.llm.base import LLMClient
from chronomem.model.audit import AuditEntry
from chronomem.model.event import Event
from chronomem.model.ids import IdFactory
from chronomem.model.record import Record
from chronomem.retrieval.index import SpaceIndex
from chronomem.stores import open_store
from chronomem.stores.base import EmbeddingMeta, MemoryStore
from chronomem.writing.importance import HeuristicImportance, ImportanceScorer

__all__ = ["Handle", "open_handle"]


@dataclass(slots=True, kw_only=True, eq=False)
class Handle:
    """What every verb works with. ``meta`` (the store's model and dimension) changes when the
    first vector fixes the dimension; everything else is set once."""

    store: MemoryStore
    space: str
    clock: Clock
    preset: ScoringConfig
    embedder: Embedder | None
    gate: WriteGate
    importance: ImportanceScorer
    llm: LLMClient | None
    reflection: ReflectionConfig
    passages: bool
    meta: EmbeddingMeta
    index: SpaceIndex
    ids: IdFactory = field(default_factory=IdFactory)
    lock: threading.RLock = field(default_factory=threading.RLock)
    closed: bool = False

    def require_open(self) -> None:
        if self.closed:
            raise StoreError("this Memory is closed")

    def now(self) -> datetime:
        """The clock's now, checked once per call."""
        return require_aware(self.clock.now(), "clock.now()")

    def fix_dim(self, dim: int) -> None:
        """The first vector fixes the store's dimension (a second handle adopts the first's)."""
        if self.meta.dim is not None:
            return
        meta = EmbeddingMeta(model=None, dim=dim)
        try:
            self.store.set_embedding_meta(meta)
        except StoreError:  # another process wrote the first vector meanwhile
            meta = self.store.embedding_meta()
            if meta.dim != dim:
                raise InvalidInputError(
                    f"this store's vectors have dimension {meta.dim} (another process wrote "
                    f"first); got {dim}"
                ) from None
        self.adopt(meta)

    def adopt(self, meta: EmbeddingMeta) -> None:
        """Take the store's new embedding metadata (after a first vector or an import)."""
        if meta != self.meta:
            self.meta = meta
            if meta.dim is not None:
                self.index.set_dim(meta.dim)

    def record(self, record_id: str) -> Record:
        """The record with this id, whatever its status; :class:`NotFoundError` otherwise."""
        found = self.store.get_records(self.space, [require_text(record_id, "record_id")])
        if not found:
            raise NotFoundError(
                f"no record {record_id!r} in space {self.space!r}", record_id=record_id
            )
        return found[0]

    def event(self, event_id: str) -> Event:
        """The event with this id; :class:`NotFoundError` otherwise."""
        found = self.store.get_events(self.space, [require_text(event_id, "event_id")])
        if not found:
            raise NotFoundError(f"no event {event_id!r} in space {self.space!r}", event_id=event_id)
        return found[0]

    def audit(
        self,
        at: datetime,
        action: str,
        record_id: str,
        actor: str | None,
        reason: str | None,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        entry = AuditEntry(
            seq=0, at=at, action=action, record_id=record_id, actor=actor, reason=reason,
            detail=detail or {},
        )  # fmt: skip
        self.store.append_audit(self.space, [entry])


def _default_embedder() -> Embedder:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _check_embedder(store: MemoryStore, embedder: Embedder | None) -> EmbeddingMeta:
    """The store's embedding metadata, set from ``embedder`` on a store without vectors; a store
    built with another model or dimension is refused."""
    meta = store.embedding_meta()
    if embedder is None:
        return meta
    if meta.dim is None:
        wanted = EmbeddingMeta(model=embedder.model_id, dim=embedder.dim)
        try:
            store.set_embedding_meta(wanted)
        except StoreError:  # another process set it first; check against theirs
            return _check_embedder(store, embedder)
        return wanted
    if meta.model != embedder.model_id or meta.dim != embedder.dim:
        built = (
            f"model {meta.model!r}" if meta.model else "caller-supplied vectors"
        ) + f" (dimension {meta.dim})"
        raise EmbedderMismatchError(
            f"{store.location} was built with {built}; refusing to mix in "
            f"{embedder.model_id!r} (dimension {embedder.dim}). Open it with the same embedder, "
            f"or with embedder=None to use lexical relevance and your own vectors",
            expected_model=meta.model,
            expected_dim=meta.dim,
            got_model=embedder.model_id,
            got_dim=embedder.dim,
        )
    return meta


def open_handle(
    location: str | os.PathLike[str] | MemoryStore,
    *,
    embedder: Embedder | Literal["default"] | None,
    clock: Clock | None,
    preset: str | ScoringConfig,
    space: str,
    synchronous: str,
    write_gate: WriteGate | None,
    importance: ImportanceScorer | None,
    llm: LLMClient | None,
    reflection: ReflectionConfig | None,
    passages: bool,
) -> Handle:
    """Open (or create) the store and build the handle (see :meth:`Memory.open`)."""
    config = resolve_preset(preset)
    require_text(space, "space")
    if clock is not None and not isinstance(clock, Clock):
        raise ConfigError(f"clock must have a now() method; got {clock!r}")
    chosen = _default_embedder() if isinstance(embedder, str) else embedder
    store = open_store(location, synchronous=synchronous)
    try:
        meta = _check_embedder(store, chosen)
        return Handle(
            store=store,
            space=space,
            clock=clock or SystemClock(),
            preset=config,
            embedder=chosen,
            gate=write_gate or WriteGate(),
            importance=importance or HeuristicImportance(),
            llm=llm,
            reflection=reflection or ReflectionConfig(),
            passages=bool(passages),
            meta=meta,
            index=SpaceIndex(store, space, meta.dim),
        )
    except BaseException:
        store.close()
        raise
