"""Drafts: raw ``remember`` arguments become complete, validated records or a typed error.

Pure apart from what the caller passes in (the clock's now, the id factory, the depths of the
records that evidence names). Nothing here touches the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from chronomem.arrays import F32
from chronomem.checks import (
    bounded_text,
    flag,
    metadata_dict,
    number_in,
    optional_instant,
    optional_text,
    require_text,
    shown,
    string_tuple,
    to_enum,
)
from chronomem.embedders.base import as_vector
from chronomem.errors import InvalidInputError, NotFoundError
from chronomem.model.ids import IdFactory
from chronomem.model.record import Kind, Record, Sensitivity

__all__ = ["DEFAULT_IMPORTANCE", "REMEMBER_FIELDS", "Draft", "build_drafts", "check_importance"]

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
        "speaker",
        "session",
        "expires_at",
        "ttl",
        "source_id",
        "embedding",
        "passage_embeddings",
        "supersedes",
        "replace",
    }
)


@dataclass(frozen=True, slots=True)
class Draft:
    """A validated record before it is stored; ``supersedes`` names the records it closes;
    ``needs_importance`` marks a record written without importance (the scorer fills it in);
    ``replace`` makes it the one open record of its agent and exact domain (the open ones are
    found and superseded inside the write transaction); ``passages`` are its passage vectors
    (the caller's, or the embedder's)."""

    record: Record
    embedding: F32 | None
    supersedes: tuple[str, ...]
    needs_importance: bool = False
    passages: F32 | None = None
    replace: bool = False


def check_importance(value: object) -> float:
    """An importance: a number from 1 (mundane) to 10 (life-changing)."""
    return number_in(value, "importance", 1, 10, what="from 1 (mundane) to 10 (life-changing)")


def _draft(
    item: Mapping[str, Any],
    *,
    now: datetime,
    space: str,
    dim: int | None,
    ids: IdFactory,
    depth_of: Mapping[str, int],
) -> Draft:
    text = bounded_text(item.get("text"), "text")
    agent = require_text(item.get("agent", "default"), "agent")
    kind = to_enum(Kind, item.get("kind", Kind.OBSERVATION), "kind")
    needs_importance = item.get("importance") is None
    importance = DEFAULT_IMPORTANCE if needs_importance else check_importance(item["importance"])
    occurred_at = optional_instant(item.get("occurred_at"), "occurred_at") or now
    supersedes = tuple(dict.fromkeys(string_tuple(item.get("supersedes", ()), "supersedes")))
    valid_from = optional_instant(item.get("valid_from"), "valid_from")
    if supersedes and valid_from is None:
        # A replacement applies from when it happened: the closed records' windows end there.
        valid_from = occurred_at
    valid_until = optional_instant(item.get("valid_until"), "valid_until")
    if valid_from and valid_until and valid_until <= valid_from:
        raise InvalidInputError("valid_until must be after valid_from", field="valid_until")
    domain = optional_text(item.get("domain"), "domain")
    evidence = string_tuple(item.get("evidence", ()), "evidence")
    for cited in evidence:
        if cited not in depth_of:
            raise NotFoundError(
                f"evidence {shown(cited)} does not exist in space {space!r}", record_id=cited
            )
    event_id = optional_text(item.get("event_id"), "event_id")
    vector = None
    if item.get("embedding") is not None:
        vector = as_vector(item["embedding"], dim=dim)
    passages = _passage_vectors(item.get("passage_embeddings"), vector)
    replace = flag(item.get("replace", False), "replace")
    if replace and domain is None:
        raise InvalidInputError(
            "replace=True needs a domain: the record replaces the agent's open record of that "
            "domain",
            field="replace",
        )
    expires_at, ttl = _expiry(item.get("expires_at"), item.get("ttl"), now)
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
        speaker=_label(item.get("speaker"), "speaker", "a name or a role"),
        session=_label(item.get("session"), "session", "a conversation, thread or run id"),
        expires_at=expires_at,
        ttl=ttl,
        source_id=_label(item.get("source_id"), "source_id", "the id of a message", SOURCE_CHARS),
    )
    return Draft(record, vector, supersedes, needs_importance, passages, replace)


_MAX_LABEL_CHARS = 100
#: The longest ``source_id`` (a message id, or the hash that stands for one).
SOURCE_CHARS = 200
#: The longest time to live: a hundred years of 365.25 days.
MAX_TTL_SECONDS = 100 * 365.25 * 86400


def _expiry(expires_at: object, ttl: object, now: datetime) -> tuple[datetime | None, float | None]:
    """A write's time to live as (``expires_at``, ``ttl`` in seconds): from ``ttl`` (seconds or
    a ``timedelta``), counted from the write's instant, or from ``expires_at`` (its span from
    now is what a refreshing read extends it by)."""
    if ttl is None and expires_at is None:
        return None, None
    if ttl is not None and expires_at is not None:
        raise InvalidInputError("give ttl or expires_at, not both", field="ttl")
    if ttl is not None:
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        span = number_in(
            seconds,
            "ttl",
            0,
            MAX_TTL_SECONDS,
            low_open=True,
            what="of seconds above 0 and at most a hundred years (or a timedelta)",
        )
        return now + timedelta(seconds=span), span
    end = optional_instant(expires_at, "expires_at")
    assert end is not None
    if end <= now:
        raise InvalidInputError(
            f"expires_at {end.isoformat()} is not after the write's instant {now.isoformat()}: "
            f"the record would be stored expired",
            field="expires_at",
        )
    return end, (end - now).total_seconds()


def _label(value: object, field: str, what: str, limit: int = _MAX_LABEL_CHARS) -> str | None:
    """A short label on one line: who said it (a name or a role such as ``user``), the session
    it belongs to, the message it came from; at most ``limit`` characters."""
    name = optional_text(value, field)
    if name is not None and (len(name) > limit or "\n" in name):
        raise InvalidInputError(
            f"{field} is {what} on one line of at most {limit} characters; got {shown(name)}",
            field=field,
        )
    return None if name is None else name.strip()


def _passage_vectors(value: object, vector: F32 | None) -> F32 | None:
    """Caller-supplied passage vectors: a list of vectors of the record's dimension, given with
    the record's own ``embedding`` (a record matches by the best of its vector and these)."""
    if value is None:
        return None
    if vector is None:
        raise InvalidInputError(
            "passage_embeddings need the record's own embedding too", field="passage_embeddings"
        )
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidInputError(
            "passage_embeddings must be a list of vectors", field="passage_embeddings"
        )
    rows = [as_vector(v, dim=vector.shape[0], name="passage_embeddings") for v in value]
    if not rows:
        return None
    return np.stack(rows).astype(np.float32)


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
                names = sorted(map(str, unknown))
                raise InvalidInputError(
                    f"unknown field(s) {', '.join(names)} (remember takes "
                    f"{', '.join(sorted(REMEMBER_FIELDS))})",
                    field=names[0],
                )
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
