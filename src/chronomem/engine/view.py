"""The read-only half of the facade: :class:`MemoryView` opens and closes a handle and holds
every verb that never changes the store — read-only recall (``peek``), lookups by id, history, the
audit log, export — but the causal graph's reads, which are with its writes
(``engine/causal.py``). :class:`~chronomem.Memory` adds the verbs that write (including the
touching ``recall``).

Each verb checks its arguments, takes the handle's lock, reads the clock once and makes one call
into the module that does the work (``engine/read.py``, ``graph.py``, ``lifecycle.py``,
``transfer.py``); see ``docs/architecture.md``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal, Self

import numpy as np
import numpy.typing as npt

from chronomem.checks import (
    flag,
    optional_instant,
    optional_text,
    path_value,
    positive_int,
    require_id,
    require_text,
    string_tuple,
    to_enum,
)
from chronomem.clock import Clock
from chronomem.config import ReflectionConfig, ReviewConfig, ScoringConfig, WriteGate
from chronomem.embedders.base import Embedder
from chronomem.engine import browse, core, lifecycle, read, review, transfer
from chronomem.engine.handle import Handle, open_handle
from chronomem.errors import ConfigError, EmbedderMismatchError, InvalidInputError, StoreError
from chronomem.llm.base import LLMClient
from chronomem.model.audit import AuditEntry
from chronomem.model.change import MAX_CHANGES, Change
from chronomem.model.core import CoreBlock
from chronomem.model.filter import FilterSpec
from chronomem.model.record import Dependant, Hit, Kind, Record, Status
from chronomem.model.review import Access, Proposal, ProposalStatus
from chronomem.retrieval.compact import DEFAULT_COMPACT_RECORDS
from chronomem.retrieval.options import RankBy, ReadOptions
from chronomem.retrieval.space import DEFAULT_SNAPSHOT_RECORDS
from chronomem.stores.base import MemoryStore, Touch
from chronomem.telemetry.tracing import stage
from chronomem.writing.importance import ImportanceScorer

__all__ = ["MemoryView", "Vector"]

Vector = Sequence[float] | npt.NDArray[np.floating[Any]]
_log = logging.getLogger("chronomem")


class MemoryView:
    """A handle on one store and one space through which nothing changes: reads that do not
    touch, lookups, history, audit and export. :class:`~chronomem.Memory` is
    a view that also writes; open either with :meth:`open`.
    """

    def __init__(self, handle: Handle) -> None:
        """Use :meth:`open`."""
        self._h = handle

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
        passages: bool | str = True,
        create: bool = True,
        allow_missing_vectors: bool = False,
        index_snapshot: int | None = DEFAULT_SNAPSHOT_RECORDS,
        compact_vectors: int | None = DEFAULT_COMPACT_RECORDS,
    ) -> Self:
        """Open (or create) a store.

        Opening an existing store at the current schema version writes nothing (and takes no
        write lock); a new store is created, an older one migrated. A location that is not a
        chronomem store (another application's SQLite file, a database with tables of
        chronomem's names) is refused before anything is written to it.

        Args:
            location: a file path, ``sqlite:///path``, ``postgresql://...``, or a store object.
            embedder: ``"default"`` (the bundled all-MiniLM-L6-v2, needs the ``embeddings``
                extra), an :class:`~chronomem.embedders.Embedder`, or ``None`` for lexical
                relevance plus caller-supplied vectors.
            clock: where "now" comes from; default :class:`~chronomem.clock.SystemClock`.
            preset: the default scoring preset name or a :class:`ScoringConfig`.
            space: the namespace inside the store; nothing crosses spaces.
            synchronous: SQLite durability, ``"FULL"`` (default) or ``"NORMAL"``.
            write_gate: the near-duplicate gate for facts and instructions.
            importance: scores records written without importance; when given (e.g.
                :class:`~chronomem.LLMImportance`) it is always used. Default: with an embedder,
                :class:`~chronomem.EmbeddingImportance` (similarity to described anchor
                events); with ``embedder=None``, :class:`~chronomem.HeuristicImportance`.
            llm: the model reflection uses when a call does not pass one.
            reflection: when and how to reflect (:class:`~chronomem.config.ReflectionConfig`).
            passages: also embed each sentence of a record of several sentences, so a fact said
                in passing in a long record matches a question about it (presets with
                ``passages=True`` take the best of the record's and its passages' cosines).
                ``True`` is ``"derived"``: each sentence the model reads (the first 256 tokens
                of all-MiniLM-L6-v2) is embedded once and the record's vector is the mean of
                theirs, each weighted by its length, instead of embedding the whole record
                too (2.2x the write speed on long chat turns, and the quality benchmarks hold:
                docs/benchmarks.md, "Passages that do not pay twice"). Sentences past what the
                model reads get no passage then: a fact said only there is found by words
                (BM25), not by meaning. ``"sentences"`` embeds the whole record and every
                sentence (as before), at 2.7x the model time on such turns.
                ``False`` embeds each record once, whole (the fastest writes). Vectors already
                stored are never changed.
            create: create the store when the location holds none (the default, for
                writers); ``False`` raises ``StoreError`` ("no chronomem store at ...")
                instead — what a read-only caller wants, so a mistyped path creates nothing.
            allow_missing_vectors: with ``embedder=None`` on a store built with an embedding
                model, accept records written without a vector (lexical only until
                :meth:`~chronomem.Memory.embed_records` embeds them); by default such a write
                is refused, since the record would never match by meaning.
            index_snapshot: save the space's in-memory index next to a SQLite file when this
                handle closes, once it holds at least this many records, so the next open loads
                it in one read instead of rebuilding it from the rows (docs/storage.md, "Index
                snapshot"); ``0``: at any size; ``None``: never save one nor use one found.
            compact_vectors: a read of one agent holding at least this many records scans an
                int8 copy of its vectors and rescores the best candidates exactly — the same
                top k, a quarter of the bytes read (needs the ``fast`` extra, ``simsimd``;
                docs/scoring.md, "Large agents"); ``None``: always the float32 scan.

        Raises:
            ConfigError: unknown preset, or the default embedder's extra is missing.
            EmbedderMismatchError: the store was built with another embedder.
            StoreError: the location is not a chronomem store (or holds none and
                ``create=False``), or it cannot be opened.
        """
        return cls(
            open_handle(
                location, embedder=embedder, clock=clock, preset=preset, space=space,
                synchronous=synchronous, write_gate=write_gate, importance=importance, llm=llm,
                reflection=reflection, passages=passages, create=create,
                allow_missing_vectors=allow_missing_vectors, index_snapshot=index_snapshot,
                compact_vectors=compact_vectors,
            )
        )  # fmt: skip

    def close(self) -> None:
        """Close this handle (every acknowledged write is already durable). Idempotent."""
        with self._h.lock:
            if not self._h.closed:
                self._h.closed = True
                try:
                    self._h.touches.close()  # the touches queued by reads that scored
                    self._h.sync_model()  # a switched store: nothing of the old model is saved
                    self._h.index.save()
                except (OSError, StoreError, EmbedderMismatchError) as exc:  # a cache: rebuilt
                    _log.warning("could not save the index snapshot: %s", exc)
                finally:
                    self._h.store.close()

    def preload(self) -> None:
        """Load this space's in-memory index now — every agent, from the index snapshot or the
        store — and ready its large agents (10,000 records and more) for writes: their int8
        copy, and room for new rows, which a snapshot's arrays lack; and hold the postings of
        the space's most frequent words (those in 2,000 records and more). Without it the first
        read pays the load, the first write after it the copy (at 100k records about 0.5 s and
        0.3 s, under the handle's lock), and each question's first common word its postings
        (30 ms for a word in 30k records). A long-lived process calls it once after opening:
        ``chronomem serve`` does, before it serves a space's first request."""
        with self._call() as h:
            h.index.preload()
            h.store.warm_lexical(h.space)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _call(self) -> Iterator[Handle]:
        """The handle, under its lock, when it is open."""
        with self._h.lock:
            self._h.require_open()
            yield self._h

    @property
    def space(self) -> str:
        return self._h.space

    @property
    def clock(self) -> Clock:
        return self._h.clock

    @property
    def preset(self) -> ScoringConfig:
        return self._h.preset

    @property
    def embedder(self) -> Embedder | None:
        return self._h.embedder

    @property
    def dim(self) -> int | None:
        """The vector length of this store (``None`` until the first vector)."""
        return self._h.meta.dim

    def peek(
        self,
        query: str,
        *,
        agent: str | None = None,
        agents: Sequence[str] | None = None,
        k: int | None = None,
        as_of: datetime | None = None,
        query_embedding: Vector | None = None,
        explain: bool = False,
        kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False,
        valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None,
        crisis: str | None = None,
        asker: str | None = None,
        dedup: bool = True,
        rank_by: RankBy = "score",
        filter: FilterSpec | None = None,
        session: str | None = None,
        refresh_ttl: bool = False,
        options: ReadOptions | None = None,
    ) -> list[Hit]:
        """:meth:`recall` that never touches (``options.touch`` is ignored): read-only unless
        ``refresh_ttl`` asks to extend the returned records' time to live."""
        embeddings = None if query_embedding is None else [query_embedding]
        options = replace(ReadOptions.from_arguments(locals()), touch=False)
        return self._read([query], embeddings, options)[0]

    def _read(
        self, queries: Sequence[str], embeddings: Sequence[Any] | None, options: ReadOptions
    ) -> list[list[Hit]]:
        texts, vectors = read.check_queries(queries, embeddings, crisis=options.crisis is not None)
        ready = read.embed_ahead(self._h, texts, vectors, options)  # outside the lock
        deferred: list[Touch] = []
        with self._call() as h:
            found = read.recall_many(
                h, texts, vectors, options, now=h.now(), ready=ready, deferred=deferred
            )
            ticket = h.touches.queue(deferred) if deferred else None
        if ticket is not None:  # after the lock: the next read scores while this one commits
            with stage("read.touch", space=h.space, records=len(deferred[0].ids)):
                h.touches.wait(ticket)
        return found

    def get(self, record_id: str) -> Record:
        """The record with this id, whatever its status. Raises :class:`NotFoundError`."""
        with self._call() as h:
            return h.record(record_id)

    def get_many(self, record_ids: Sequence[str]) -> list[Record]:
        """The records with these ids, whatever their status, in the order asked; an id with no
        record (never written, or purged) is left out."""
        ids = list(
            dict.fromkeys(
                require_id(i, "record_ids") for i in string_tuple(record_ids, "record_ids")
            )
        )
        with self._call() as h:
            return h.records(ids)

    def dependants(self, record_id: str) -> list[Dependant]:
        """What depends on the record, as :meth:`~chronomem.Memory.forget` weighs it: records
        citing it as evidence and its neighbours in a supersession chain, each with how."""
        with self._call() as h:
            record = h.record(record_id)
            return [
                Dependant(record_id=i, relation=why)
                for i, why in h.store.dependants(h.space, record.id)
            ]

    def agents(self) -> list[str]:
        """Every agent holding records in this space, sorted."""
        with self._call() as h:
            return h.store.agents(h.space)

    def stats(self) -> dict[str, Any]:
        """Counts per agent and kind, store location, schema version, embedder, size on disk,
        when the index snapshot was last written (``index_snapshot_at``; ``None``: none), the
        newest change's ``seq`` (``last_change``; 0: none),
        and the thresholds in use (``calibration``: the model's measured ones, if any)."""
        with self._call() as h:
            h.sync_model()  # the thresholds another process calibrated meanwhile
            out = h.store.stats(h.space)
            out["embedder"] = None if h.embedder is None else h.embedder.model_id
            out["preset"] = h.preset.name
            out["index_snapshot_at"] = _written_at(h.index.snapshot_path())
            out["last_change"] = h.store.feed_head(h.space)
            out["thresholds"] = {
                "gate": h.gate.threshold(h.meta.model, h.calibrated("gate")),
                "association": h.preset.causal.association_threshold(
                    h.meta.model, h.calibrated("association")
                ),
                "calibrated": h.calibrated("gate") is not None,
            }
            return out

    def history(self, record_id: str) -> list[Record]:
        """The whole supersession chain through ``record_id``, both directions, oldest first.
        Purged links are skipped."""
        with self._call() as h:
            return lifecycle.history(h, record_id)

    def changes(self, after: int = 0, *, limit: int = 100) -> list[Change]:
        """The space's changes after ``seq = after``, oldest first, at most ``limit`` (1–1000):
        writes, lifecycle changes, review decisions, key changes, causal events and links, each
        numbered in the order it committed (docs/design/change-feed.md). Read the next page
        after the last ``seq``; ``stats()["last_change"]`` is the newest."""
        after = positive_int(after, "after", minimum=0)
        limit = positive_int(limit, "limit")
        if limit > MAX_CHANGES:
            raise InvalidInputError(
                f"limit must be at most {MAX_CHANGES}; got {limit}", field="limit"
            )
        with self._call() as h:
            return h.store.changes(h.space, after, limit)

    def audit(self, record_id: str | None = None) -> list[AuditEntry]:
        """The audit log of this space (or of one record), oldest first."""
        record_id = optional_text(record_id, "record_id")
        with self._call() as h:
            return h.store.audit(h.space, record_id)

    def accumulated_importance(self, agent: str) -> float:
        """The importance of the agent's records (reflections excepted) since it last reflected;
        stored, so a restart keeps it."""
        agent = require_text(agent, "agent")
        with self._call() as h:
            return h.store.accumulated_importance(h.space, agent)

    def export(self, path: str | os.PathLike[str]) -> int:
        """Write this space to a JSONL archive — every record with every field and its raw
        vector, the audit log, events, links and reflection triggers — and return the number of
        records. The file is replaced atomically; the same content gives the same bytes."""
        path = path_value(path)
        with self._call() as h:
            return transfer.export(h, path)

    def records(
        self, *, agent: str | None = None, agents: Sequence[str] | None = None,
        kinds: Iterable[Kind | str] | None = None, domain: str | None = None,
        include_history: bool = False, since: datetime | None = None,
        until: datetime | None = None, as_of: datetime | None = None, limit: int = 100,
        offset: int = 0, status: Status | str | None = None, filter: FilterSpec | None = None,
        session: str | None = None, refresh_ttl: bool = False,
    ) -> list[Record]:  # fmt: skip
        """Browse without a query: the records a read at ``as_of`` (default now) would see —
        closed and superseded ones too with ``include_history`` — of these agents (default all),
        kinds and ``domain`` (compared as the write gate compares domains: case and spacing
        aside), recorded in ``[since, until)``, newest first, ``limit`` from ``offset``.
        ``status`` keeps the records in that state at ``as_of`` (``open``: not yet closed or
        superseded, whatever its validity window; ``closed``; ``superseded``) and implies
        ``include_history``. ``filter`` keeps the records it selects (docs/filters.md).
        Read-only, unless ``refresh_ttl`` asks to extend the listed records' time to live."""
        options = ReadOptions.from_arguments(
            {
                "agent": agent,
                "agents": agents,
                "kinds": kinds,
                "as_of": as_of,
                "filter": filter,
                "session": session,
            }
        )
        window = (optional_instant(since, "since"), optional_instant(until, "until"))
        limit, offset = positive_int(limit, "limit"), positive_int(offset, "offset", minimum=0)
        state = None if status is None else to_enum(Status, status, "status")
        refresh = flag(refresh_ttl, "refresh_ttl")
        with self._call() as h:
            found = browse.records(
                h, agents=options.agents, domain=optional_text(domain, "domain"),
                kinds=None if options.kinds is None else frozenset(map(Kind, options.kinds)),
                include_history=flag(include_history, "include_history") or state is not None,
                since=window[0], until=window[1], as_of=options.as_of or h.now(), limit=limit,
                offset=offset, status=state, where=options.parsed_filter,
            )  # fmt: skip
            return read.refreshed(h, found) if refresh else found

    # -- core memory blocks (DESIGN §3) -------------------------------------------------------
    def core_blocks(self, agent: str, *, as_of: datetime | None = None) -> list[CoreBlock]:
        """The agent's core memory blocks (``persona``, ``human``, ...) as they stood at
        ``as_of`` (default now), by label. Each version's ``record_id`` leads to its
        :meth:`history`."""
        agent = require_text(agent, "agent")
        at = optional_instant(as_of, "as_of")
        with self._call() as h:
            return core.blocks(h, agent, as_of=at or h.now())

    # -- review and the access log (DESIGN §3) ------------------------------------------------
    def review(
        self, agent: str | None = None, *, as_of: datetime | None = None,
        config: ReviewConfig | None = None,
    ) -> list[Proposal]:  # fmt: skip
        """What a curator should look at — proposals, never changes: stale facts at the decay
        floor (verify?), records never used that nothing depends on (forget?), unlinked versions
        and near-duplicates (supersede?), pushed-down records and reflections on flagged
        evidence (close?), each with its reasons and figures. The proposals are kept in the
        queue (changing no memory) for :meth:`~chronomem.Memory.approve` or
        :meth:`~chronomem.Memory.reject`; a rejected one stays away until its records change."""
        who, at = optional_text(agent, "agent"), optional_instant(as_of, "as_of")
        if config is not None and not isinstance(config, ReviewConfig):
            raise ConfigError(f"config must be a ReviewConfig; got {config!r}")
        with self._call() as h:
            return review.review(h, who, as_of=at or h.now(), config=config or ReviewConfig())

    def proposals(self, status: str | None = None) -> list[Proposal]:
        """The review queue as kept: every proposal (or those of one ``status``: open,
        approved, rejected, obsolete), oldest first."""
        chosen = None if status is None else to_enum(ProposalStatus, status, "status").value
        with self._call() as h:
            return h.store.proposals(h.space, status=chosen)

    def accesses(self, record_id: str | None = None, *, limit: int = 100) -> list[Access]:
        """The access log (of one record), newest first: who read it, when, with which query.
        Empty unless the space's access log is on (:meth:`~chronomem.Memory.set_access_log`)."""
        rid = optional_text(record_id, "record_id")
        with self._call() as h:
            return h.store.accesses(h.space, record_id=rid, limit=positive_int(limit, "limit"))


def _written_at(path: os.PathLike[str] | None) -> str | None:
    """When the file at ``path`` was last written (ISO 8601, UTC); ``None``: there is none."""
    try:
        return (
            None
            if path is None
            else datetime.fromtimestamp(os.stat(path).st_mtime, UTC).isoformat()
        )
    except FileNotFoundError:
        return None
