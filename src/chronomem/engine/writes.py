"""The writes of :class:`~chronomem.Memory` (DESIGN §3): records one at a time or in batches,
a conversation's messages as its turns and the memories an LLM extracts from them (issue 29),
and the vector backfills. The work is
``write.py``'s, ``backfill.py``'s and, for messages, ``writing/messages.py``'s."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from chronomem.checks import flag, optional_text, require_text
from chronomem.engine import backfill, extract, reflect, write
from chronomem.engine.view import MemoryView, Vector
from chronomem.engine.write import record_fields
from chronomem.extraction.policy import ExtractionPolicy
from chronomem.extraction.report import ExtractionReport
from chronomem.llm.base import LLMClient
from chronomem.model.record import Kind, Sensitivity, WriteResult
from chronomem.writing.messages import turns

__all__ = ["MESSAGES_PER_TRANSACTION", "WriteVerbs"]

#: The turns of a long history written per transaction (each its own, so a backfill killed
#: midway keeps what it wrote; sending it again skips those).
MESSAGES_PER_TRANSACTION = 1000


class WriteVerbs(MemoryView):
    """Writes (see the module docstring)."""

    def remember(
        self, text: str, *, agent: str = "default", kind: Kind | str = Kind.OBSERVATION,
        importance: float | None = None, occurred_at: datetime | None = None,
        valid_from: datetime | None = None, valid_until: datetime | None = None,
        domain: str | None = None, tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None, evidence: Sequence[str] = (),
        event_id: str | None = None, supersedes: Sequence[str] = (),
        sensitivity: Sensitivity | str = Sensitivity.NORMAL, speaker: str | None = None,
        session: str | None = None, ttl: float | timedelta | None = None,
        expires_at: datetime | None = None, source_id: str | None = None,
        embedding: Vector | None = None,
        passage_embeddings: Sequence[Vector] | None = None, replace: bool = False,
        actor: str | None = None,
    ) -> WriteResult:  # fmt: skip
        """Store one record and return a :class:`WriteResult`.

        ``recorded_at`` and the first ``last_accessed_at`` are the clock's now; ``occurred_at``
        (world time) defaults to it. ``importance`` is 1..10; when omitted the configured scorer
        gives it. ``embedding`` supplies the vector instead of the embedder (with
        ``embedder=None`` the first vector fixes the store's dimension);
        ``passage_embeddings`` adds vectors the record also matches by (one per passage: under
        a preset with passages its cosine is the best of its own and these). ``supersedes``
        closes the named open records in the same transaction (see :meth:`supersede`).
        ``replace=True`` (with a ``domain``) makes the record the agent's one open record of
        exactly that domain: the open ones are superseded in the same transaction — a keyed
        write, as a key-value store's put; concurrent replacing writes of one domain serialise
        (in every process) and leave exactly one open record. A fact or instruction nearly
        duplicating an open one of the same agent and domain is not stored (``stored=False``,
        ``duplicate_of``) unless it supersedes or replaces something. ``speaker`` says who said
        it (a name, or a role such as ``user``): the model and the full-text index read the text
        with the speaker named, and questions about what someone said find it, as they find a
        transcript line ``"Name: words"`` or a line of prose ``'Name said, "words"'``.
        ``session`` names the conversation, thread or run it belongs to: reads can keep to one
        (``recall(..., session=...)``) or span them all (the default). ``ttl`` (seconds or a
        ``timedelta``) or ``expires_at`` gives the record a time to live: it is closed when it
        passes — every read from then treats it as closed, the next write stores the close
        (``closed_reason="expired"``, audited) and history keeps it; ``refresh_ttl=True`` on a
        read extends it (docs/lifecycle.md, "Time to live").

        Raises:
            InvalidInputError: bad input; nothing is written.
            NotFoundError: a cited, superseded or witnessed id does not exist in this space.
            ConflictError: a superseded record is already closed.
        """
        return self.remember_many([record_fields(locals())], actor=actor)[0]

    def remember_many(
        self,
        items: Iterable[str | Mapping[str, Any]],
        *,
        agent: str | None = None,
        kind: Kind | str | None = None,
        session: str | None = None,
        progress: bool = False,
        actor: str | None = None,
    ) -> list[WriteResult]:
        """Store many records in one transaction, embedding them in batches.

        Each item is a text or a mapping of :meth:`remember`'s keyword arguments; ``agent``,
        ``kind`` and ``session`` apply to the items that do not set them. Evidence may cite
        earlier items of the batch. All or nothing: on any invalid item nothing is written and
        the error names its position. Items the write gate refuses come back with
        ``stored=False``.
        """
        batch = write.batch_items(items, {"agent": agent, "kind": kind, "session": session})
        actor, progress = optional_text(actor, "actor"), flag(progress, "progress")
        ready = write.embed_ahead(self._h, batch, progress=progress)  # outside the lock
        with self._call() as h:
            now = h.now()
            results = write.write(h, batch, now=now, progress=progress, actor=actor, ready=ready)
            reflect.auto_reflect(h, (str(i.get("agent", "default")) for i in batch), now=now)
            return results

    def embed_records(self, *, progress: bool = False, batch: int = 512) -> int:
        """Embed (with its passages) every record of this space written without a vector,
        ``batch`` per transaction; returns how many gained one. Every process's arrays pick
        them up on their next read. Needs the store's embedder."""
        with self._call() as h:
            return backfill.embed_records(h, progress=progress, batch=batch)

    def embed_passages(self, *, progress: bool = False, batch: int = 512) -> int:
        """Backfill passage vectors: embed the sentences of every record of this space with a
        vector, several sentences and no passages (written before store version 5, with
        ``passages=False``, or imported without them), ``batch`` records per transaction;
        returns how many gained them. Every process's arrays pick them up on their next read."""
        with self._call() as h:
            return backfill.embed_passages(h, progress=progress, batch=batch)

    def remember_messages(
        self,
        messages: Iterable[Any],
        *,
        agent: str = "default",
        session: str | None = None,
        progress: bool = False,
        actor: str | None = None,
    ) -> list[WriteResult]:
        """Store a conversation: each user or assistant turn of ``messages`` (OpenAI chat
        messages, LangChain messages or their dicts) as a ``chat`` record of ``agent`` in
        ``session``, its speaker the message's ``name`` or its role, ``occurred_at`` its
        ``timestamp`` / ``created_at`` if it has one. One result per message, in order:
        ``system``, ``developer`` and ``tool`` messages and turns without text come back
        ``stored=False`` with the reason. Idempotent: each turn's ``source_id`` is the
        message's ``id`` (else a hash of its session, timestamp or position, role, name and
        text), and a turn the agent already holds comes back ``stored=False`` with
        ``duplicate_of`` — a retried batch never lands twice. Long histories go
        :data:`MESSAGES_PER_TRANSACTION` turns per transaction; one killed midway is resumed
        by sending it again (docs/design/conversations.md).

        Raises:
            InvalidInputError: a message of a shape it does not read (naming its position);
                nothing of the batch is written.
        """
        agent = require_text(agent, "agent")
        read = turns(messages, session=optional_text(session, "session"))
        results: list[WriteResult | None] = [
            None if t.fields is not None else WriteResult(stored=False, id=None, reason=t.skipped)
            for t in read
        ]
        spoken = [(i, t.fields) for i, t in enumerate(read) if t.fields is not None]
        with self._call() as h:  # what a resumed backfill holds already is not embedded again
            held = h.store.stored_sources(h.space, [(agent, f["source_id"]) for _, f in spoken])
        todo = []
        for i, fields in spoken:
            earlier = held.get((agent, fields["source_id"]))
            if earlier is None:
                todo.append((i, fields))
            else:
                why = f"already stored: record {earlier} was made from this message"
                results[i] = WriteResult(stored=False, id=None, reason=why, duplicate_of=earlier)
        for start in range(0, len(todo), MESSAGES_PER_TRANSACTION):
            chunk = todo[start : start + MESSAGES_PER_TRANSACTION]
            written = self.remember_many(
                [f for _, f in chunk], agent=agent, progress=progress, actor=actor
            )
            for (i, _), result in zip(chunk, written, strict=True):
                results[i] = result
        return [r for r in results if r is not None]

    def extract(
        self,
        agent: str = "default",
        *,
        session: str | None = None,
        llm: LLMClient | None = None,
        policy: ExtractionPolicy | None = None,
    ) -> ExtractionReport:
        """Let an LLM propose memories from the agent's new conversation turns (those of
        ``session``, if given, stored since the last extraction) and take each through the
        lifecycle (docs/design/conversations.md, part 2): ``ADD`` writes a fact, preference,
        instruction, plan or event citing the turns it came from; ``SUPERSEDE`` replaces one of
        the agent's open memories (the old value stays readable as of its time); ``CLOSE`` ends
        one; ``NOTHING`` keeps what is remembered. A proposal that fails validation (an invented
        turn, a memory not shown, no text) or rests on the assistant's turns alone is reported
        in ``rejected``, never stored; an instruction resting on a speaker not trusted
        (``policy.trusted_speakers``), a secret, or every proposal under ``policy.mode=
        "review"`` is queued for review (``queued``: ``approve`` / ``reject``). Applied changes
        are audited with actor ``extractor:<model>``.

        Raises:
            ConfigError: no LLM. ExtractionError: the answers for a batch kept the wrong shape
                after the repair retry, or the model could not be reached; that batch and the
                later ones are read again by the next extraction.
        """
        agent = require_text(agent, "agent")
        session = optional_text(session, "session")
        with self._call() as h:
            return extract.extract(h, agent, session=session, llm=llm, policy=policy, now=h.now())
