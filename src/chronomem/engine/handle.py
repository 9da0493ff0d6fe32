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
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast, get_args

from chronomem.checks import require_id, require_text, shown
from chronomem.clock import Clock, SystemClock, require_aware, to_micros
from chronomem.config import (
    CausalConfig,
    ReflectionConfig,
    ScoringConfig,
    WriteGate,
    resolve_preset,
)
from chronomem.embedders.base import Embedder
from chronomem.engine.touches import TouchWriter
from chronomem.errors import (
    ConfigError,
    ConflictError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from chronomem.lifecycle.rules import EXPIRED, expiry_closures, settled
from chronomem.llm.base import LLMClient
from chronomem.model.audit import AuditEntry, Closure
from chronomem.model.event import Event
from chronomem.model.ids import IdFactory
from chronomem.model.record import EvidenceStatus, Record
from chronomem.retrieval.query import Crisis
from chronomem.retrieval.space import SpaceIndex
from chronomem.stores import open_store
from chronomem.stores.base import EmbeddingMeta, MemoryStore
from chronomem.writing.anchors import EmbeddingImportance
from chronomem.writing.calibration import Calibration, calibration_key
from chronomem.writing.importance import HeuristicImportance, ImportanceScorer

__all__ = ["DEFAULT_PASSAGES", "PASSAGE_MODES", "Handle", "PassageMode", "open_handle"]

# How a record of several sentences is embedded (``Memory.open(passages=...)``): "sentences"
# embeds the whole record and each sentence on its own; "derived" embeds each sentence the model
# reads once and takes the record's vector as their length-weighted mean (docs/benchmarks.md).
PassageMode = Literal["sentences", "derived"]
PASSAGE_MODES: tuple[str, ...] = get_args(PassageMode)
DEFAULT_PASSAGES: PassageMode = "derived"


#: Crisis inputs kept per handle (``read._crisis``).
CRISES_KEPT = 8


@dataclass(slots=True, kw_only=True, eq=False)
class Handle:
    """What every verb works with. ``meta`` is the model and dimension of this store's vectors:
    the store's, or, before its first vector, the embedder's (``meta_pending``: the store does
    not record it yet — opening writes nothing; the first vector records it). It changes when
    the first vector fixes the dimension and when the store switches models (``reembed``: this
    handle's, which adopts the new embedder, or another's, noticed by :meth:`sync_model`), as
    does ``index`` then, and ``calibration`` / ``importance`` after ``calibrate``; the rest is
    set once."""

    store: MemoryStore
    space: str
    clock: Clock
    preset: ScoringConfig
    embedder: Embedder | None
    gate: WriteGate
    importance: ImportanceScorer
    llm: LLMClient | None
    reflection: ReflectionConfig
    passages: PassageMode | None  # None: no passages
    meta: EmbeddingMeta
    index: SpaceIndex
    #: The touches of this handle's reads, written in groups after the lock (engine/touches.py).
    touches: TouchWriter
    meta_pending: bool = False
    allow_missing_vectors: bool = False
    ids: IdFactory = field(default_factory=IdFactory)
    lock: threading.RLock = field(default_factory=threading.RLock)
    closed: bool = False
    #: The store's measured thresholds for its model (``Memory.calibrate``), if any.
    calibration: Calibration | None = None
    own_importance: bool = False  # the default scorer (not the caller's): calibration applies
    #: The model another process switched the store to (``reembed``) since this handle opened:
    #: it reads lexically and refuses vectors from then on (docs/design/reembed.md).
    switched_to: str | None = None
    _model_seq: int = -1  # the space's change_seq when the store's model was last compared
    #: The last crisis reads' causal inputs, each with what they hold for (event, graph_seq,
    #: model, calibrated threshold) and the causal config they were built for (``read._crisis``).
    crises: deque[tuple[tuple[object, ...], CausalConfig, Crisis]] = field(
        default_factory=lambda: deque(maxlen=CRISES_KEPT)
    )

    def sync_model(self) -> None:
        """Notice what another handle changed store-wide since the last call — a model switch
        it cut over (``reembed``), a calibration it measured (``calibrate``) — in this process
        or another (a replica): one ``change_seq`` query, and metadata queries only when the
        space changed (both bump every space's ``change_seq``)."""
        watch_model = self.meta.dim is not None and not self.meta_pending
        if self.switched_to is not None or (not watch_model and self.embedder is None):
            return
        seq = self.store.change_seq(self.space)
        if seq == self._model_seq:
            return
        self._model_seq = seq
        if watch_model:
            stored = self.store.embedding_meta()
            if stored.model is not None and (stored.model, stored.dim) != (
                self.meta.model,
                self.meta.dim,
            ):
                self.switched_to = stored.model
                self.meta = stored
                self.index = self.index.renewed(stored.dim)
                return
        self.use_calibration(stored_calibration(self.store, self.meta.model))

    def use_calibration(self, calibration: Calibration | None) -> None:
        """Take the store's measured thresholds for its model (and, with the default importance
        scorer, the importance constants fitted with them)."""
        if calibration == self.calibration:
            return
        self.calibration = calibration
        if self.own_importance and self.embedder is not None:
            self.importance = default_importance(self.embedder, calibration)

    def require_model(self) -> None:
        """Before a write that embeds: refuse once the store switched to another model."""
        self.sync_model()
        if self.switched_to is not None and self.embedder is not None:
            raise EmbedderMismatchError(
                f"{self.store.location} switched to {self.switched_to!r} (reembed) after this "
                f"handle opened with {self.embedder.model_id!r}; reopen it with the new model",
                expected_model=self.switched_to, expected_dim=self.meta.dim,
                got_model=self.embedder.model_id, got_dim=self.embedder.dim,
            )  # fmt: skip

    def calibrated(self, what: Literal["gate", "association"]) -> float | None:
        """The model's measured ``what`` threshold; ``None``: not calibrated (or another
        model's calibration)."""
        cal = self.calibration
        if cal is None or cal.model != self.meta.model:
            return None
        return cal.gate if what == "gate" else cal.association

    def require_open(self) -> None:
        if self.closed:
            raise StoreError("this Memory is closed")

    def now(self) -> datetime:
        """The clock's now, checked once per call."""
        return require_aware(self.clock.now(), "clock.now()")

    def fix_dim(self, dim: int) -> None:
        """Record the store's model and dimension with its first vector: the embedder's, or the
        dimension alone for caller-supplied vectors. Another process may have recorded them
        first; this handle adopts theirs when they match and refuses otherwise."""
        if self.meta.dim is not None and not self.meta_pending:
            return
        wanted = EmbeddingMeta(model=self.meta.model if self.meta_pending else None, dim=dim)
        try:
            self.store.set_embedding_meta(wanted)
        except ConflictError:  # another process wrote the first vector meanwhile
            wanted = self.store.embedding_meta()
            if self.embedder is not None:
                _check_embedder(self.store, self.embedder)
            elif wanted.dim != dim:
                raise InvalidInputError(
                    f"this store's vectors have dimension {wanted.dim} (another process wrote "
                    f"first); got {dim}",
                    field="embedding",
                ) from None
        self.meta_pending = False
        self.adopt(wanted)

    def check_missing_vectors(self, what: str) -> None:
        """Refuse to write records without vectors (``what`` names them) into a store built
        with an embedding model when this handle has no embedder: they would silently never
        match by meaning. ``allow_missing_vectors`` (asked for at open) lets them through."""
        if self.embedder is None and self.meta.model is not None and not self.allow_missing_vectors:
            raise InvalidInputError(
                f"{what} no vector, but this store's records have {self.meta.dim}-d vectors from "
                f"{self.meta.model!r}: written without one it would never match by meaning. Open "
                f"the store with that embedder, pass embedding=, or open it with "
                f"allow_missing_vectors=True and embed such records later with embed_records()",
                field="embedding",
            )

    def stored_meta(self) -> EmbeddingMeta:
        """What the store records (nothing while ``meta_pending``)."""
        return EmbeddingMeta(model=None, dim=None) if self.meta_pending else self.meta

    def adopt(self, meta: EmbeddingMeta) -> None:
        """Take the store's new embedding metadata (after a first vector or an import)."""
        if meta != self.meta:
            self.meta = meta
            if meta.dim is not None:
                self.index.set_dim(meta.dim)

    def record(self, record_id: str) -> Record:
        """The record with this id, whatever its status; :class:`NotFoundError` otherwise."""
        found = self.records([require_id(record_id, "record_id")])
        if not found:
            raise NotFoundError(
                f"no record {shown(record_id)} in space {self.space!r}", record_id=record_id
            )
        return found[0]

    def records(self, ids: Sequence[str]) -> list[Record]:
        """The records with these ids that exist, in that order, as they stand now: one whose
        time to live ran out shows the close the next write stores (``rules.settled``)."""
        return settled(self.store.get_records(self.space, ids), self.now())

    @contextmanager
    def writing(self, now: datetime) -> Iterator[None]:
        """One write transaction of the space, which first stores the close of every record
        whose time to live ran out by ``now`` (:meth:`expire_due`)."""
        with self.store.write():
            self.expire_due(now)
            yield

    def expire_due(self, now: datetime) -> list[str]:
        """Close, audited, each open record whose ``expires_at`` is at or before ``now``, at its
        own expiry (every read treated it as closed from then); returns their ids."""
        if not self.store.expiring(self.space, to_micros(now)):
            return []
        with self.store.write():
            # again under the space's write lock: another process may have stored them meanwhile
            self.store.lock_space(self.space)
            due = self.store.expiring(self.space, to_micros(now))
            closures = expiry_closures(self.store.get_records(self.space, due))
            if not closures:
                return []
            self.store.close_records(self.space, closures)
            ids = [c.record_id for c in closures]
            self.store.flag_evidence(self.space, ids, EvidenceStatus.SUPERSEDED.value)
            entries = [_expiry_entry(c, now) for c in closures]
            self.store.append_audit(self.space, entries)
        return ids

    def event(self, event_id: str) -> Event:
        """The event with this id; :class:`NotFoundError` otherwise."""
        found = self.store.get_events(self.space, [require_id(event_id, "event_id")])
        if not found:
            raise NotFoundError(
                f"no event {shown(event_id)} in space {self.space!r}", event_id=event_id
            )
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


def _expiry_entry(closure: Closure, now: datetime) -> AuditEntry:
    """The audit entry of a record closed by its time to live."""
    expired_at = closure.superseded_at.isoformat()
    return AuditEntry(
        seq=0, at=now, action="close", record_id=closure.record_id, actor="ttl",
        reason=EXPIRED, detail={"expires_at": expired_at},
    )  # fmt: skip


def _default_embedder() -> Embedder:
    from chronomem.embedders.default import default_embedder

    return default_embedder()


def default_importance(
    embedder: Embedder | None, calibration: Calibration | None = None
) -> ImportanceScorer:
    """Without ``importance=``: anchor similarity with the Memory's embedder (with its measured
    constants, when ``calibration`` is that model's and has them), else keywords."""
    if embedder is None:
        return HeuristicImportance()
    if calibration is None or calibration.model != embedder.model_id or not calibration.importance:
        return EmbeddingImportance(embedder)
    return EmbeddingImportance(embedder, calibration=calibration.importance)


def stored_calibration(store: MemoryStore, model: str | None) -> Calibration | None:
    """The calibration the store holds for ``model`` (``Memory.calibrate``), if any."""
    raw = None if model is None else store.meta_value(calibration_key(model))
    return None if raw is None else Calibration.from_json(raw)


def _check_embedder(store: MemoryStore, embedder: Embedder | None) -> EmbeddingMeta:
    """The store's embedding metadata; a store built with another model or dimension than
    ``embedder`` is refused. Reads only: a store without vectors records the embedder's
    model with its first vector (:meth:`Handle.fix_dim`)."""
    meta = store.embedding_meta()
    if embedder is None or meta.dim is None:
        return meta
    if meta.model != embedder.model_id or meta.dim != embedder.dim:
        switch = store.reembed_state()
        if switch is not None and switch.model == embedder.model_id:
            raise EmbedderMismatchError(
                f"{store.location} is switching from {meta.model!r} to {switch.model!r} "
                f"({switch.done} of {switch.total} vectors made since {switch.started}); until "
                f"the cut-over open it with {meta.model!r}, or finish the switch "
                f"(Memory.reembed, chronomem reembed)",
                expected_model=meta.model, expected_dim=meta.dim,
                got_model=embedder.model_id, got_dim=embedder.dim,
            )  # fmt: skip
        built = (
            f"model {meta.model!r}" if meta.model else "caller-supplied vectors"
        ) + f" (dimension {meta.dim})"
        raise EmbedderMismatchError(
            f"{store.location} was built with {built}; refusing to mix in "
            f"{embedder.model_id!r} (dimension {embedder.dim}). Open it with the same embedder, "
            f"or with embedder=None to use lexical relevance and your own vectors, or switch "
            f"the store to the new model (Memory.reembed, chronomem reembed)",
            expected_model=meta.model,
            expected_dim=meta.dim,
            got_model=embedder.model_id,
            got_dim=embedder.dim,
        )
    return meta


def _check_options(
    *,
    embedder: object,
    write_gate: object,
    importance: object,
    llm: object,
    reflection: object,
    flags: Mapping[str, object],
) -> None:
    """Each option of :meth:`Memory.open` is of its type (a wrong one would fail much later,
    untyped)."""
    if embedder != "default" and not (embedder is None or isinstance(embedder, Embedder)):
        raise ConfigError(
            f"embedder must be 'default', None or an Embedder (model_id, dim, embed()); "
            f"got {embedder!r}"
        )
    for name, value, kind in (
        ("write_gate", write_gate, WriteGate),
        ("importance", importance, ImportanceScorer),
        ("llm", llm, LLMClient),
        ("reflection", reflection, ReflectionConfig),
    ):
        if value is not None and not isinstance(value, kind):
            raise ConfigError(f"{name} must be a {kind.__name__}; got {value!r}")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false; got {value!r}")


def _passage_mode(value: object) -> PassageMode | None:
    """``Memory.open(passages=...)``: ``True`` is the default mode, ``False`` none."""
    if value is True:
        return DEFAULT_PASSAGES
    if value is False:
        return None
    if isinstance(value, str) and value in PASSAGE_MODES:
        return cast(PassageMode, value)
    raise ConfigError(
        f"passages must be true, false or one of {', '.join(PASSAGE_MODES)}; got {value!r}"
    )


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
    passages: bool | str,
    create: bool,
    allow_missing_vectors: bool,
    index_snapshot: int | None,
    compact_vectors: int | None,
) -> Handle:
    """Open (or create) the store and build the handle (see :meth:`Memory.open`)."""
    config = resolve_preset(preset)
    require_text(space, "space")
    if clock is not None and not isinstance(clock, Clock):
        raise ConfigError(f"clock must have a now() method; got {clock!r}")
    _check_options(
        embedder=embedder, write_gate=write_gate, importance=importance, llm=llm,
        reflection=reflection,
        flags={"create": create, "allow_missing_vectors": allow_missing_vectors},
    )  # fmt: skip
    mode = _passage_mode(passages)
    for name, value in (("index_snapshot", index_snapshot), ("compact_vectors", compact_vectors)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ConfigError(f"{name} must be a number of records >= 0 or None; got {value!r}")
    chosen = _default_embedder() if isinstance(embedder, str) else embedder
    store = open_store(location, synchronous=synchronous, create=create)
    try:
        meta = _check_embedder(store, chosen)
        pending = chosen is not None and meta.dim is None
        if pending:
            assert chosen is not None
            meta = EmbeddingMeta(model=chosen.model_id, dim=chosen.dim)
        calibration = stored_calibration(store, meta.model)
        store.vector_model = meta.model
        return Handle(
            store=store,
            space=space,
            clock=clock or SystemClock(),
            preset=config,
            embedder=chosen,
            gate=write_gate or WriteGate(),
            importance=importance or default_importance(chosen, calibration),
            own_importance=importance is None,
            calibration=calibration,
            llm=llm,
            reflection=reflection or ReflectionConfig(),
            passages=mode,
            meta=meta,
            meta_pending=pending,
            allow_missing_vectors=allow_missing_vectors,
            index=SpaceIndex(
                store,
                space,
                meta.dim,
                snapshot_records=index_snapshot,
                compact_records=compact_vectors,
            ),
            touches=TouchWriter(store, space),
        )
    except BaseException:
        store.close()
        raise
