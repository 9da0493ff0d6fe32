"""The lifecycle verbs (DESIGN §3): supersede, close, history, verify, feedback, forget, audit."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, overload

from chronomem.clock import to_micros
from chronomem.engine.reading import _Reading
from chronomem.errors import (
    DependentsExistError,
    InvalidInputError,
)
from chronomem.lifecycle.rules import plan_closures, signal_value
from chronomem.model.audit import AuditEntry, ForgetResult
from chronomem.model.record import EvidenceStatus, Record, Sensitivity, WriteResult
from chronomem.writes import (
    REMEMBER_FIELDS,
    optional_instant,
    require_text,
)


class _Lifecycle(_Reading):
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
            self._close_handle()
            return None
        reason = require_text(reason, "reason")
        until = optional_instant(valid_until, "valid_until")
        with self._lock:
            self._require_open()
            now = self._clock.now()
            with self._store.write():
                record = self.get(record_id)
                plans = plan_closures(
                    [record], at=now, successor=None, reason=reason, valid_until=until
                )
                self._store.close_records(self._space, plans)
                self._store.flag_evidence(self._space, [record_id], EvidenceStatus.SUPERSEDED.value)
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
            remains = self._store.scrub() if purge else None
            return ForgetResult(
                record_id=record_id,
                purged=purge,
                flagged=tuple(flagged),
                scrubbed=remains is None,
                remains=remains,
            )

    def audit(self, record_id: str | None = None) -> list[AuditEntry]:
        """The audit log of this space (or of one record), oldest first."""
        with self._lock:
            self._require_open()
            return self._store.audit(self._space, record_id)
