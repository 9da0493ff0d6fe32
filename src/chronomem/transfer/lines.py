"""The lines of a chronomem JSONL archive, to and from JSON (see ``transfer/archive.py`` for the
file). Instants are ISO 8601 with their offset to the microsecond; vectors are base64 of
little-endian float32, exact. Parsing validates every field with the shared checks and raises
:class:`~chronomem.errors.InvalidInputError` naming it."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

import numpy as np

from chronomem.arrays import F32
from chronomem.checks import (
    metadata_dict,
    number_in,
    optional_text,
    parse_instant,
    require_chronomem_id,
    require_text,
    string_tuple,
    to_enum,
)
from chronomem.errors import InvalidInputError
from chronomem.model.audit import AuditEntry
from chronomem.model.event import Event, EventKind, Link, Provenance
from chronomem.model.record import INSTANT_FIELDS, EvidenceStatus, Kind, Record, Sensitivity, Status
from chronomem.stores.base import StoredRecord
from chronomem.writing.drafts import check_importance

__all__ = [
    "agent_to_json",
    "audit_from_json",
    "audit_to_json",
    "event_from_json",
    "event_to_json",
    "link_from_json",
    "link_to_json",
    "record_from_json",
    "record_to_json",
]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def record_to_json(item: StoredRecord) -> dict[str, Any]:
    r = item.record
    out: dict[str, Any] = {"type": "record"}
    for name, value in r.to_dict().items():
        if name in {"has_embedding", "space"}:
            continue
        out[name] = value
    for name in INSTANT_FIELDS:
        out[name] = _iso(getattr(r, name))
    out["embedding"] = _vector_to_json(item.embedding)
    if item.passages is not None:
        out["passages"] = _vector_to_json(item.passages)
    return out


def _vector_to_json(vector: F32 | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector_from_json(obj: dict[str, Any], dim: int | None, name: str = "embedding") -> F32 | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a base64 string", field=name)
    try:
        raw = base64.b64decode(value, validate=True)
    except ValueError:
        raise InvalidInputError(f"{name} is not valid base64", field=name) from None
    if len(raw) % 4:
        raise InvalidInputError(f"{name} is not a whole number of float32 values", field=name)
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if dim is not None and vector.shape[0] != dim:
        raise InvalidInputError(f"{name} has length {vector.shape[0]}, expected {dim}", field=name)
    if not np.all(np.isfinite(vector)):
        raise InvalidInputError(f"{name} contains NaN or infinite values", field=name)
    return vector


def _passages_from_json(obj: dict[str, Any], embedding: F32 | None) -> F32 | None:
    """A record line's passage vectors: rows as wide as its embedding."""
    flat = _vector_from_json(obj, None, "passages")
    if flat is None:
        return None
    width = 0 if embedding is None else embedding.shape[0]
    if not width or flat.shape[0] % width:
        raise InvalidInputError(
            f"passages hold {flat.shape[0]} floats: not rows of the embedding's width",
            field="passages",
        )
    return flat.reshape(-1, width)


def _optional(obj: dict[str, Any], name: str) -> datetime | None:
    value = obj.get(name)
    return None if value is None else parse_instant(value, name)


def _required(obj: dict[str, Any], name: str) -> datetime:
    value = obj.get(name)
    if value is None:
        raise InvalidInputError(f"{name} is missing", field=name)
    return parse_instant(value, name)


