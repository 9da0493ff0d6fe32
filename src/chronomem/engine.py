"""The ``Memory`` facade: wires the clock, the store, the embedder and the scoring config.

Reads follow DESIGN §2; writes DESIGN §3. The engine asks its clock for "now" once per call and
passes instants down; scoring never reads a clock.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from chronomem.archive import (
    ArchiveHeader,
    ImportReport,
    read_archive,
    record_from_json,
    write_archive,
)
from chronomem.clock import Clock, SystemClock, require_aware, to_micros
from chronomem.config import ScoringConfig, resolve_preset
from chronomem.embedders.base import Embedder, as_vector
from chronomem.errors import (
    ConfigError,
    ConflictError,
    EmbedderMismatchError,
    InvalidInputError,
    NotFoundError,
    StoreError,
)
from chronomem.model.ids import IdFactory
from chronomem.model.record import Hit, Kind, Record, Sensitivity, WriteResult
from chronomem.retrieval.index import SpaceIndex
from chronomem.retrieval.recall import Query, search
from chronomem.stores.base import EmbeddingMeta, MemoryStore, StoredRecord
from chronomem.stores.sqlite import SQLiteStore

__all__ = ["DEFAULT_IMPORTANCE", "Memory"]

#: Importance given to a record written without one, until an importance scorer is configured.
DEFAULT_IMPORTANCE = 5.0

F32 = npt.NDArray[np.float32]

_REMEMBER_FIELDS = frozenset(
    {
        "text",
        "agent",
        "kind",
        "importance",
        "occurred_at",
        "valid_from",
        "valid_until",
        "domain",
        "tags",
        "metadata",
        "evidence",
        "event_id",
        "sensitivity",
        "embedding",
    }
)


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


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return value


def _optional_instant(value: object, name: str) -> datetime | None:
    return None if value is None else require_aware(value, name)


def _importance(value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 1 <= value <= 10
    ):
        raise InvalidInputError(
            f"importance must be a number from 1 (mundane) to 10 (life-changing); got {value!r}",
            field="importance",
        )
    return float(value)


_E = TypeVar("_E", Kind, Sensitivity)


def _enum(enum: type[_E], value: object, name: str) -> _E:
    try:
        return enum(value)  # type: ignore[arg-type]
    except ValueError:
        choices = ", ".join(e.value for e in enum)
        raise InvalidInputError(
            f"{name} must be one of {choices}; got {value!r}", field=name
        ) from None


def _strings(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise InvalidInputError(f"{name} must contain only non-empty strings", field=name)
    return items


@dataclass(frozen=True, slots=True)
class _Draft:
    record: Record
    embedding: F32 | None


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
    ) -> None:
        self._store = store
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

        Raises:
            ConfigError: unknown preset, or the default embedder's extra is missing.
            EmbedderMismatchError: the store was built with another embedder.
        """
        config = resolve_preset(preset)
        _text(space, "space")
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
    def close(self) -> None:
        """Close the store. Every acknowledged write is already durable."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._store.close()

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
        sensitivity: Sensitivity | str = Sensitivity.NORMAL,
        embedding: Sequence[float] | npt.NDArray[np.floating[Any]] | None = None,
    ) -> WriteResult:
        """Store one record (DESIGN §3) and return a :class:`WriteResult`.

        ``recorded_at`` and the initial ``last_accessed_at`` are the clock's now; ``occurred_at``
        (world time) defaults to it. ``importance`` is 1..10; when omitted it is
        :data:`DEFAULT_IMPORTANCE`. ``embedding`` supplies the vector instead of the embedder;
        with ``embedder=None`` the first vector fixes the store's dimension.

        Raises:
            InvalidInputError: bad input; nothing is written.
            NotFoundError: an evidence id does not exist in this space.
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
            "sensitivity": sensitivity,
            "embedding": embedding,
        }
        return self.remember_many([item])[0]

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        progress: bool = False,
        **defaults: Any,
    ) -> list[WriteResult]:
        """Store many records in one transaction, embedding them in batches.

        Each item is a text or a mapping with the keyword arguments of :meth:`remember`;
        ``defaults`` (e.g. ``agent="isabella"``) apply to every item that does not set them.
        Evidence may cite records earlier in the same batch. All or nothing: on any invalid
        item, nothing is written and the error names the item's position.
        """
        unknown = set(defaults) - _REMEMBER_FIELDS
        if unknown:
            raise InvalidInputError(f"unknown field(s) for remember: {sorted(unknown)}")
        with self._lock:
            self._require_open()
            now = require_aware(self._clock.now(), "clock.now()")
            batch: list[dict[str, Any]] = []
            for position, raw in enumerate(items):
                item = {"text": raw} if isinstance(raw, str) else dict(raw)
                extra = set(item) - _REMEMBER_FIELDS
                if extra:
                    raise InvalidInputError(f"item {position}: unknown field(s) {sorted(extra)}")
                batch.append({**defaults, **{k: v for k, v in item.items() if v is not None}})
            drafts = self._drafts(batch, now)
            self._embed_missing(drafts, batch, progress=progress)
            self._store.insert_records(
                self._space,
                [StoredRecord(record=d.record, embedding=d.embedding) for d in drafts],
            )
            return [WriteResult(stored=True, id=d.record.id) for d in drafts]

    def _drafts(self, batch: list[dict[str, Any]], now: datetime) -> list[_Draft]:
        dim = self._meta.dim
        drafts: list[_Draft] = []
        depth_in_batch: dict[str, int] = {}
        cited: set[str] = {e for item in batch for e in item.get("evidence", ())}
        known = (
            {r.id: r.depth for r in self._store.get_records(self._space, sorted(cited))}
            if cited
            else {}
        )
        for position, item in enumerate(batch):
            try:
                text = _text(item.get("text"), "text")
                agent = _text(item.get("agent", "default"), "agent")
                kind = _enum(Kind, item.get("kind", Kind.OBSERVATION), "kind")
                importance = _importance(item.get("importance", DEFAULT_IMPORTANCE))
                occurred_at = _optional_instant(item.get("occurred_at"), "occurred_at") or now
                valid_from = _optional_instant(item.get("valid_from"), "valid_from")
                valid_until = _optional_instant(item.get("valid_until"), "valid_until")
                if valid_from and valid_until and valid_until <= valid_from:
                    raise InvalidInputError(
                        "valid_until must be after valid_from", field="valid_until"
                    )
                domain = item.get("domain")
                if domain is not None:
                    domain = _text(domain, "domain")
                tags = _strings(item.get("tags", ()), "tags")
                metadata = dict(item.get("metadata") or {})
                try:
                    json.dumps(metadata, allow_nan=False)
                except (TypeError, ValueError) as exc:
                    raise InvalidInputError(
                        f"metadata must be JSON-serialisable: {exc}", field="metadata"
                    ) from None
                evidence = _strings(item.get("evidence", ()), "evidence")
                depths = []
                for cited_id in evidence:
                    if cited_id in depth_in_batch:
                        depths.append(depth_in_batch[cited_id])
                    elif cited_id in known:
                        depths.append(known[cited_id])
                    else:
                        raise NotFoundError(
                            f"evidence {cited_id!r} does not exist in space {self._space!r}",
                            record_id=cited_id,
                        )
                event_id = item.get("event_id")
                if event_id is not None:
                    event_id = _text(event_id, "event_id")
                sensitivity = _enum(Sensitivity, item.get("sensitivity", "normal"), "sensitivity")
                vector = None
                if item.get("embedding") is not None:
                    vector = as_vector(item["embedding"], dim=dim)
                    dim = vector.shape[0]
            except (InvalidInputError, NotFoundError) as exc:
                if len(batch) == 1:
                    raise
                raise type(exc)(f"item {position}: {exc}") from exc
            record = Record(
                id=self._ids.new_id(now),
                space=self._space,
                agent=agent,
                kind=kind,
                text=text,
                importance=importance,
                occurred_at=occurred_at,
                recorded_at=now,
                last_accessed_at=now,
                valid_from=valid_from,
                valid_until=valid_until,
                domain=domain,
                tags=tags,
                metadata=metadata,
                evidence=evidence,
                depth=1 + max(depths) if depths else 0,
                event_id=event_id,
                sensitivity=sensitivity,
                has_embedding=vector is not None,
            )
            depth_in_batch[record.id] = record.depth
            drafts.append(_Draft(record, vector))
        return drafts

    def _embed_missing(
        self, drafts: list[_Draft], batch: list[dict[str, Any]], *, progress: bool
    ) -> None:
        """Fill in vectors with the embedder (one batched call) and fix the store's dimension."""
        missing = [i for i, d in enumerate(drafts) if d.embedding is None]
        if self._embedder is not None and missing:
            vectors = self._embedder.embed(
                [drafts[i].record.text for i in missing], progress=progress
            )
            for i, vector in zip(missing, vectors, strict=True):
                record = drafts[i].record
                drafts[i] = _Draft(
                    replace(record, has_embedding=True), np.asarray(vector, np.float32)
                )
        given = [d.embedding for d in drafts if d.embedding is not None]
        if given and self._meta.dim is None:
            dim = int(given[0].shape[0])
            meta = EmbeddingMeta(model=None, dim=dim)
            self._store.set_embedding_meta(meta)
            self._meta = meta
            self._index.set_dim(dim)

    def get(self, record_id: str) -> Record:
        """The record with this id, whatever its status.

        Raises:
            NotFoundError: no such record in this space.
        """
        with self._lock:
            self._require_open()
            found = self._store.get_records(self._space, [_text(record_id, "record_id")])
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
    ) -> Query:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInputError(f"k must be a positive integer; got {k!r}", field="k")
        if agent is not None and agents is not None:
            raise InvalidInputError("pass agent= or agents=, not both", field="agents")
        if agent is not None:
            chosen: tuple[str, ...] = (_text(agent, "agent"),)
        elif agents is not None:
            chosen = tuple(dict.fromkeys(_strings(agents, "agents")))
        else:
            chosen = tuple(self._store.agents(self._space))
        return Query(
            text=query,
            vector=vector,
            agents=chosen,
            k=k,
            as_of=require_aware(as_of, "as_of"),
            config=config,
            kinds=None if kinds is None else frozenset(_enum(Kind, x, "kinds") for x in kinds),
            include_history=bool(include_history),
            valid_at=_optional_instant(valid_at, "valid_at"),
            explain=explain,
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
                not text.strip() and (query_embeddings is None or query_embeddings[i] is None)
            ):
                raise InvalidInputError(
                    "query must be a non-empty string (or come with query_embedding)", field="query"
                )
        with self._lock:
            self._require_open()
            at = self._clock.now() if as_of is None else as_of
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

    # -- export / import ------------------------------------------------------------------
    def export(self, path: str | os.PathLike[str]) -> int:
        """Write this space to a JSONL archive (ids, every field, raw vectors); return the number
        of records. The file is replaced atomically; the same content gives the same bytes."""
        with self._lock:
            self._require_open()
            header = ArchiveHeader(
                space=self._space, embedding_model=self._meta.model, embedding_dim=self._meta.dim
            )
            with self._store.snapshot():
                return write_archive(path, header, self._store.iter_records(self._space))

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
            header, lines = read_archive(path)
            meta = self._archive_meta(header)
            problems: list[str] = []
            items: list[StoredRecord] = []
            line_of: dict[str, int] = {}
            for number, obj in lines:
                if obj.get("type") != "record":
                    problems.append(f"line {number}: unknown line type {obj.get('type')!r}")
                    continue
                try:
                    item = record_from_json(obj, space=self._space, dim=meta.dim)
                except (ValueError, InvalidInputError) as exc:
                    problems.append(f"line {number} (id {obj.get('id')!r}): {exc}")
                    continue
                if item.record.id in line_of:
                    problems.append(
                        f"line {number}: id {item.record.id} repeats line {line_of[item.record.id]}"
                    )
                    continue
                line_of[item.record.id] = number
                items.append(item)
            problems.extend(self._dangling(items, line_of))
            if problems:
                shown = "\n  ".join(problems[:20])
                more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
                raise InvalidInputError(
                    f"{path}: {len(problems)} problem(s), nothing imported:\n  {shown}{more}"
                )
            clash = self._store.existing_ids([i.record.id for i in items])
            if clash:
                first = sorted(clash)[0]
                raise ConflictError(
                    f"{path}: {len(clash)} id(s) already exist in the store (e.g. {first}); "
                    f"nothing imported",
                    record_id=first,
                )
            if meta.dim is not None and self._meta.dim is None:
                self._store.set_embedding_meta(meta)
                self._meta = meta
                self._index.set_dim(meta.dim)
            self._store.insert_records(self._space, items)
            return ImportReport(path=str(path), records=len(items))

    def _archive_meta(self, header: Mapping[str, Any]) -> EmbeddingMeta:
        model, dim = header.get("embedding_model"), header.get("embedding_dim")
        ours = self._meta
        if dim is None:
            return ours
        if ours.dim is None:
            if self._embedder is not None and model != self._embedder.model_id:
                raise EmbedderMismatchError(
                    f"the archive's vectors come from {model!r}, this store uses "
                    f"{self._embedder.model_id!r}",
                    expected_model=self._embedder.model_id,
                    expected_dim=self._embedder.dim,
                    got_model=model,
                    got_dim=dim,
                )
            return EmbeddingMeta(model=model, dim=int(dim))
        if ours.dim != dim or (ours.model is not None and model != ours.model):
            raise EmbedderMismatchError(
                f"the archive's vectors ({model!r}, dimension {dim}) do not match this store's "
                f"({ours.model!r}, dimension {ours.dim})",
                expected_model=ours.model,
                expected_dim=ours.dim,
                got_model=model,
                got_dim=dim,
            )
        return ours

    def _dangling(self, items: list[StoredRecord], line_of: Mapping[str, int]) -> list[str]:
        refs: dict[str, list[tuple[str, str]]] = {}
        for item in items:
            r = item.record
            for name, targets in (
                ("evidence", r.evidence),
                ("supersedes", r.supersedes),
                ("superseded_by", (r.superseded_by,) if r.superseded_by else ()),
            ):
                for target in targets:
                    if target not in line_of:
                        refs.setdefault(target, []).append((r.id, name))
        if not refs:
            return []
        in_store = {r.id for r in self._store.get_records(self._space, sorted(refs))}
        return [
            f"line {line_of[source]} (id {source}): {name} {target!r} does not exist"
            for target, sources in sorted(refs.items())
            if target not in in_store
            for source, name in sources
        ]

    def stats(self) -> dict[str, Any]:
        """Counts per agent and kind, store location, schema version, embedder, size on disk."""
        with self._lock:
            self._require_open()
            out = self._store.stats(self._space)
        out["embedder"] = None if self._embedder is None else self._embedder.model_id
        out["preset"] = self._preset.name
        return out
