"""Core memory blocks (``model/core.py``): a block is the open ``core`` record of an agent whose
``domain`` is the block's label. Appending or replacing text supersedes that record — the old
version closes, the new one opens, in one transaction, audited with the actor — so a block is
never overwritten. Two writers editing one block cannot lose each other's edit: the second
supersession finds the version it read already closed, re-reads and applies its edit again."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np

from chronomem.checks import require_text
from chronomem.clock import to_micros
from chronomem.engine import write
from chronomem.engine.handle import Handle
from chronomem.errors import ConflictError, InvalidInputError, NotFoundError
from chronomem.model.core import CoreBlock
from chronomem.model.record import Kind, Record
from chronomem.retrieval.columns import columns, visible

__all__ = ["appending", "blocks", "check_label", "edit", "replacing"]

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_RETRIES = 5
_END_OF_TIME = datetime(9999, 1, 1, tzinfo=UTC)  # every record written so far is visible


def check_label(label: object) -> str:
    if not isinstance(label, str) or not _LABEL.match(label):
        raise InvalidInputError(
            "a core block label is 1-64 letters, digits, '_', '.' or '-', starting with a letter "
            f"or digit; got {label!r}",
            field="label",
        )
    return label


def appending(text: str) -> Callable[[str | None], str]:
    """The edit that appends ``text`` on a new line (the whole text of a new block)."""
    add = require_text(text, "text")
    return lambda current: add if current is None else f"{current}\n{add}"


def replacing(old: str, new: str) -> Callable[[str | None], str]:
    """The edit that replaces every ``old`` with ``new`` (empty: delete); ``old`` must occur."""
    find = require_text(old, "old")
    if not isinstance(new, str):
        raise InvalidInputError("new must be a string (empty to delete it)", field="new")

    def change(current: str | None) -> str:
        if current is None:
            raise NotFoundError("it does not exist yet (append to create it)")
        if find not in current:
            raise NotFoundError(f"it does not contain {find!r}")
        return current.replace(find, new)

    return change


def _block(record: Record) -> CoreBlock:
    return CoreBlock(
        agent=record.agent,
        label=str(record.domain),
        text=record.text,
        record_id=record.id,
        updated_at=record.recorded_at,
    )


def blocks(h: Handle, agent: str, *, as_of: datetime) -> list[CoreBlock]:
    """The agent's blocks as they stood at ``as_of``, by label."""
    with h.store.snapshot():
        cols = columns(h.index.arrays([agent]))
        if cols.size == 0:
            return []
        at = to_micros(as_of)
        mask = visible(
            cols, as_of_us=at, valid_at_us=at, include_history=False,
            kinds=frozenset({Kind.CORE}),
        )  # fmt: skip
        rows = np.arange(cols.size) if mask is None else np.flatnonzero(mask)
        ids = [str(i) for i in cols.cat("ids")[rows]]
        records = h.records(ids)
    return sorted((_block(r) for r in records), key=lambda b: b.label)


def _one_open_version(h: Handle, agent: str, label: str) -> None:
    """Inside the write: if another writer created the same block concurrently (both saw none),
    refuse this write so it is retried as a supersession of theirs."""
    versions = [b for b in blocks(h, agent, as_of=_END_OF_TIME) if b.label == label]
    if len(versions) > 1:
        raise ConflictError(f"core block {label!r} of {agent!r} was created concurrently")


def edit(
    h: Handle,
    agent: str,
    label: str,
    change: Callable[[str | None], str],
    *,
    now: Callable[[], datetime],
    actor: str | None,
    limit: int,
) -> CoreBlock:
    """Write ``change(current text or None)`` as the block's new version: a new ``core`` record, or
    the supersession of the current one. Retried when another writer superseded the version read
    in the meantime."""
    for _ in range(_RETRIES):
        current = next((b for b in blocks(h, agent, as_of=now()) if b.label == label), None)
        try:
            text = change(None if current is None else current.text)
        except NotFoundError as exc:
            raise NotFoundError(f"core block {label!r} of {agent!r}: {exc}") from None
        if len(text) > limit:
            raise InvalidInputError(
                f"core block {label!r} would hold {len(text)} characters; its limit is {limit}. "
                f"Replace old text to make room",
                field="text",
            )
        item: dict[str, object] = {"text": text, "agent": agent, "kind": Kind.CORE, "domain": label}
        if current is not None:
            item["supersedes"] = [current.record_id]
        try:
            result = write.write(
                h, [item], now=now(), actor=actor, reason=f"core block {label}",
                after=lambda: _one_open_version(h, agent, label),
            )  # fmt: skip
        except (ConflictError, NotFoundError):
            continue  # another writer changed the block since we read it: read it again
        assert result[0].id is not None
        return _block(h.record(result[0].id))
    raise ConflictError(f"core block {label!r} of {agent!r} kept changing; try again")
