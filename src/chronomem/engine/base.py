"""The engine's state and the small shared pieces: opening a store, checking the embedder,
reading by id, export and import. The verbs live in the modules stacked on top of it:
writing → reading → lifecycle → causal → :class:`~chronomem.engine.memory.Memory`."""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt

from chronomem.archive import ImportReport, export_space, import_space
from chronomem.clock import Clock, SystemClock
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
from chronomem.reflection.importance import HeuristicImportance, ImportanceScorer
from chronomem.retrieval.index import SpaceIndex
from chronomem.stores import open_store
from chronomem.stores.base import EmbeddingMeta, MemoryStore
from chronomem.writes import (
    require_text,
)

__all__: list[str] = []


F32 = npt.NDArray[np.float32]


def _default_embedder() -> Embedder:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


class _Base:
    """State shared by every part of the engine: the store, the embedder, the clock, the preset,
    the space, the in-memory index and the lock (one per handle)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: Embedder | None,
        clock: Clock,
        preset: ScoringConfig,
        space: str,
        write_gate: WriteGate | None = None,
        importance: ImportanceScorer | None = None,
        llm: LLMClient | None = None,
        reflection: ReflectionConfig | None = None,
        passages: bool = True,
    ) -> None:
        self._store = store
        self._passages = bool(passages)
        self._gate = write_gate or WriteGate()
        self._importance: ImportanceScorer = importance or HeuristicImportance()
        self._llm = llm
        self._reflection = reflection or ReflectionConfig()
        self._embedder = embedder
        self._clock = clock
        self._preset = preset
        self._space = space
        self._ids = IdFactory()
        self._lock = threading.RLock()
        self._meta = self._check_embedder(store.embedding_meta())
        self._index = SpaceIndex(store, space, self._meta.dim)
        self._closed = False

    @classmethod
    def open(
        cls,
        location: str | os.PathLike[str] | MemoryStore,
        *,
        embedder: Embedder | Literal["default"] | None = "default",
        clock: Clock | None = None,
        preset: str | ScoringConfig = "default",
        space: str = "default",
        synchronous: str = "FULL",
        write_gate: WriteGate | None = None,
        importance: ImportanceScorer | None = None,
        llm: LLMClient | None = None,
        reflection: ReflectionConfig | None = None,
        passages: bool = True,
    ) -> Self:
        """Open (or create) a store.

        Args:
            location: a file path, ``sqlite:///path``, or a store object.
            embedder: ``"default"`` (the bundled all-MiniLM-L6-v2, needs the ``embeddings``
                extra), an :class:`~chronomem.embedders.Embedder`, or ``None`` for lexical
                relevance plus caller-supplied vectors.
            clock: where "now" comes from; default :class:`~chronomem.clock.SystemClock`.
            preset: the default scoring preset name or a :class:`ScoringConfig`.
            space: the namespace inside the store; nothing crosses spaces.
            synchronous: SQLite durability, ``"FULL"`` (default) or ``"NORMAL"``.
            write_gate: the near-duplicate gate for facts and instructions (default
                :class:`~chronomem.config.WriteGate`).
            importance: scores records written without importance (default
                :class:`~chronomem.reflection.importance.HeuristicImportance`; or
                :class:`~chronomem.reflection.importance.LLMImportance`).
            llm: the model reflection uses when a call does not pass one.
            reflection: when and how to reflect (:class:`~chronomem.config.ReflectionConfig`).
            passages: also embed each sentence of a record of several sentences (with the
                embedder), so that a fact said in passing in a long record matches a question
                about it; presets with ``passages=True`` (``default``, ``current-facts``) take a
                record's dense relevance as the best of its own and its passages' cosines.
                ``False`` embeds each record once (faster writes).

        Raises:
            ConfigError: unknown preset, or the default embedder's extra is missing.
            EmbedderMismatchError: the store was built with another embedder.
        """
        config = resolve_preset(preset)
        require_text(space, "space")
        if clock is not None and not isinstance(clock, Clock):
            raise ConfigError(f"clock must have a now() method; got {clock!r}")
        chosen = _default_embedder() if isinstance(embedder, str) else embedder
        store = open_store(location, synchronous=synchronous)
        try:
            return cls(
                store,
                embedder=chosen,
                clock=clock or SystemClock(),
                preset=config,
                space=space,
                write_gate=write_gate,
                importance=importance,
                llm=llm,
                reflection=reflection,
                passages=passages,
            )
        except BaseException:
            store.close()
            raise

    def _check_embedder(self, meta: EmbeddingMeta) -> EmbeddingMeta:
        emb = self._embedder
        if emb is None:
            return meta
        if meta.dim is None:
            wanted = EmbeddingMeta(model=emb.model_id, dim=emb.dim)
            try:
                self._store.set_embedding_meta(wanted)
            except StoreError:  # another process set it first; check against theirs
                return self._check_embedder(self._store.embedding_meta())
            return wanted
        if meta.model != emb.model_id or meta.dim != emb.dim:
            built = (
                f"model {meta.model!r}" if meta.model else "caller-supplied vectors"
            ) + f" (dimension {meta.dim})"
            raise EmbedderMismatchError(
                f"{self._store.location} was built with {built}; refusing to mix in "
                f"{emb.model_id!r} (dimension {emb.dim}). Open it with the same embedder, or "
                f"with embedder=None to use lexical relevance and your own vectors",
                expected_model=meta.model,
                expected_dim=meta.dim,
                got_model=emb.model_id,
                got_dim=emb.dim,
            )
        return meta

    # -- lifecycle of the handle ----------------------------------------------------------
    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._close_handle()

    def _close_handle(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._store.close()

    def _require_open(self) -> None:
        if self._closed:
            raise StoreError("this Memory is closed")

    @property
    def space(self) -> str:
        return self._space

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def preset(self) -> ScoringConfig:
        return self._preset

    @property
    def embedder(self) -> Embedder | None:
        return self._embedder

    @property
    def store(self) -> MemoryStore:
        return self._store

    @property
    def dim(self) -> int | None:
        """The vector length of this store (``None`` until the first vector)."""
        return self._meta.dim

    def _fix_dim(self, dim: int) -> None:
        """The first caller-supplied vector fixes the store's dimension."""
        if self._meta.dim is None:
            meta = EmbeddingMeta(model=None, dim=dim)
            try:
                self._store.set_embedding_meta(meta)
            except StoreError:  # another process wrote the first vector meanwhile
                meta = self._store.embedding_meta()
                if meta.dim != dim:
                    raise InvalidInputError(
                        f"this store's vectors have dimension {meta.dim} (another process wrote "
                        f"first); got {dim}"
                    ) from None
            self._meta = meta
            self._index.set_dim(dim)

    def _audit(
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
        self._store.append_audit(self._space, [entry])

    def get(self, record_id: str) -> Record:
        """The record with this id, whatever its status.

        Raises:
            NotFoundError: no such record in this space.
        """
        with self._lock:
            self._require_open()
            found = self._store.get_records(self._space, [require_text(record_id, "record_id")])
        if not found:
            raise NotFoundError(
                f"no record {record_id!r} in space {self._space!r}", record_id=record_id
            )
        return found[0]

    def agents(self) -> list[str]:
        """Every agent holding records in this space, sorted."""
        with self._lock:
            self._require_open()
            return self._store.agents(self._space)

    def get_event(self, event_id: str) -> Event:
        """The event with this id. Raises :class:`NotFoundError`."""
        with self._lock:
            self._require_open()
            found = self._store.get_events(self._space, [require_text(event_id, "event_id")])
        if not found:
            raise NotFoundError(
                f"no event {event_id!r} in space {self._space!r}", record_id=event_id
            )
        return found[0]

    # -- export / import ------------------------------------------------------------------
    def export(self, path: str | os.PathLike[str]) -> int:
        """Write this space to a JSONL archive — every record with every field and its raw
        vector, then the audit log — and return the number of records. The file is replaced
        atomically; the same content gives the same bytes. See docs/storage.md."""
        with self._lock:
            self._require_open()
            return export_space(self._store, self._space, self._meta, path)

    def import_(self, path: str | os.PathLike[str]) -> ImportReport:
        """Load a JSONL archive into this space, ids preserved, in one transaction.

        Every line is validated and every reference (evidence, supersedes, superseded_by) must
        resolve to a record in the archive or already in this space. On any problem nothing is
        written and :class:`InvalidInputError` lists the problems by line.

        Raises:
            InvalidInputError: malformed lines or dangling references.
            ConflictError: an id in the archive already exists in the store.
            EmbedderMismatchError: the archive's vectors come from another embedder.
        """
        with self._lock:
            self._require_open()
            report, meta = import_space(self._store, self._space, self._meta, self._embedder, path)
            if meta != self._meta:
                self._meta = meta
                if meta.dim is not None:
                    self._index.set_dim(meta.dim)
            return report

    def stats(self) -> dict[str, Any]:
        """Counts per agent and kind, store location, schema version, embedder, size on disk."""
        with self._lock:
            self._require_open()
            out = self._store.stats(self._space)
        out["embedder"] = None if self._embedder is None else self._embedder.model_id
        out["preset"] = self._preset.name
        return out
