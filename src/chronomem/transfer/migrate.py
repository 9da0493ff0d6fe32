"""Copy spaces between stores (SQLite ↔ PostgreSQL), ids and every field preserved.

A migration is an export followed by an import, through the JSONL archive (DESIGN §6): the
archive carries records with their raw vectors, the audit log, events with their vectors, links
and the reflection-trigger sums, so what arrives is what left — exporting the copy gives the same
bytes as exporting the original. Each space is read from one snapshot of the source and written in
one transaction on the target; a space that already holds anything on the target is refused.
Each space copied into a SQLite file leaves its index snapshot there, so the first read of the
copy does not rebuild its arrays.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from chronomem.checks import string_tuple
from chronomem.errors import ConflictError, NotFoundError
from chronomem.retrieval.space import warm
from chronomem.stores import MemoryStore, open_store
from chronomem.transfer.archive import export_space, import_space

__all__ = ["MigratedSpace", "migrate"]

Location = str | os.PathLike[str] | MemoryStore


@dataclass(frozen=True, slots=True, kw_only=True)
class MigratedSpace:
    """What one space's copy carried."""

    space: str
    records: int
    audit_entries: int
    events: int
    links: int


def _is_empty(store: MemoryStore, space: str) -> bool:
    return (
        next(iter(store.iter_records(space)), None) is None
        and next(iter(store.iter_events(space)), None) is None
        and not store.audit(space)
        and not store.links(space)
    )


def migrate(
    source: Location,
    target: Location,
    *,
    spaces: Sequence[str] | None = None,
    on_space: Callable[[MigratedSpace], None] | None = None,
) -> list[MigratedSpace]:
    """Copy ``spaces`` (default: every space of ``source``) from ``source`` to ``target``.

    Locations are what :meth:`Memory.open` takes (a path, ``sqlite:///…``, ``postgresql://…``) or
    open stores. ``on_space`` is called after each space is committed.

    Raises:
        StoreError: there is no chronomem store at ``source`` (nothing is created there).
        NotFoundError: a named space does not exist.
        ConflictError: a space already holds records, events, links or audit entries on the
            target (nothing of that space is written).
        EmbedderMismatchError: the target's vectors come from another model or dimension.
    """
    named = None if spaces is None else string_tuple(spaces, "spaces")
    with ExitStack() as opened:
        src = _opened(opened, source, create=False)
        dst = _opened(opened, target, create=True)
        available = src.spaces()
        wanted = list(available if named is None else named)
        for space in wanted:
            if space not in available:
                raise NotFoundError(f"no space {space!r} in {src.location}")
        for space in wanted:
            if not _is_empty(dst, space):
                raise ConflictError(f"space {space!r} is not empty in {dst.location}")
        reports: list[MigratedSpace] = []
        tmp = Path(opened.enter_context(tempfile.TemporaryDirectory(prefix="chronomem-migrate-")))
        for space in wanted:
            archive = tmp / f"{len(reports)}.jsonl"
            export_space(src, space, src.embedding_meta(), archive)
            imported, _ = import_space(dst, space, dst.embedding_meta(), None, archive)
            archive.unlink()
            warm(dst, space)
            report = MigratedSpace(
                space=space,
                records=imported.records,
                audit_entries=imported.audit_entries,
                events=imported.events,
                links=imported.links,
            )
            reports.append(report)
            if on_space is not None:
                on_space(report)
        return reports


def _opened(stack: ExitStack, location: Location, *, create: bool) -> MemoryStore:
    """The store at ``location``, closed with ``stack`` when this module opened it."""
    store = open_store(location, create=create)
    if store is not location:
        stack.callback(store.close)
    return store