def record_from_json(obj: dict[str, Any], *, space: str, dim: int | None) -> StoredRecord:
    """Parse one record line; raises :class:`InvalidInputError` naming the field."""
    embedding = _vector_from_json(obj, dim)
    record = Record(
        id=require_chronomem_id(obj.get("id")),
        space=space,
        agent=require_text(obj.get("agent"), "agent"),
        kind=to_enum(Kind, obj.get("kind"), "kind"),
        text=require_text(obj.get("text"), "text"),
        importance=check_importance(obj.get("importance")),
        occurred_at=_required(obj, "occurred_at"),
        recorded_at=_required(obj, "recorded_at"),
        last_accessed_at=_required(obj, "last_accessed_at"),
        last_verified_at=_optional(obj, "last_verified_at"),
        valid_from=_optional(obj, "valid_from"),
        valid_until=_optional(obj, "valid_until"),
        status=to_enum(Status, obj.get("status", "open"), "status"),
        superseded_by=_optional_id(obj, "superseded_by"),
        superseded_at=_optional(obj, "superseded_at"),
        valid_until_before=_optional(obj, "valid_until_before"),
        closed_reason=optional_text(obj.get("closed_reason"), "closed_reason"),
        supersedes=_str_list(obj, "supersedes"),
        domain=optional_text(obj.get("domain"), "domain"),
        tags=_str_list(obj, "tags"),
        metadata=metadata_dict(obj.get("metadata")),
        evidence=_str_list(obj, "evidence"),
        depth=int(number_in(obj.get("depth", 0), "depth", 0, 10**6)),
        event_id=optional_text(obj.get("event_id"), "event_id"),
        sensitivity=to_enum(Sensitivity, obj.get("sensitivity", "normal"), "sensitivity"),
        evidence_status=to_enum(
            EvidenceStatus, obj.get("evidence_status", "ok"), "evidence_status"
        ),
        feedback_score=number_in(obj.get("feedback_score", 0.0), "feedback_score", -1e9, 1e9),
        has_embedding=embedding is not None,
        speaker=optional_text(obj.get("speaker"), "speaker"),
        session=optional_text(obj.get("session"), "session"),
    )
    return StoredRecord(
        record=record, embedding=embedding, passages=_passages_from_json(obj, embedding)
    )


def _optional_id(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    return None if value is None else require_chronomem_id(value, name)


def _str_list(obj: dict[str, Any], name: str) -> tuple[str, ...]:
    value = obj.get(name, [])
    if not isinstance(value, list):
        raise InvalidInputError(f"{name} must be a list of strings", field=name)
    return string_tuple(value, name) if value else ()


def audit_to_json(entry: AuditEntry) -> dict[str, Any]:
    out = entry.to_dict()
    del out["seq"]  # store-local; the order of the lines keeps the sequence
    out["at"] = _iso(entry.at)
    return {"type": "audit", **out}


def audit_from_json(obj: dict[str, Any]) -> AuditEntry:
    return AuditEntry(
        seq=0,
        at=_required(obj, "at"),
        action=require_text(obj.get("action"), "action"),
        record_id=require_text(obj.get("record_id"), "record_id"),
        actor=optional_text(obj.get("actor"), "actor"),
        reason=optional_text(obj.get("reason"), "reason"),
        detail=metadata_dict(obj.get("detail"), "detail"),
    )


def event_to_json(event: Event, embedding: F32 | None) -> dict[str, Any]:
    return {
        "type": "event",
        "id": event.id,
        "text": event.text,
        "kind": event.kind.value,
        "scope": event.scope,
        "occurred_at": _iso(event.occurred_at),
        "recorded_at": _iso(event.recorded_at),
        "metadata": dict(event.metadata),
        "embedding": _vector_to_json(embedding),
    }


def event_from_json(
    obj: dict[str, Any], *, space: str, dim: int | None
) -> tuple[Event, F32 | None]:
    embedding = _vector_from_json(obj, dim)
    event = Event(
        id=require_chronomem_id(obj.get("id")),
        space=space,
        text=require_text(obj.get("text"), "text"),
        kind=to_enum(EventKind, obj.get("kind"), "kind"),
        scope=optional_text(obj.get("scope"), "scope"),
        occurred_at=_required(obj, "occurred_at"),
        recorded_at=_required(obj, "recorded_at"),
        metadata=metadata_dict(obj.get("metadata")),
        has_embedding=embedding is not None,
    )
    return event, embedding


def link_to_json(link: Link) -> dict[str, Any]:
    return {
        "type": "link",
        "cause": link.cause,
        "effect": link.effect,
        "weight": link.weight,
        "provenance": link.provenance.value,
        "similarity": link.similarity,
        "created_at": _iso(link.created_at),
    }


def link_from_json(obj: dict[str, Any]) -> Link:
    cause, effect = (
        require_chronomem_id(obj.get("cause"), "cause"),
        require_chronomem_id(obj.get("effect"), "effect"),
    )
    if cause == effect:
        raise InvalidInputError(f"an event cannot cause itself ({cause})", field="effect")
    similarity = obj.get("similarity")
    return Link(
        cause=cause,
        effect=effect,
        weight=number_in(obj.get("weight"), "weight", 0, 1, low_open=True),
        provenance=to_enum(Provenance, obj.get("provenance"), "provenance"),
        similarity=None if similarity is None else number_in(similarity, "similarity", -1, 1),
        created_at=_required(obj, "created_at"),
    )


def agent_to_json(agent: str, accumulated: float) -> dict[str, Any]:
    return {"type": "agent", "agent": agent, "importance_accumulated": accumulated}
