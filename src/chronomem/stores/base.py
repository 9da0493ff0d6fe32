"""The storage contract every backend implements (SQLite and PostgreSQL).

Stores speak in values: :class:`~chronomem.model.Record` for single records and
:class:`RecordColumns` for the columnar batches that feed the in-memory scoring arrays. Instants
cross this boundary as integer microseconds since the Unix epoch in columns and as aware datetimes
in records. Every write method is one transaction: it either all happens or none of it does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from chronomem.arrays import F32, F64, I64
from chronomem.model.audit import AuditEntry, Closure
from chronomem.model.change import Change, Webhook, WebhookFailure
from chronomem.model.event import Event, Link
from chronomem.model.keys import ApiKey
from chronomem.model.record import Record
from chronomem.model.review import Access, Proposal, ProposalStatus
from chronomem.stores.reembedding import Pending, PendingVector, ReembedState

__all__ = [
    "NEVER",
    "SINCE_EVER",
    "EmbeddingMeta",
    "LexicalMatches",
    "MemoryStore",
    "RecordColumns",
    "StoredRecord",
    "Touch",
]

# Sentinels for open-ended instants in integer columns: "no valid_until" is NEVER, "no
# valid_from / never verified" is SINCE_EVER. Chosen so plain comparisons implement the semantics.
NEVER = np.iinfo(np.int64).max
SINCE_EVER = np.iinfo(np.int64).min


@dataclass(frozen=True, slots=True)
class Touch:
    """One read's stamp of ``last_accessed_at`` on the records it returned (DESIGN §2, step 9):
    ``at_us`` in microseconds; ``backwards``: even when that is earlier than the stamp held."""

    ids: tuple[str, ...]
    at_us: int
    backwards: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingMeta:
    """What the store's vectors are: the model that made them (``None`` when vectors were supplied
    by the caller) and their dimension (``None`` before the first vector)."""

    model: str | None
    dim: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredRecord:
    """A record together with its raw (as given) embedding, for writes and exports, and the
    vectors of its passages (one row per :func:`chronomem.text.passages` item) when it has them."""

    record: Record
    embedding: F32 | None
    passages: F32 | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordColumns:
    """A columnar batch of records of one space, ordered by ``pk`` ascending.

    Open-ended instants use the :data:`NEVER` / :data:`SINCE_EVER` sentinels. ``embeddings`` holds
    raw vectors (zeros where ``has_embedding`` is false) or is ``None`` when the batch has none;
    ``passages`` each row's raw passage vectors (``None``: the record has none).
    ``valid_until_before`` is the window end a read must use for instants before ``superseded_at``
    (the current ``valid_until`` for records never closed). ``embedding_keys`` holds each row's
    ``metadata[EMBEDDING_KEY]`` (``None`` when it has none). ``texts`` are the texts as read
    (``Record.read_text``: the speaker named, one shape). ``tags`` and ``metadata`` are the
    stored JSON (``None`` for none), parsed only when a filter reads them; ``sensitivity`` and
    ``status`` the stored values (the status as it stands now: a read at an earlier instant
    tells from ``superseded_at`` whether it had ended then).
    """

    pk: I64
    ids: list[str]
    agents: list[str]
    kinds: list[str]
    texts: list[str]
    importance: F64
    recorded_at: I64
    occurred_at: I64
    last_accessed_at: I64
    last_verified_at: I64
    valid_from: I64
    valid_until: I64
    superseded_at: I64
    feedback_score: F64
    valid_until_before: I64
    domains: list[str | None]
    event_ids: list[str | None]
    has_embedding: npt.NDArray[np.bool_]
    embeddings: F32 | None
    passages: list[F32 | None]
    embedding_keys: list[str | None]
    tags: list[str | None]
    metadata: list[str | None]
    sensitivity: list[str]
    status: list[str]
    sessions: list[str | None]
    speakers: list[str | None]

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True, kw_only=True)
class LexicalMatches:
    """Full-text matches: the store key of each matching record and its BM25 score (higher is
    better, >= 0)."""

    pk: I64
    score: F64


class MemoryStore(Protocol):
    """What the engine needs from a backend."""

    location: str
    #: How many write transactions of this handle ended without committing. Anything read
    #: inside one (an in-memory index synchronised there) may hold rows that never existed.
    aborted_writes: int
    #: Records this connection inserted (committed or not), per space: a handle that only wrote
    #: writes the index snapshot at close when they are many (``retrieval/space.py``).
    inserted: dict[str, int]

    def close(self) -> None: ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every read inside sees one consistent state."""
        ...

    # -- store metadata -------------------------------------------------------------------
    def schema_version(self) -> int: ...

    def embedding_meta(self) -> EmbeddingMeta: ...

    def set_embedding_meta(self, meta: EmbeddingMeta) -> None:
        """Record model and dimension; allowed only while the store has no dimension yet."""
        ...

    def meta_value(self, key: str) -> str | None:
        """A store-wide setting (``store_meta``), e.g. a model's calibration; ``None``: unset."""
        ...

    def set_meta_value(self, key: str, value: str | None) -> None:
        """Set (``None``: remove) a store-wide setting, atomically."""
        ...

    # -- a switch to another embedding model (docs/design/reembed.md) -----------------------
    #: The model whose vectors this handle writes; a vector write refuses them (inside its
    #: transaction) once the store records another model. ``None``: no check.
    vector_model: str | None

    def reembed_state(self) -> ReembedState | None: ...

    def reembed_start(self, model: str, dim: int, started: str) -> None:
        """Begin a switch to ``model``, or continue one to it (another is a ConflictError)."""
        ...

    def reembed_todo(self, limit: int | None) -> list[Pending]: ...

    def reembed_put(self, rows: Sequence[PendingVector]) -> None: ...

    def reembed_cut_over(
        self, model: str, dim: int, stragglers: Callable[[list[Pending]], list[PendingVector]]
    ) -> int:
        """The cut-over, in one transaction (see :func:`chronomem.stores.sql.reembed.cut_over`)."""
        ...

    def reembed_cancel(self) -> int: ...

    # -- writes ---------------------------------------------------------------------------
    def insert_records(self, space: str, items: Sequence[StoredRecord]) -> None:
        """Insert records atomically; an id that exists raises ``ConflictError``."""
        ...

    def touch(self, space: str, touches: Sequence[Touch]) -> int:
        """Apply ``touches`` in order, in one transaction: each sets ``last_accessed_at =
        max(last_accessed_at, at_us)`` for its ``ids`` (``backwards``: ``= at_us`` even when
        that is earlier); return how many rows changed."""
        ...

    # -- reads ----------------------------------------------------------------------------
    def get_records(self, space: str, ids: Sequence[str]) -> list[Record]:
        """Records by id, in the order asked; unknown ids are left out."""
        ...

    def stored_sources(
        self, space: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str]:
        """The ids of the records already made from these ``(agent, source_id)`` pairs."""
        ...

    def get_embedding(self, space: str, record_id: str) -> F32 | None: ...

    def agents(self, space: str) -> list[str]: ...

    def change_seq(self, space: str) -> int:
        """A counter that grows with every committed change to the space."""
        ...

    def load_columns(
        self, space: str, agents: Sequence[str], *, after_seq: int | None = None
    ) -> RecordColumns:
        """Every record of ``agents`` (or only those changed after ``after_seq``)."""
        ...

    def removed_since(self, space: str, after_seq: int) -> list[tuple[str, str]]:
        """``(record_id, agent)`` of records deleted after ``after_seq``."""
        ...

    def own_touches(self, space: str, after_seq: int, seq: int) -> list[tuple[Touch, ...]] | None:
        """When every change to the space after ``after_seq`` up to ``seq`` is a touch this
        store object committed in a transaction of its own: their touches, in order (a reader
        holding the state at ``after_seq`` reaches ``seq`` by stamping them itself); else
        ``None``. Only the last few touches are remembered."""
        ...

    def index_path(self, space: str) -> Path | None:
        """Where the in-memory index of ``space`` may be saved between runs (a file the store
        owns: :meth:`scrub` deletes it), or ``None`` when this store keeps none."""
        ...

    def lexical(self, space: str, agents: Sequence[str], query: str) -> LexicalMatches:
        """BM25 over the full-text index for records of ``agents`` matching any query term."""
        ...

    def warm_lexical(self, space: str) -> int:
        """Hold the postings of the space's most frequent terms now, so the first reads that
        ask for them do not fetch them; returns how many postings were fetched (0: none worth
        it)."""
        ...

    def nearest(
        self, space: str, agents: Sequence[str], vector: np.ndarray, *, namespace: int, k: int
    ) -> I64 | None:
        """Candidate pre-selection: the store keys of records of ``agents`` whose vectors are
        nearest to ``vector`` (approximately), when this store pre-selects for a namespace of
        ``namespace`` records and a read of ``k``; ``None`` means every record is scored
        exactly (always, on SQLite)."""
        ...

    def iter_records(self, space: str) -> Iterator[StoredRecord]:
        """Every record of the space with its raw embedding, in insertion order."""
        ...

    def spaces(self) -> list[str]:
        """Every space the store holds, by name."""
        ...

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` exist anywhere in the store (ids are unique store-wide)."""
        ...

    def stats(self, space: str) -> dict[str, Any]: ...

    # -- lifecycle (each is one transaction, or joins the one ``write()`` opened) --------------
    def write(self) -> AbstractContextManager[None]:
        """A write transaction: every write method called inside commits together."""
        ...

    def lock_space(self, space: str) -> None:
        """Inside a write transaction: hold the space's write lock until the transaction ends,
        so a write that reads before it writes (``replace=True``) serialises with every other
        writer of the space, in every process."""
        ...

    def close_records(self, space: str, closures: Sequence[Closure]) -> None: ...

    def expiring(self, space: str, now_us: int) -> list[str]:
        """The ids of open records whose ``expires_at`` is at or before ``now_us``."""
        ...

    def refresh_expiry(self, space: str, ids: Sequence[str], now_us: int) -> int:
        """Extend each open, unexpired record's expiry to ``now_us`` + its ``ttl``."""
        ...

    def set_verified(self, space: str, record_id: str, at_us: int) -> None: ...

    def set_passages(self, space: str, items: Sequence[tuple[str, F32]]) -> None:
        """Store passage vectors for records that had none (a backfill), bumping their
        ``change_seq`` so every process's arrays pick them up."""
        ...

    def set_embeddings(self, space: str, items: Sequence[tuple[str, F32, F32 | None]]) -> int:
        """Give records written without a vector ``(id, vector, passages or None)``, in one
        transaction; records that have a vector meanwhile are left alone. Returns how many
        changed."""
        ...

    def add_feedback(self, space: str, record_id: str, signal: float) -> float:
        """Add a rating to the record's summed score and return the new score (the rating itself
        is logged by the caller in the audit log)."""
        ...

    def dependants(self, space: str, record_id: str) -> list[tuple[str, str]]:
        """``(record_id, relation)`` of every record that depends on ``record_id``: records citing
        it as evidence and its neighbours in a supersession chain."""
        ...

    def delete_records(self, space: str, ids: Sequence[str], *, purge: bool) -> None:
        """Delete rows, vectors and full-text postings, leaving a tombstone (id and agent only)
        for other processes' arrays. ``purge`` says the caller will :meth:`scrub` next."""
        ...

    def scrub(self, *, full: bool = False) -> str | None:
        """After a purge committed, erase what the store can of the deleted bytes. Called after
        every purge with ``full=False`` (SQLite: rewrite the file and empty the write-ahead
        log; a server store does nothing that would lock its tables), and by
        :meth:`Memory.scrub <chronomem.Memory.scrub>` with ``full=True`` (PostgreSQL: rewrite
        chronomem's tables). Returns ``None`` when no byte is left in the store's files, else
        where copies may remain and what completes the erasure."""
        ...

    def flag_evidence(self, space: str, cited_ids: Sequence[str], status: str) -> list[str]:
        """Set ``evidence_status`` on every record citing one of ``cited_ids``; return their ids."""
        ...

    def append_audit(self, space: str, entries: Sequence[AuditEntry]) -> None: ...

    def audit(self, space: str, record_id: str | None = None) -> list[AuditEntry]: ...

    # -- reflection trigger ---------------------------------------------------------------
    def accumulated_importance(self, space: str, agent: str) -> float:
        """Importance summed over the agent's non-reflection records since the last reset
        (``insert_records`` adds to it in the same transaction)."""
        ...

    def set_accumulated_importance(self, space: str, agent: str, value: float) -> None: ...

    # -- causal graph ---------------------------------------------------------------------
    def insert_event(self, space: str, event: Event, embedding: F32 | None) -> None: ...

    def get_events(self, space: str, ids: Sequence[str]) -> list[Event]:
        """Events by id, in the order asked; unknown ids are left out."""
        ...

    def iter_events(self, space: str) -> Iterator[tuple[Event, F32 | None]]:
        """Every event of the space with its raw embedding, in insertion order."""
        ...

    def event_embeddings(self, space: str, ids: Sequence[str]) -> dict[str, F32]:
        """Raw vectors of the events that have one."""
        ...

    def events_between(
        self,
        space: str,
        *,
        after_us: int | None = None,
        before_us: int | None = None,
        scope: str | None = None,
    ) -> list[Event]:
        """Events that occurred in ``[after_us, before_us)`` (``None``: unbounded on that side;
        optionally of one scope), by time."""
        ...

    def put_link(self, space: str, link: Link) -> None:
        """Insert or replace the link of ``(cause, effect)``."""
        ...

    def get_link(self, space: str, cause: str, effect: str) -> Link | None: ...

    def delete_link(self, space: str, cause: str, effect: str) -> bool: ...

    def links(self, space: str, *, as_of_us: int | None = None) -> list[Link]:
        """Every link of the space (created at or before ``as_of_us``)."""
        ...

    def graph_seq(self, space: str) -> int:
        """The space's ``change_seq`` when its events, links or their vectors last changed
        (0: never): what a read's causal inputs are kept for."""
        ...

    # -- the HTTP service ------------------------------------------------------------------
    def insert_key(self, key: ApiKey) -> None:
        """Store a new API key (its digest); an id that exists raises ``ConflictError``."""
        ...

    def get_key(self, key_id: str) -> ApiKey | None: ...

    def api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones included, oldest first."""
        ...

    def revoke_key(self, key_id: str, at_us: int) -> bool:
        """Mark an active key revoked; returns whether it was active."""
        ...

    def space_clock(self, space: str) -> int | None:
        """The space's simulated now in microseconds, or ``None`` when it follows the wall clock."""
        ...

    def set_space_clock(self, space: str, now_us: int | None) -> None:
        """Set the space's simulated now (``None``: back to the wall clock)."""
        ...

    # -- the change feed and webhooks (docs/design/change-feed.md) ----------------------------
    # Every method above that changes a space appends its changes to the feed, in its
    # transaction; these read the feed and keep the webhook subscriptions.
    def changes(self, space: str, after: int, limit: int) -> list[Change]:
        """At most ``limit`` changes of ``space`` after ``seq = after``, oldest first."""
        ...

    def feed_head(self, space: str) -> int:
        """The newest change's ``seq`` (0: none)."""
        ...

    def insert_webhook(self, hook: Webhook) -> None: ...

    def webhooks(self, space: str | None = None) -> list[Webhook]:
        """Subscriptions of ``space`` (``None``: all), without their secrets."""
        ...

    def get_webhook(self, webhook_id: str, *, secret: bool = False) -> Webhook | None: ...

    def delete_webhook(self, space: str, webhook_id: str) -> bool: ...

    def lease_webhook(self, webhook_id: str, owner: str, now_us: int, until_us: int) -> bool:
        """Take or renew the right to deliver a subscription; ``False``: another holds it."""
        ...

    def webhook_delivered(self, webhook_id: str, seq: int) -> None: ...

    def webhook_failed(self, failure: WebhookFailure, next_attempt_us: int) -> None: ...

    def webhook_failures(self, webhook_id: str) -> list[WebhookFailure]: ...

    # -- review and the access log -----------------------------------------------------------
    def put_proposals(self, space: str, found: Sequence[Proposal]) -> None:
        """Store proposals not stored yet (their ids are content-derived)."""
        ...

    def proposals(
        self, space: str, *, ids: Sequence[str] | None = None, status: str | None = None
    ) -> list[Proposal]: ...

    def decide_proposal(
        self, space: str, proposal_id: str, status: ProposalStatus, *, at_us: int,
        by: str | None, reason: str | None,
    ) -> bool:  # fmt: skip
        """Close an open proposal; returns whether it was open."""
        ...

    def log_access(self, space: str, entries: Sequence[Access]) -> None: ...

    def accesses(
        self, space: str, *, record_id: str | None = None, limit: int = 100
    ) -> list[Access]:
        """The newest ``limit`` reads (of one record), newest first."""
        ...

    def access_counts(self, space: str, *, since_us: int) -> dict[str, int]: ...

    def space_setting(self, space: str, key: str) -> str | None: ...

    def set_space_setting(self, space: str, key: str, value: str | None) -> None: ...
