"""The facade's changes by filter (DESIGN §3; docs/filters.md, "Changing many records"):
:class:`~chronomem.Memory` takes ``close_where``, ``verify_where`` and ``forget_where`` from
:class:`FilterVerbs`. Each checks its arguments, takes the handle's lock, reads the clock once and
calls ``engine/bulk.py``, which changes every selected record in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chronomem.checks import flag, optional_instant, optional_text, require_text
from chronomem.engine import bulk
from chronomem.engine.view import MemoryView
from chronomem.errors import InvalidInputError
from chronomem.model.audit import BulkResult
from chronomem.model.filter import Filter, FilterSpec
from chronomem.retrieval.options import ReadOptions

__all__ = ["FilterVerbs"]


def _selection(arguments: dict[str, object]) -> tuple[tuple[str, ...] | None, Filter]:
    """The agents and filter of a change by filter; an empty filter is refused (name what to
    change: ``{"agent": {"$exists": true}}`` selects every record)."""
    options = ReadOptions.from_arguments(arguments)
    where = options.parsed_filter
    if where is None:
        raise InvalidInputError(
            'a change by filter needs a filter that selects something: {"agent": "ana"}, or '
            '{"agent": {"$exists": true}} for every record',
            field="filter",
        )
    return None if options.agents is None else tuple(options.agents), where


class FilterVerbs(MemoryView):
    """Close, verify or forget every record a filter selects (see the module docstring)."""

    def close_where(
        self, filter: FilterSpec, reason: str, *, agent: str | None = None,
        agents: Sequence[str] | None = None, valid_until: datetime | None = None,
        dry_run: bool = False, actor: str | None = None,
    ) -> BulkResult:  # fmt: skip
        """Close every open record of these agents (default: all) that ``filter`` selects, as
        :meth:`close_record` closes one, in one transaction: each
        stopped applying at ``valid_until`` (default now), keeps its history, and is audited with
        the reason and the filter. ``dry_run`` lists them and changes nothing."""
        chosen, where = _selection({"agent": agent, "agents": agents, "filter": filter})
        reason, actor = require_text(reason, "reason"), optional_text(actor, "actor")
        until, dry_run = optional_instant(valid_until, "valid_until"), flag(dry_run, "dry_run")
        with self._call() as h:
            return bulk.close_where(
                h, where, agents=chosen, now=h.now(), reason=reason,
                valid_until=until, actor=actor, dry_run=dry_run,
            )  # fmt: skip

    def verify_where(
        self, filter: FilterSpec, *, agent: str | None = None,
        agents: Sequence[str] | None = None, reason: str | None = None, dry_run: bool = False,
        actor: str | None = None,
    ) -> BulkResult:  # fmt: skip
        """Confirm every open record ``filter`` selects is still true (``last_verified_at =
        now``, as :meth:`verify` does for one), in one transaction; ``dry_run`` lists them."""
        chosen, where = _selection({"agent": agent, "agents": agents, "filter": filter})
        reason, actor = optional_text(reason, "reason"), optional_text(actor, "actor")
        dry_run = flag(dry_run, "dry_run")
        with self._call() as h:
            return bulk.verify_where(
                h, where, agents=chosen, now=h.now(), reason=reason,
                actor=actor, dry_run=dry_run,
            )  # fmt: skip

    def forget_where(
        self, filter: FilterSpec, reason: str, *, agent: str | None = None,
        agents: Sequence[str] | None = None, purge: bool = False, dry_run: bool = False,
        actor: str | None = None,
    ) -> BulkResult:  # fmt: skip
        """Hard-delete every record ``filter`` selects, whatever its state, as :meth:`forget`
        deletes one — "erase this user" is ``forget_where({"agent": "ana"}, reason,
        purge=True)`` — in one transaction and, for purged records, one scrub.

        Without ``purge``, refused as a whole (nothing deleted) when something outside the
        selection depends on a selected record that is not secret or personal: close those
        instead, widen the filter, or purge. ``dry_run`` lists what would go, changing nothing
        (and is refused the same way).

        Raises:
            DependentsExistError: names the records and what depends on them.
        """
        chosen, where = _selection({"agent": agent, "agents": agents, "filter": filter})
        reason, actor = require_text(reason, "reason"), optional_text(actor, "actor")
        purge, dry_run = flag(purge, "purge"), flag(dry_run, "dry_run")
        with self._call() as h:
            return bulk.forget_where(
                h, where, agents=chosen, now=h.now(), reason=reason,
                purge=purge, actor=actor, dry_run=dry_run,
            )  # fmt: skip
