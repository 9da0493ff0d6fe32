"""The ``Memory`` facade: one class whose public methods are the verbs.

Each verb checks its arguments, takes the handle's lock, reads the clock once and makes one call
into the module that does the work (``engine/write.py``, ``read.py``, ``lifecycle.py``,
``graph.py``, ``reflect.py``, ``transfer.py``), passing the instant down; scoring never reads a
clock. Reads follow DESIGN §2, writes and the lifecycle §3, causal reads §4, reflection §5. The
layout and a walk-through of one recall are in ``docs/architecture.md``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from chronomem.checks import (
    flag,
    id_list,
    optional_instant,
    optional_text,
    path_value,
    positive_int,
    require_id,
    require_text,
)
from chronomem.config import ReflectionConfig, ScoringConfig
from chronomem.embedders.base import Embedder
from chronomem.engine import (
    core,
    lifecycle,
    read,
    reembed,
    reflect,
    review,
    transfer,
)
from chronomem.engine.causal import CausalVerbs
from chronomem.engine.reembed import ReembedReport
from chronomem.engine.view import Vector
from chronomem.engine.where import FilterVerbs
from chronomem.engine.write import record_fields
from chronomem.engine.writes import WriteVerbs
from chronomem.errors import ConfigError, EmbedderMismatchError
from chronomem.llm.base import LLMClient
from chronomem.model.audit import ForgetResult, ScrubResult
from chronomem.model.core import DEFAULT_CORE_LIMIT, CoreBlock
from chronomem.model.filter import FilterSpec
from chronomem.model.record import Hit, Kind, Record, Sensitivity, WriteResult
from chronomem.model.reflection import ReflectionResult
from chronomem.model.review import Proposal
from chronomem.model.transfer import ImportReport
from chronomem.retrieval.options import RankBy, ReadOptions
from chronomem.stores.reembedding import ReembedState
from chronomem.telemetry.tracing import traced
from chronomem.transfer.generative_agents import GAImportReport
from chronomem.writing.calibration import Calibration, calibrate, calibration_key

__all__ = ["Memory"]


@traced
class Memory(WriteVerbs, CausalVerbs, FilterVerbs):
    """A memory engine over one store and one space.

    Open with :meth:`open`; use as a context manager or call :meth:`close`. Each public call holds
    an internal lock, so a handle may be shared between threads; several processes may open the
    same store. The read-only verbs (``peek``, ``get``, ``history``, ``audit``, ``export``, ...)
    come from :class:`~chronomem.engine.view.MemoryView`, the writes (``remember``,
    ``remember_many``, ``remember_messages``, the vector backfills) from
    :class:`~chronomem.engine.writes.WriteVerbs`, the causal graph's reads, writes and context
    blocks from :class:`~chronomem.engine.causal.CausalVerbs`, the changes by
    filter (``close_where``, ``verify_where``, ``forget_where``) from
    :class:`~chronomem.engine.where.FilterVerbs`.
    """

    def calibrate(self, *, progress: bool = False) -> Calibration:
        """Measure the embedder's write-gate, association and importance thresholds on the
        pairs shipped with chronomem, in the languages it reads
        (:func:`~chronomem.writing.calibration.calibrate`; docs/languages.md, "Calibration"),
        and keep them in the store: this handle uses them at once, every later open of the
        store with this model too. A threshold set for the model in ``WriteGate`` or
        ``CausalConfig`` (as all-MiniLM-L6-v2's are) still wins. Needs an embedder; the
        embedding runs outside the handle's lock."""
        progress = flag(progress, "progress")
        with self._call() as h:
            embedder = h.embedder
        if embedder is None:
            raise ConfigError("calibrate measures the store's embedding model; open it with one")
        measured = calibrate(embedder, progress=progress)
        with self._call() as h:
            if h.meta.model != measured.model:
                raise EmbedderMismatchError(
                    f"{h.store.location} holds vectors of {h.meta.model!r}, not "
                    f"{measured.model!r}",
                    expected_model=h.meta.model, expected_dim=h.meta.dim,
                    got_model=measured.model, got_dim=embedder.dim,
                )  # fmt: skip
            # A store-wide setting: every space's handles, in every process, take it at their
            # next call (set_meta_value moves every space's change_seq; Handle.sync_model).
            h.store.set_meta_value(calibration_key(measured.model), measured.to_json())
            h.use_calibration(measured)
        return measured

    def reembed(
        self,
        embedder: Embedder,
        *,
        batch: int = 256,
        progress: bool = False,
        cut_over: bool = True,
    ) -> ReembedReport:
        """Switch the store (every space) to ``embedder``'s model while it serves
        (docs/design/reembed.md): the new vectors are written beside the old ones, ``batch``
        records and events per transaction, then one cut-over transaction embeds what was
        written meanwhile and replaces the store's vectors and model. Until then every handle
        on the old model reads and writes as before; after it they read lexically and refuse
        writes (reopen them with the new model); this handle adopts ``embedder``. Resumable: a
        call after a kill, or after ``cut_over=False``, continues where the last stopped.
        Thresholds are the new model's: run :meth:`calibrate` after."""
        batch = positive_int(batch, "batch")
        with self._call() as h:
            now = h.now()
        report = reembed.reembed(
            self._h, embedder, now=now, batch=batch, progress=progress, cut_over=cut_over
        )
        return report

    def reembed_state(self) -> ReembedState | None:
        """The model switch in progress (target, start, progress), or ``None``."""
        with self._call() as h:
            return h.store.reembed_state()

    def cancel_reembed(self) -> int:
        """Drop a model switch in progress and the vectors it made; returns how many."""
        with self._call() as h:
            return reembed.cancel(h)

    # -- reads (DESIGN §2) ----------------------------------------------------------------
    def recall(
        self, query: str, *, agent: str | None = None, agents: Sequence[str] | None = None,
        k: int | None = None, as_of: datetime | None = None, touch: bool = True,
        query_embedding: Vector | None = None, explain: bool = False,
        kinds: Iterable[Kind | str] | None = None, include_history: bool = False,
        valid_at: datetime | None = None, preset: str | ScoringConfig | None = None,
        crisis: str | None = None, asker: str | None = None, dedup: bool = True,
        rank_by: RankBy = "score", filter: FilterSpec | None = None, session: str | None = None,
        refresh_ttl: bool = False, options: ReadOptions | None = None,
    ) -> list[Hit]:  # fmt: skip
        """The top ``k`` records for ``query`` at ``as_of`` (default: now), best first (DESIGN
        §2; every option is documented on :class:`~chronomem.ReadOptions`, and ``options=``
        passes them as one value instead of the keywords).

        ``agent`` / ``agents``: whose memories (neither: every agent; multi-agent reads collapse
        equal texts into one hit listing every holder, unless ``dedup=False``). ``touch``
        stamps ``last_accessed_at = as_of`` on the returned records, durably, in this call;
        ``False`` is read-only. ``rank_by="similarity"`` orders hits by their raw cosine to the
        query (:attr:`Hit.similarity`) instead of their score.
        ``query_embedding`` replaces the embedder's vector; ``crisis`` (an event id) lifts
        records tied to its causes (DESIGN §4). Hits show records as they were scored, before
        this call's touch; an empty candidate set returns ``[]``. ``k`` defaults to the preset's
        ``default_k`` (10; 30 under ``generative-agents-code``, which also stamps backwards).
        ``refresh_ttl`` moves the expiry of each returned record that has a time to live to now
        plus its ``ttl`` (docs/lifecycle.md, "Time to live").
        """
        embeddings = None if query_embedding is None else [query_embedding]
        return self._read([query], embeddings, ReadOptions.from_arguments(locals()))[0]

    def recall_many(
        self, queries: Sequence[str], *, agent: str | None = None,
        agents: Sequence[str] | None = None, k: int | None = None, as_of: datetime | None = None,
        touch: bool = True, query_embeddings: Sequence[Vector | None] | None = None,
        explain: bool = False, kinds: Iterable[Kind | str] | None = None,
        include_history: bool = False, valid_at: datetime | None = None,
        preset: str | ScoringConfig | None = None, sequential: bool | None = None,
        crisis: str | None = None, asker: str | None = None, dedup: bool = True,
        rank_by: RankBy = "score", filter: FilterSpec | None = None, session: str | None = None,
        refresh_ttl: bool = False, options: ReadOptions | None = None,
    ) -> list[list[Hit]]:  # fmt: skip
        """Answer a batch of queries (one list of hits per query, in order), embedded in one
        batch; the arguments are :meth:`recall`'s.

        By default every query is scored against the same snapshot and the union of the hits is
        touched once at the end. ``sequential=True`` touches after each query, so a later query
        sees the earlier ones' touches — the Generative Agents code's behaviour, and the
        ``generative-agents-code`` preset's default.
        """
        return self._read(queries, query_embeddings, ReadOptions.from_arguments(locals()))

    # -- lifecycle (DESIGN §3) ------------------------------------------------------------
    def supersede(
        self, old_ids: str | Sequence[str], text: str, *, reason: str | None = None,
        actor: str | None = None, agent: str | None = None, kind: Kind | str | None = None,
        importance: float | None = None, occurred_at: datetime | None = None,
        valid_from: datetime | None = None, valid_until: datetime | None = None,
        domain: str | None = None, tags: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
        event_id: str | None = None, sensitivity: Sensitivity | str | None = None,
        speaker: str | None = None, session: str | None = None,
        ttl: float | timedelta | None = None, expires_at: datetime | None = None,
        source_id: str | None = None, embedding: Vector | None = None,
        passage_embeddings: Sequence[Vector] | None = None,
    ) -> WriteResult:  # fmt: skip
        """Store ``text`` as the replacement of ``old_ids`` and close them, atomically: each
        old record is ``superseded`` by the new id at now, its world-time window ending where
        the new record's begins; it stays readable by id, in :meth:`history`, with
        ``include_history=True`` and at earlier ``as_of``. The new record takes
        :meth:`remember`'s fields; those left ``None`` come from the old records: agent, kind,
        domain, importance, tags, metadata, speaker and session from the first, and the most
        sensitive of their
        sensitivities (a ``personal`` record corrected stays ``personal``). ``tags=()`` and
        ``metadata={}`` clear them. A time to live is not inherited: the replacement has the
        ``ttl`` or ``expires_at`` given here, or none.

        Raises:
            NotFoundError: an old id does not exist. ConflictError: one is already closed.
        """
        ids = list(id_list(old_ids, "old_ids"))
        fields = record_fields(locals())
        reason, actor = optional_text(reason, "reason"), optional_text(actor, "actor")
        with self._call() as h:
            return lifecycle.supersede(h, ids, fields, now=h.now(), reason=reason, actor=actor)

    def close_record(
        self, record_id: str, reason: str, *, valid_until: datetime | None = None,
        actor: str | None = None,
    ) -> Record:  # fmt: skip
        """Close a record without a successor: it stopped applying at ``valid_until`` (default
        now). It stays readable by id, in history and in reads of earlier instants; the reason
        is kept on the record and in the audit log. Records citing it are flagged.

        Raises:
            ConflictError: the record is already closed or superseded.
        """
        reason, actor = require_text(reason, "reason"), optional_text(actor, "actor")
        until = optional_instant(valid_until, "valid_until")
        with self._call() as h:
            return lifecycle.close_record(h, record_id, now=h.now(), reason=reason,
                                          valid_until=until, actor=actor)  # fmt: skip

    def expire(self) -> list[str]:
        """Store now the close of every record of this space whose time to live has run out
        (each at its own ``expires_at``, ``closed_reason="expired"``, audited by actor
        ``ttl``) and return their ids, oldest expiry first. Reads never need it — they treat
        such a record as closed from its expiry — and every write does it first; this is the
        sweep for a store nobody writes to (LangGraph's ``sweep_ttl``)."""
        with self._call() as h:
            now = h.now()
            with h.store.write():
                return h.expire_due(now)

    def verify(
        self, record_id: str, *, actor: str | None = None, reason: str | None = None
    ) -> Record:
        """Confirm the record is still true: ``last_verified_at = now``, which resets its
        staleness decay."""
        reason, actor = optional_text(reason, "reason"), optional_text(actor, "actor")
        with self._call() as h:
            return lifecycle.verify(h, record_id, now=h.now(), actor=actor, reason=reason)

    def feedback(
        self, record_id: str, signal: str | float, reason: str | None = None, *,
        actor: str | None = None,
    ) -> Record:  # fmt: skip
        """Rate a record: ``"helpful"`` (+1), ``"harmful"`` (-1) or a number in [-1, 1].

        Ratings are appended to the audit log; their sum sets the feedback factor (DESIGN §2
        step 5): a harmful rating ranks the record below an otherwise equal alternative. The
        text never changes.
        """
        reason, actor = optional_text(reason, "reason"), optional_text(actor, "actor")
        with self._call() as h:
            return lifecycle.feedback(h, record_id, signal, now=h.now(), reason=reason, actor=actor)

    def forget(
        self, record_id: str, reason: str, *, purge: bool = False, actor: str | None = None
    ) -> ForgetResult:
        """Hard-delete a record — for secrets, personal data, and noise nothing depends on.

        A record cited as evidence or in a supersession chain is not deleted:
        :class:`DependentsExistError` names the dependants (close it instead). Records marked
        ``secret`` or ``personal``, or ``purge=True``, are purged whatever depends on them: row,
        vector and postings are deleted (SQLite also rewrites the file and empties its log;
        PostgreSQL: :meth:`scrub`); records citing it are flagged ``evidence_missing``. The
        audit log keeps the id and the reason, never the content.
        """
        reason, purge = require_text(reason, "reason"), flag(purge, "purge")
        actor = optional_text(actor, "actor")
        with self._call() as h:
            return lifecycle.forget(
                h, record_id, now=h.now(), reason=reason, purge=purge, actor=actor
            )

    def scrub(self) -> ScrubResult:
        """Finish erasing purged records: rewrite the store's files so no byte of them is left.
        SQLite: VACUUM and a truncating checkpoint (as every purge does). PostgreSQL: ``VACUUM
        (FULL, ANALYZE)`` of chronomem's tables — locking them while it runs — and
        ``CHECKPOINT``, by the tables' owner; ``remains`` names what only the server drops
        later (WAL, archives, replicas, backups)."""
        with self._call() as h:
            remains = h.store.scrub(full=True)
            return ScrubResult(scrubbed=remains is None, remains=remains)

    # -- core memory blocks (DESIGN §3) ------------------------------------------------------
    def core_append(
        self, agent: str, label: str, text: str, *, actor: str | None = None,
        limit: int = DEFAULT_CORE_LIMIT,
    ) -> CoreBlock:  # fmt: skip
        """Append ``text`` to the agent's block ``label`` (created when missing): the current
        version is superseded by one holding both, audited with ``actor``. Refused, writing
        nothing, when the block would exceed ``limit`` characters."""
        return self._edit(agent, label, core.appending(text), actor, limit)

    def core_replace(
        self, agent: str, label: str, old: str, new: str, *, actor: str | None = None,
        limit: int = DEFAULT_CORE_LIMIT,
    ) -> CoreBlock:  # fmt: skip
        """Replace every occurrence of ``old`` in the agent's block ``label`` with ``new`` (which
        may be empty) — a supersession, never an overwrite: the previous version stays readable
        in :meth:`history` and as of its time.

        Raises:
            NotFoundError: no such block, or ``old`` is not in it.
        """
        return self._edit(agent, label, core.replacing(old, new), actor, limit)

    def _edit(
        self, agent: str, label: str, change: Callable[[str | None], str], actor: str | None,
        limit: int,
    ) -> CoreBlock:  # fmt: skip
        agent, label = require_text(agent, "agent"), core.check_label(label)
        limit = positive_int(limit, "limit")
        with self._call() as h:
            return core.edit(h, agent, label, change, now=h.now, actor=actor, limit=limit)

    # -- review (DESIGN §3) ---------------------------------------------------------------
    def approve(self, proposal_id: str, *, actor: str | None = None) -> Proposal:
        """Apply an open review proposal through the normal write path — verify, close,
        supersede or forget — in one transaction, audited with ``actor`` (the approver).

        Raises:
            NotFoundError: no such proposal. ConflictError: it was already decided, or its
            records changed so it no longer applies (nothing is written).
        """
        with self._call() as h:
            return review.approve(h, require_id(proposal_id, "proposal_id"), now=h.now(),
                                  actor=actor)  # fmt: skip

    def reject(self, proposal_id: str, reason: str, *, actor: str | None = None) -> Proposal:
        """Reject an open proposal, with the reason: it stays away until its records change."""
        reason = require_text(reason, "reason")
        with self._call() as h:
            return review.reject(h, require_id(proposal_id, "proposal_id"), reason=reason,
                                 now=h.now(), actor=actor)  # fmt: skip

    def set_access_log(self, on: bool) -> None:
        """Turn this space's access log on or off (every process serving the space follows):
        while on, each read records who read which record, when, with which query. Reads stay
        read-only for the memories themselves."""
        on = flag(on, "on")
        with self._call() as h:
            h.store.set_space_setting(h.space, read.ACCESS_LOG, "on" if on else None)

    # -- reflection (DESIGN §5) -----------------------------------------------------------
    def maybe_reflect(
        self, agent: str, *, llm: LLMClient | None = None, as_of: datetime | None = None
    ) -> ReflectionResult | None:
        """Reflect if the agent's accumulated importance reached the threshold (paper: 150)."""
        with self._call() as h:  # the lock is re-entrant: the check and the reflection are one
            if not reflect.is_due(h, require_text(agent, "agent")):
                return None
            return self.reflect(agent, llm=llm, as_of=as_of)

    def reflect(
        self, agent: str, *, llm: LLMClient | None = None, as_of: datetime | None = None,
        touch: bool | None = None, config: ReflectionConfig | None = None,
    ) -> ReflectionResult:  # fmt: skip
        """Reflect now (Park et al. 2023 §4.2; docs/reflection.md): focal questions about the
        agent's recent records, evidence for each, insights citing it by number — every answer
        validated and retried with the reasons — stored in one transaction as ``reflection``
        records citing their evidence; the accumulated importance is reset with them.

        ``llm`` defaults to the one given to :meth:`open`; ``as_of`` (default now) limits the
        records used; ``touch``: whether evidence retrieval touches (default: read-only).

        Raises:
            ConfigError: no LLM. ReflectionError: invalid answers after every retry, the model
            unreachable, or nothing to reflect on — and nothing was stored.
        """
        agent = require_text(agent, "agent")
        at = optional_instant(as_of, "as_of")
        with self._call() as h:
            return reflect.reflect(
                h, agent, now=h.now(), llm=llm, as_of=at, touch=touch, config=config
            )

    # -- moving data in and out (DESIGN §6) -----------------------------------------------
    def import_(self, path: str | os.PathLike[str]) -> ImportReport:
        """Load a JSONL archive into this space, ids preserved, in one transaction.

        Every line is validated and every reference (evidence, supersedes, superseded_by, link
        ends) must resolve to the archive or this space. On any problem nothing is written.

        Raises:
            InvalidInputError: malformed lines or dangling references, listed by line.
            ConflictError: an id in the archive already exists in the store.
            EmbedderMismatchError: the archive's vectors come from another embedder.
        """
        path = path_value(path)
        with self._call() as h:
            return transfer.import_archive(h, path)

    def import_generative_agents(
        self, persona_dir: str | os.PathLike[str], agent: str | None = None, *,
        progress: bool = False,
    ) -> GAImportReport:  # fmt: skip
        """Import a Generative Agents persona's ``associative_memory/`` folder (the persona
        folder, its ``bootstrap_memory/``, or the folder itself) as ``agent`` (default: the
        scratch file's name), in one transaction; the report lists, by node id, everything that
        could not be carried over exactly. The mapping is in docs/reflection.md.
        """
        agent, persona_dir = optional_text(agent, "agent"), path_value(persona_dir, "persona_dir")
        with self._call() as h:
            return transfer.import_generative_agents(h, persona_dir, agent, progress=progress)
