"""The ``Memory`` facade: wires the clock, the store, the embedder and the scoring config.

Reads follow DESIGN §2; writes DESIGN §3. The engine asks its clock for "now" once per call and
passes instants down; scoring never reads a clock.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from chronomem.archive import ImportReport, export_space, import_space
from chronomem.clock import Clock, SystemClock, require_aware, to_micros
from chronomem.config import ScoringConfig, WriteGate, resolve_preset
from chronomem.context.block import (
    ChainLink,
    ContextBlock,
    TokenCounter,
    approximate_tokens,
    build_block,
    chain_links,
)
from chronomem.embedders.base import Embedder, as_vector
from chronomem.errors import (
    ConfigError,
    ConflictError,
    DependentsExistError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from chronomem.graph.ancestry import Reach, traverse
from chronomem.graph.crisis import causal_events
from chronomem.lifecycle.rules import plan_closures, signal_value
from chronomem.model.audit import AuditEntry, ForgetResult
from chronomem.model.event import Ancestor, Event, EventKind, Link, Provenance
from chronomem.model.ids import IdFactory
from chronomem.model.record import EvidenceStatus, Hit, Kind, Record, Sensitivity, WriteResult
from chronomem.retrieval.gate import find_duplicate, same_batch_duplicate
from chronomem.retrieval.index import SpaceIndex
from chronomem.retrieval.recall import Crisis, Query, search
from chronomem.stores.base import EmbeddingMeta, MemoryStore, StoredRecord
from chronomem.stores.sqlite import SQLiteStore
from chronomem.writes import (
    DEFAULT_IMPORTANCE,
    REMEMBER_FIELDS,
    Draft,
    build_drafts,
    metadata_dict,
    require_text,
    string_tuple,
    to_enum,
)

__all__ = ["DEFAULT_IMPORTANCE", "Memory"]


def _optional_instant(value: object, name: str) -> datetime | None:
    return None if value is None else require_aware(value, name)


F32 = npt.NDArray[np.float32]


def _open_store(location: str | os.PathLike[str] | MemoryStore, synchronous: str) -> MemoryStore:
    if not isinstance(location, str | os.PathLike):
        return location
    text = os.fspath(location)
    if text.startswith(("postgresql://", "postgres://")):
        raise ConfigError("PostgreSQL stores are not available in this version of chronomem")
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    elif text.startswith("sqlite://"):
        raise ConfigError(f"use sqlite:///path/to/file (three slashes); got {text!r}")
    if not text:
        raise ConfigError("a store path is required")
    return SQLiteStore(Path(text), synchronous=synchronous)


def _default_embedder() -> Embedder:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


class Memory:
    """A memory engine over one store and one space.

    Open with :meth:`open`; use as a context manager or call :meth:`close`. Not safe for
    concurrent use from several threads without external locking beyond what it does itself
    (each public call holds an internal lock). Several processes may open the same store.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        embedder: Embedder | None,
        clock: Clock,
        preset: ScoringConfig,
        space: str,
        write_gate: WriteGate | None = None,
    ) -> None:
        self._store = store
        self._gate = write_gate or WriteGate()
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
    ) -> Memory:
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

        Raises:
            ConfigError: unknown preset, or the default embedder's extra is missing.
            EmbedderMismatchError: the store was built with another embedder.
        """
        config = resolve_preset(preset)
        require_text(space, "space")
        if clock is not None and not isinstance(clock, Clock):
            raise ConfigError(f"clock must have a now() method; got {clock!r}")
        chosen = _default_embedder() if isinstance(embedder, str) else embedder
        store = _open_store(location, synchronous)
        try:
            return cls(
                store,
                embedder=chosen,
                clock=clock or SystemClock(),
                preset=config,
                space=space,
                write_gate=write_gate,
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
    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        :data:`DEFAULT_IMPORTANCE`. ``embedding`` supplies the vector instead of the embedder;
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
        return self._write(batch, progress=progress, actor=actor, reason=None)

    def _write(
        self,
        batch: list[dict[str, Any]],
        *,
        progress: bool,
        actor: str | None,
        reason: str | None,
    ) -> list[WriteResult]:
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
            drafts = self._embed_missing(drafts, progress=progress)
            with self._store.write():
                return self._store_drafts(drafts, now=now, actor=actor, reason=reason)

    def _embed_missing(self, drafts: list[Draft], *, progress: bool) -> list[Draft]:
        """Fill in vectors with the embedder (one batched call) and fix the store's dimension."""
        missing = [i for i, d in enumerate(drafts) if d.embedding is None]
        if self._embedder is not None and missing:
            texts = [drafts[i].record.text for i in missing]
            vectors = self._embedder.embed(texts, progress=progress)
            drafts = list(drafts)
            for i, vector in zip(missing, vectors, strict=True):
                record = replace(drafts[i].record, has_embedding=True)
                drafts[i] = Draft(record, np.asarray(vector, np.float32), drafts[i].supersedes)
        given = [d.embedding for d in drafts if d.embedding is not None]
        if given:
            self._fix_dim(int(given[0].shape[0]))
        return drafts

    def _fix_dim(self, dim: int) -> None:
        """The first caller-supplied vector fixes the store's dimension."""
        if self._meta.dim is None:
            meta = EmbeddingMeta(model=None, dim=dim)
            self._store.set_embedding_meta(meta)
            self._meta = meta
            self._index.set_dim(dim)

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
            self._space, [StoredRecord(record=d.record, embedding=d.embedding) for d in accepted]
        )
        self._store.close_records(self._space, closures)
        if entries:
            self._store.append_audit(self._space, entries)
        return results

    # -- lifecycle ------------------------------------------------------------------------
    def supersede(
        self,
        old_ids: str | Sequence[str],
        text: str,
        *,
        reason: str | None = None,
        actor: str | None = None,
        **fields: Any,
    ) -> WriteResult:
        """Store ``text`` as the replacement of ``old_ids`` and close them, atomically.

        Each old record gets ``status="superseded"``, ``superseded_by`` the new id,
        ``superseded_at`` now, and its world-time window ends where the new record's begins
        (``valid_from``, default its ``occurred_at``). Old records stay readable by id, in
        :meth:`history`, with ``include_history=True`` and at earlier ``as_of``. The new record
        takes ``fields`` like :meth:`remember` (agent, kind, ... default to the first old
        record's agent, kind and domain) and skips the write gate.

        Raises:
            NotFoundError: an old id does not exist. ConflictError: one is already closed.
        """
        ids = [old_ids] if isinstance(old_ids, str) else list(old_ids)
        if not ids:
            raise InvalidInputError("supersede needs at least one old record id", field="old_ids")
        first = self.get(ids[0])
        fields.setdefault("agent", first.agent)
        fields.setdefault("kind", first.kind)
        fields.setdefault("domain", first.domain)
        unknown = set(fields) - REMEMBER_FIELDS
        if unknown:
            raise InvalidInputError(f"unknown field(s) for supersede: {sorted(unknown)}")
        item = {
            k: v for k, v in {**fields, "text": text, "supersedes": ids}.items() if v is not None
        }
        result = self._write([item], progress=False, actor=actor, reason=reason)[0]
        return result

    @overload
    def close(self) -> None: ...

    @overload
    def close(
        self,
        record_id: str,
        reason: str,
        *,
        valid_until: datetime | None = None,
        actor: str | None = None,
    ) -> Record: ...

    def close(
        self,
        record_id: str | None = None,
        reason: str | None = None,
        *,
        valid_until: datetime | None = None,
        actor: str | None = None,
    ) -> Record | None:
        """``close()``: close this handle (every acknowledged write is already durable).

        ``close(record_id, reason)``: close a record without a successor — it stopped applying
        at ``valid_until`` (default now). It stays readable by id, in history and in reads of
        earlier instants; the reason is kept on the record and in the audit log.

        Raises:
            ConflictError: the record is already closed or superseded.
        """
        if record_id is None:
            if reason is not None:
                raise InvalidInputError("close(record_id, reason): the record id is missing")
            with self._lock:
                if not self._closed:
                    self._closed = True
                    self._store.close()
            return None
        reason = require_text(reason, "reason")
        until = _optional_instant(valid_until, "valid_until")
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                record = self.get(record_id)
                plans = plan_closures(
                    [record], at=now, successor=None, reason=reason, valid_until=until
                )
                self._store.close_records(self._space, plans)
                self._audit(now, "close", record_id, actor, reason)
            return self.get(record_id)

    def history(self, record_id: str) -> list[Record]:
        """The whole supersession chain through ``record_id``, both directions, oldest first.
        Purged links are skipped."""
        start = self.get(record_id)
        seen = {start.id: start}
        frontier = [start]
        with self._lock:
            while frontier:
                linked = {
                    i
                    for r in frontier
                    for i in (*r.supersedes, *([r.superseded_by] if r.superseded_by else ()))
                    if i not in seen
                }
                frontier = self._store.get_records(self._space, sorted(linked))
                seen.update((r.id, r) for r in frontier)
        return sorted(seen.values(), key=lambda r: (r.recorded_at, r.id))

    def verify(
        self, record_id: str, *, actor: str | None = None, reason: str | None = None
    ) -> Record:
        """Confirm the record is still true: ``last_verified_at = now``, which resets its
        staleness decay."""
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                self.get(record_id)
                self._store.set_verified(self._space, record_id, to_micros(now))
                self._audit(now, "verify", record_id, actor, reason)
            return self.get(record_id)

    def feedback(
        self,
        record_id: str,
        signal: str | float,
        reason: str | None = None,
        *,
        actor: str | None = None,
    ) -> Record:
        """Rate a record: ``"helpful"`` (+1), ``"harmful"`` (-1) or a number in [-1, 1].

        Ratings are appended to a log; their sum sets the feedback factor (DESIGN §2 step 5): a
        harmful rating ranks the record below an otherwise equal alternative. The text never
        changes.
        """
        value = signal_value(signal)
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                self.get(record_id)
                total = self._store.add_feedback(self._space, record_id, value)
                detail = {"signal": value, "score": total}
                self._audit(now, "feedback", record_id, actor, reason, detail)
            return self.get(record_id)

    def forget(
        self,
        record_id: str,
        reason: str,
        *,
        purge: bool = False,
        actor: str | None = None,
    ) -> ForgetResult:
        """Hard-delete a record — for secrets, personal data, and noise nothing depends on.

        A record cited as evidence or in a supersession chain is not deleted: the call raises
        :class:`DependentsExistError` naming the dependants (close it instead). Records marked
        ``secret`` or ``personal``, or ``purge=True``, are purged whatever depends on them: row,
        vector and full-text entries are deleted, the full-text index is rewritten, freed pages
        are zeroed and the write-ahead log is checkpointed and truncated, so the text is gone
        from the files; records citing it are flagged ``evidence_missing``. The audit log keeps
        the id and the reason, never the content.
        """
        require_text(reason, "reason")
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                record = self.get(record_id)
                purge = purge or record.sensitivity is not Sensitivity.NORMAL
                dependants = self._store.dependants(self._space, record_id)
                if dependants and not purge:
                    named = ", ".join(f"{i} ({why})" for i, why in dependants)
                    raise DependentsExistError(
                        f"cannot forget {record_id}: {named} depend(s) on it; close it instead, "
                        f"or purge it if it must go",
                        record_id=record_id,
                        dependants=[i for i, _ in dependants],
                    )
                flagged = (
                    self._store.flag_evidence(
                        self._space, [record_id], EvidenceStatus.MISSING.value
                    )
                    if purge
                    else []
                )
                self._store.delete_records(self._space, [record_id], purge=purge)
                action = "purge" if purge else "forget"
                self._audit(now, action, record_id, actor, reason, {"flagged": flagged})
            scrubbed = self._store.scrub() if purge else True
            return ForgetResult(
                record_id=record_id, purged=purge, flagged=tuple(flagged), scrubbed=scrubbed
            )

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

    def audit(self, record_id: str | None = None) -> list[AuditEntry]:
        """The audit log of this space (or of one record), oldest first."""
        with self._lock:
            self._require_open()
            return self._store.audit(self._space, record_id)

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

    # -- reads ----------------------------------------------------------------------------
    def _query_vector(
        self, query: str, query_embedding: object, config: ScoringConfig
    ) -> F32 | None:
        if query_embedding is not None:
            vector = as_vector(query_embedding, dim=self._meta.dim, name="query_embedding")
        elif self._embedder is not None and config.relevance.value != "lexical":
            vector = self._embedder.embed([query])[0]
        else:
            return None
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    def _build_query(
        self,
        query: str,
        vector: F32 | None,
        *,
        agent: str | None,
        agents: Sequence[str] | None,
        k: int,
        as_of: datetime,
        explain: bool,
        kinds: Iterable[Kind | str] | None,
        include_history: bool,
        valid_at: datetime | None,
        config: ScoringConfig,
        crisis: Crisis | None,
    ) -> Query:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive integer; got {k!r}", field="k")
        if agent is not None and agents is not None:
            raise InvalidInputError("pass agent= or agents=, not both", field="agents")
        if agent is not None:
            chosen: tuple[str, ...] = (require_text(agent, "agent"),)
        elif agents is not None:
            chosen = tuple(dict.fromkeys(string_tuple(agents, "agents")))
        else:
            chosen = tuple(self._store.agents(self._space))
        return Query(
            text=query,
            vector=vector,
            agents=chosen,
            k=k,
            as_of=require_aware(as_of, "as_of"),
            config=config,
            kinds=None if kinds is None else frozenset(to_enum(Kind, x, "kinds") for x in kinds),
            include_history=bool(include_history),
            valid_at=_optional_instant(valid_at, "valid_at"),
            explain=explain,
            crisis=crisis,
        )

    def recall(
        self,
        query: str,
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        k: int = 10,
        as_of: datetime | None = None,
        touch: bool = True,
        query_embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
        explain: bool = False,
        kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False,
        valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None,
        crisis: str | None = None,
    ) -> list[Hit]:
        """The top ``k`` records for ``query`` at ``as_of`` (default: now), best first.

        Args:
            agent / agents: whose memories to read; neither means every agent in the space.
                Multi-agent reads collapse records with the same normalised text into one hit
                listing every holder.
            touch: set ``last_accessed_at = as_of`` on the returned records, durably, in this
                call (never moving it backwards). ``False`` is strictly read-only.
            query_embedding: a precomputed query vector instead of the embedder's.
            explain: attach a :class:`~chronomem.model.Breakdown` to each hit.
            kinds: only these kinds are candidates.
            include_history: closed and superseded records are candidates too.
            valid_at: the world-time instant for validity windows (default ``as_of``).
            preset: override the default preset for this call.
            crisis: an event id: records associated with the crisis's causal ancestors are
                lifted even when their text does not resemble the query (DESIGN §4; the fusion
                is the preset's ``causal`` config). With an empty ``query`` the crisis's own text
                is the query.

        Hits show records as they were scored, before this call's touch. An empty candidate
        set returns ``[]``.
        """
        return self.recall_many(
            [query],
            agent=agent,
            agents=agents,
            k=k,
            as_of=as_of,
            touch=touch,
            query_embeddings=None if query_embedding is None else [query_embedding],
            explain=explain,
            kinds=kinds,
            include_history=include_history,
            valid_at=valid_at,
            preset=preset,
            crisis=crisis,
        )[0]

    def peek(self, query: str, **kwargs: Any) -> list[Hit]:
        """:meth:`recall` without touching: strictly read-only."""
        kwargs["touch"] = False
        return self.recall(query, **kwargs)

    def recall_many(
        self,
        queries: Sequence[str],
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        k: int = 10,
        as_of: datetime | None = None,
        touch: bool = True,
        query_embeddings: Sequence[Any] | None = None,
        explain: bool = False,
        kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False,
        valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None,
        sequential: bool | None = None,
        crisis: str | None = None,
    ) -> list[list[Hit]]:
        """Answer a batch of queries (one list of hits per query, in order).

        By default every query is scored against the same snapshot and the union of the hits is
        touched once at the end. ``sequential=True`` touches after each query, so a later query
        sees the earlier ones' touches — the Generative Agents code's behaviour, and the
        ``generative-agents-code`` preset's default. Queries are embedded in one batch.
        """
        config = self._preset if preset is None else resolve_preset(preset)
        if isinstance(queries, str):
            raise InvalidInputError("queries must be a list of strings, not one string")
        texts = list(queries)
        if query_embeddings is not None and len(query_embeddings) != len(texts):
            raise InvalidInputError("query_embeddings must have one vector per query")
        for i, text in enumerate(texts):
            if not isinstance(text, str) or (
                not text.strip()
                and crisis is None
                and (query_embeddings is None or query_embeddings[i] is None)
            ):
                raise InvalidInputError(
                    "query must be a non-empty string (or come with query_embedding or crisis)",
                    field="query",
                )
        with self._lock:
            self._require_open()
            at = require_aware(self._clock.now() if as_of is None else as_of, "as_of")
            situation = None if crisis is None else self._crisis(crisis, at, config)
            if situation is not None:
                texts = [t if t.strip() else situation.event.text for t in texts]
            vectors = self._query_vectors(texts, query_embeddings, config)
            built = [
                self._build_query(
                    text,
                    vector,
                    agent=agent,
                    agents=agents,
                    k=k,
                    as_of=at,
                    explain=explain,
                    kinds=kinds,
                    include_history=include_history,
                    valid_at=valid_at,
                    config=config,
                    crisis=situation,
                )
                for text, vector in zip(texts, vectors, strict=True)
            ]
            is_sequential = config.sequential_touch if sequential is None else sequential
            results: list[list[Hit]] = []
            pending: dict[str, None] = {}
            for q in built:
                hits = search(self._index, self._store, self._space, q)
                results.append(hits)
                if touch:
                    ids = [i for h in hits for i in h.record_ids]
                    if is_sequential:
                        self._store.touch(self._space, ids, to_micros(q.as_of))
                    else:
                        pending.update(dict.fromkeys(ids))
            if touch and pending:
                self._store.touch(self._space, list(pending), to_micros(built[0].as_of))
            return results

    def _query_vectors(
        self, texts: list[str], given: Sequence[Any] | None, config: ScoringConfig
    ) -> list[F32 | None]:
        if given is not None:
            return [
                self._query_vector(t, g, config) if g is not None else None
                for t, g in zip(texts, given, strict=True)
            ]
        if self._embedder is None or config.relevance.value == "lexical":
            return [None] * len(texts)
        vectors = self._embedder.embed(texts)
        return [self._query_vector(t, v, config) for t, v in zip(texts, vectors, strict=True)]

    # -- causal graph (DESIGN §4) ------------------------------------------------------------
    def add_event(
        self,
        text: str,
        *,
        occurred_at: datetime | None = None,
        kind: EventKind | str = EventKind.HAPPENING,
        scope: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
    ) -> Event:
        """Add a node to the space-wide causal graph (a crisis, decision, outcome, happening).

        ``scope`` groups events (an institution, a district) for the scope fallback of crisis
        reads. The event is embedded like a record (or takes ``embedding``), so records can be
        associated with it by similarity.
        """
        text = require_text(text, "text")
        kind = to_enum(EventKind, kind, "kind")
        if scope is not None:
            scope = require_text(scope, "scope")
        with self._lock:
            self._require_open()
            now = require_aware(self._clock.now(), "clock.now()")
            vector = None if embedding is None else as_vector(embedding, dim=self._meta.dim)
            if vector is None and self._embedder is not None:
                vector = self._embedder.embed([text])[0]
            if vector is not None:
                self._fix_dim(int(vector.shape[0]))
            event = Event(
                id=self._ids.new_id(now),
                space=self._space,
                text=text,
                kind=kind,
                scope=scope,
                occurred_at=_optional_instant(occurred_at, "occurred_at") or now,
                recorded_at=now,
                metadata=metadata_dict(metadata),
                has_embedding=vector is not None,
            )
            self._store.insert_event(self._space, event, vector)
            return event

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

    def link(
        self,
        cause: str,
        effect: str,
        weight: float = 1.0,
        provenance: Provenance | str = Provenance.EXPLICIT,
        *,
        similarity: float | None = None,
    ) -> Link:
        """Add the causal link ``cause -> effect`` with a weight in (0, 1] (how strong the
        evidence is that the cause led to the effect). An explicit link replaces an inferred one
        of the same pair; an inferred link never replaces an explicit one (the explicit link is
        returned unchanged).

        Raises:
            NotFoundError: either event does not exist. InvalidInputError: a self-link, or a
            weight outside (0, 1].
        """
        provenance = Provenance(to_enum(Provenance, provenance, "provenance"))
        if (
            isinstance(weight, bool)
            or not isinstance(weight, int | float)
            or not (math.isfinite(weight) and 0.0 < weight <= 1.0)
        ):
            raise InvalidInputError(f"weight must be in (0, 1]; got {weight!r}", field="weight")
        if cause == effect:
            raise InvalidInputError(f"an event cannot cause itself ({cause})", field="effect")
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                for event_id in (cause, effect):
                    self.get_event(event_id)
                existing = self._store.get_link(self._space, cause, effect)
                if (
                    existing is not None
                    and existing.provenance is Provenance.EXPLICIT
                    and provenance is Provenance.INFERRED
                ):
                    return existing
                new = Link(
                    cause=cause,
                    effect=effect,
                    weight=float(weight),
                    provenance=provenance,
                    created_at=now,
                    similarity=similarity,
                )
                self._store.put_link(self._space, new)
            return new

    def unlink(self, cause: str, effect: str) -> bool:
        """Remove the link ``cause -> effect``; returns whether there was one."""
        with self._lock:
            self._require_open()
            return self._store.delete_link(self._space, cause, effect)

    def links(self) -> list[Link]:
        """Every link of the space."""
        with self._lock:
            self._require_open()
            return self._store.links(self._space)

    def _graph_at(
        self, event_id: str, as_of: datetime, max_depth: int, *, upstream: bool = True
    ) -> tuple[list[Link], dict[str, Reach], dict[str, Event]]:
        """The links known at ``as_of``, what they reach from ``event_id`` within ``max_depth``,
        and those events (recorded by ``as_of``)."""
        links = self._store.links(self._space, as_of_us=to_micros(as_of))
        reach = traverse(
            [(x.cause, x.effect, x.weight) for x in links], event_id, max_depth, upstream=upstream
        )
        events = {
            e.id: e
            for e in self._store.get_events(self._space, sorted(reach))
            if e.recorded_at <= as_of
        }
        return links, reach, events

    def _reach(
        self, event_id: str, max_depth: int, as_of: datetime | None, *, upstream: bool
    ) -> list[Ancestor]:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise InvalidInputError(f"max_depth must be a positive integer; got {max_depth!r}")
        with self._lock:
            self._require_open()
            self.get_event(event_id)
            at = self._clock.now() if as_of is None else require_aware(as_of, "as_of")
            _, reach, events = self._graph_at(event_id, at, max_depth, upstream=upstream)
        found = [
            Ancestor(
                event=events[i],
                depth=r.depth,
                strength=r.strength,
                path=r.path() if upstream else tuple(reversed(r.path())),
            )
            for i, r in reach.items()
            if i in events
        ]
        return sorted(found, key=lambda a: (a.depth, -a.strength, a.event.occurred_at, a.event.id))

    def ancestors(
        self, event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
    ) -> list[Ancestor]:
        """Every event upstream of ``event_id`` within ``max_depth`` links, nearest first, each
        with its depth (fewest links), path strength (best product of weights within the bound)
        and that path (ancestor first). Cycles terminate; an event is never its own ancestor."""
        return self._reach(event_id, max_depth, as_of, upstream=True)

    def descendants(
        self, event_id: str, max_depth: int = 4, *, as_of: datetime | None = None
    ) -> list[Ancestor]:
        """Every event downstream of ``event_id`` within ``max_depth`` links (paths start at
        ``event_id``)."""
        return self._reach(event_id, max_depth, as_of, upstream=False)

    def auto_link(
        self,
        event_id: str,
        *,
        window: timedelta = timedelta(days=30),
        threshold: float | None = None,
        weight_scale: float = 0.5,
    ) -> list[Link]:
        """Propose ``inferred`` links into ``event_id`` from events that occurred in the
        ``window`` before it and whose cosine similarity to it is at or above ``threshold``
        (default: the preset's per-embedder association threshold). The weight,
        ``weight_scale × similarity`` (at most 0.5 by default), says how weak this evidence is
        next to an explicit link. Never a self-link; existing explicit links are left alone.
        Returns the links written.

        Raises:
            ConfigError: the events have no vectors (open the store with an embedder).
        """
        if window <= timedelta():
            raise InvalidInputError("window must be positive", field="window")
        if not 0.0 < weight_scale <= 1.0:
            raise InvalidInputError("weight_scale must be in (0, 1]", field="weight_scale")
        limit = (
            self._preset.causal.association_threshold(self._meta.model)
            if threshold is None
            else threshold
        )
        with self._lock:
            effect = self.get_event(event_id)
            earlier = [
                e
                for e in self._store.events_between(
                    self._space,
                    after_us=to_micros(effect.occurred_at - window),
                    before_us=to_micros(effect.occurred_at),
                )
                if e.id != effect.id
            ]
            vectors = self._store.event_embeddings(
                self._space, [effect.id, *(e.id for e in earlier)]
            )
            if effect.id not in vectors:
                raise ConfigError(
                    f"auto_link needs event vectors; event {effect.id} has none (open the store "
                    f"with an embedder, or pass embedding= to add_event)"
                )
            target = vectors[effect.id] / np.linalg.norm(vectors[effect.id])
            made = []
            for cause in earlier:
                vector = vectors.get(cause.id)
                if vector is None:
                    continue
                similarity = float(np.dot(vector / np.linalg.norm(vector), target))
                if similarity < limit:
                    continue
                link = self.link(
                    cause.id,
                    effect.id,
                    weight=weight_scale * max(similarity, 0.0),
                    provenance=Provenance.INFERRED,
                    similarity=similarity,
                )
                if link.provenance is Provenance.INFERRED:
                    made.append(link)
            return made

    def _crisis(self, crisis: str, as_of: datetime, config: ScoringConfig) -> Crisis:
        event = self.get_event(crisis)
        causal = config.causal
        _, reach, events = self._graph_at(event.id, as_of, causal.max_depth)
        scope_events: list[Event] = []
        if event.scope is not None and causal.fallback_window is not None:
            scope_events = [
                e
                for e in self._store.events_between(
                    self._space,
                    after_us=to_micros(event.occurred_at - causal.fallback_window),
                    before_us=to_micros(event.occurred_at),
                    scope=event.scope,
                )
                if e.recorded_at <= as_of
            ]
        wanted = [*events, *(e.id for e in scope_events)]
        causal_list = causal_events(
            crisis=event,
            reach=reach,
            events=events,
            vectors=self._store.event_embeddings(self._space, wanted),
            scope_events=scope_events,
            config=causal,
        )
        return Crisis(
            event=event,
            events=tuple(causal_list),
            threshold=causal.association_threshold(self._meta.model),
        )

    def context(
        self,
        query: str | None = None,
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        crisis: str | None = None,
        k: int = 12,
        budget_tokens: int | None = None,
        as_of: datetime | None = None,
        touch: bool = True,
        preset: str | ScoringConfig | None = None,
        count_tokens: TokenCounter = approximate_tokens,
    ) -> ContextBlock:
        """A prompt-ready block: the question, the ranked evidence (holders, date, importance,
        id, lifecycle markers) and, with a ``crisis``, the causal chain from root to crisis with
        link weights — as ``.text`` and as data.

        ``budget_tokens`` caps the text (counted by ``count_tokens``, default
        :func:`~chronomem.context.block.approximate_tokens`): the lowest-ranked evidence and the
        causes farthest from the crisis are dropped first, the proximate causes last. With an
        empty ``query`` the crisis's text is the question. ``touch`` as in :meth:`recall`.
        """
        if budget_tokens is not None and (
            isinstance(budget_tokens, bool)
            or not isinstance(budget_tokens, int)
            or budget_tokens < 1
        ):
            raise InvalidInputError(
                "budget_tokens must be a positive integer", field="budget_tokens"
            )
        if not (query and query.strip()) and crisis is None:
            raise InvalidInputError("context needs a query or a crisis", field="query")
        config = self._preset if preset is None else resolve_preset(preset)
        with self._lock:
            self._require_open()
            at = require_aware(self._clock.now() if as_of is None else as_of, "as_of")
            hits = self.recall(
                query or "", agent=agent, agents=agents, k=k, as_of=at, touch=touch,
                preset=config, crisis=crisis,
            )  # fmt: skip
            event = None
            chain: list[ChainLink] = []
            if crisis is not None:
                event = self.get_event(crisis)
                links, reach, events = self._graph_at(event.id, at, config.causal.max_depth)
                depth_of = {i: r.depth for i, r in reach.items() if i in events}
                chain = chain_links(event, links, depth_of, events)
        question = query if query and query.strip() else (event.text if event else "")
        return build_block(
            question=question,
            as_of=at,
            hits=hits,
            crisis=event,
            chain=chain,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
        )

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
