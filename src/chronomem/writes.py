"""Validation of writes: raw ``remember`` arguments become complete records or a typed error.

Pure apart from what the caller passes in (the clock's now, the id factory, the records that
evidence and supersession name). Nothing here touches the store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from chronomem.clock import require_aware
from chronomem.embedders.base import as_vector
from chronomem.errors import InvalidInputError, NotFoundError
from chronomem.model.event import EventKind, Provenance
from chronomem.model.ids import IdFactory
from chronomem.model.record import Kind, Record, Sensitivity

__all__ = [
    "DEFAULT_IMPORTANCE",
    "REMEMBER_FIELDS",
    "Draft",
    "build_drafts",
    "metadata_dict",
    "optional_instant",
    "require_text",
    "string_tuple",
    "to_enum",
]

#: A placeholder importance for drafts written without one, replaced by the configured scorer.
DEFAULT_IMPORTANCE = 5.0

REMEMBER_FIELDS = frozenset(
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
        "supersedes",
    }
)

F32 = npt.NDArray[np.float32]
_E = TypeVar("_E", Kind, Sensitivity, EventKind, Provenance)


@dataclass(frozen=True, slots=True)
class Draft:
    """A validated record before it is stored; ``supersedes`` names the records it closes;
    ``needs_importance`` marks a record written without importance (the scorer fills it in)."""

    record: Record
    embedding: F32 | None
    supersedes: tuple[str, ...]
    needs_importance: bool = False
    passages: F32 | None = None


def require_text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be a non-empty string", field=name)
    return value


def optional_instant(value: object, name: str) -> datetime | None:
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


def to_enum(enum: type[_E], value: object, name: str) -> _E:
    try:
        return enum(value)  # type: ignore[arg-type]
    except ValueError:
        choices = ", ".join(e.value for e in enum)
        raise InvalidInputError(
            f"{name} must be one of {choices}; got {value!r}", field=name
        ) from None


def string_tuple(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise InvalidInputError(f"{name} must contain only non-empty strings", field=name)
    return items


def metadata_dict(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError("metadata must be a mapping", field="metadata")
    metadata = dict(value)
    try:
        json.dumps(metadata, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata must be JSON-serialisable: {exc}", field="metadata"
        ) from None
    return metadata


def _draft(
    item: Mapping[str, Any],
    *,
    now: datetime,
    space: str,
    dim: int | None,
    ids: IdFactory,
    depth_of: Mapping[str, int],
) -> Draft:
    text = require_text(item.get("text"), "text")
    agent = require_text(item.get("agent", "default"), "agent")
    kind = to_enum(Kind, item.get("kind", Kind.OBSERVATION), "kind")
    needs_importance = item.get("importance") is None
    importance = DEFAULT_IMPORTANCE if needs_importance else _importance(item["importance"])
    occurred_at = optional_instant(item.get("occurred_at"), "occurred_at") or now
    supersedes = tuple(dict.fromkeys(string_tuple(item.get("supersedes", ()), "supersedes")))
    valid_from = optional_instant(item.get("valid_from"), "valid_from")
    if supersedes and valid_from is None:
        # A replacement applies from when it happened: the closed records' windows end there.
        valid_from = occurred_at
    valid_until = optional_instant(item.get("valid_until"), "valid_until")
    if valid_from and valid_until and valid_until <= valid_from:
        raise InvalidInputError("valid_until must be after valid_from", field="valid_until")
    domain = item.get("domain")
    if domain is not None:
        domain = require_text(domain, "domain")
    evidence = string_tuple(item.get("evidence", ()), "evidence")
    for cited in evidence:
        if cited not in depth_of:
            raise NotFoundError(
                f"evidence {cited!r} does not exist in space {space!r}", record_id=cited
            )
    event_id = item.get("event_id")
    if event_id is not None:
        event_id = require_text(event_id, "event_id")
    vector = None
    if item.get("embedding") is not None:
        vector = as_vector(item["embedding"], dim=dim)
    record = Record(
        id=ids.new_id(now),
        space=space,
        agent=agent,
        kind=kind,
        text=text,
        importance=importance,
        occurred_at=occurred_at,
        recorded_at=now,
        last_accessed_at=now,
        valid_from=valid_from,
        valid_until=valid_until,
        supersedes=supersedes,
        domain=domain,
        tags=string_tuple(item.get("tags", ()), "tags"),
        metadata=metadata_dict(item.get("metadata")),
        evidence=evidence,
        depth=1 + max(depth_of[e] for e in evidence) if evidence else 0,
        event_id=event_id,
        sensitivity=to_enum(Sensitivity, item.get("sensitivity", "normal"), "sensitivity"),
        has_embedding=vector is not None,
    )
    return Draft(record, vector, supersedes, needs_importance)


def build_drafts(
    batch: Sequence[Mapping[str, Any]],
    *,
    now: datetime,
    space: str,
    dim: int | None,
    ids: IdFactory,
    depths: Mapping[str, int],
) -> list[Draft]:
    """Validate every item; evidence may cite stored records (``depths``: id → depth) or earlier
    items of the batch. Errors of a multi-item batch name the item's position."""
    depth_of = dict(depths)
    drafts: list[Draft] = []
    for position, item in enumerate(batch):
        unknown = set(item) - REMEMBER_FIELDS
        try:
            if unknown:
                raise InvalidInputError(f"unknown field(s) {sorted(unknown)}")
            draft = _draft(item, now=now, space=space, dim=dim, ids=ids, depth_of=depth_of)
        except (InvalidInputError, NotFoundError) as exc:
            if len(batch) == 1:
                raise
            err = type(exc)(f"item {position}: {exc}")
            err.__dict__.update(exc.__dict__)
            raise err from exc
        if draft.embedding is not None:
            dim = draft.embedding.shape[0]
        depth_of[draft.record.id] = draft.record.depth
        drafts.append(draft)
    return drafts
