"""The JSONL archive format of ``export`` / ``import_`` (DESIGN §6).

Line 1 is a header object (``{"format": "chronomem", "version": 1, ...}``); every further line is
one object with a ``type``. Version 1 has ``record`` lines: every field of
:class:`~chronomem.model.Record` (instants as ISO 8601 with offset, to the microsecond) plus the raw
embedding as base64 little-endian float32 (exact). The output is deterministic: exporting the same
space twice gives identical bytes.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.clock import require_aware
from chronomem.errors import InvalidInputError
from chronomem.model.record import (
    INSTANT_FIELDS,
    EvidenceStatus,
    Kind,
    Record,
    Sensitivity,
    Status,
)
from chronomem.stores.base import StoredRecord

__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveHeader",
    "ImportReport",
    "read_archive",
    "record_from_json",
    "record_to_json",
    "write_archive",
]

FORMAT = "chronomem"
VERSION = 1
ID_PATTERN = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveHeader:
    space: str
    embedding_model: str | None
    embedding_dim: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "space": self.space,
            "embedding_model": self.embedding_model,
            "embedding_dim": self.embedding_dim,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport:
    """What an import did. ``problems`` lists what could not be carried over exactly (empty when
    the import was exact); each names the line and the record id when known."""

    path: str
    records: int
    problems: tuple[str, ...] = field(default=())


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
    out["embedding"] = (
        None
        if item.embedding is None
        else base64.b64encode(np.asarray(item.embedding, dtype="<f4").tobytes()).decode("ascii")
    )
    return out


def _instant(obj: dict[str, Any], name: str, *, required: bool) -> datetime | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise ValueError(f"{name} is missing")
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} is not an ISO 8601 instant: {value!r}") from None
    return require_aware(parsed, name)


def _str_tuple(obj: dict[str, Any], name: str) -> tuple[str, ...]:
    value = obj.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{name} must be a list of strings")
    return tuple(value)


def record_from_json(obj: dict[str, Any], *, space: str, dim: int | None) -> StoredRecord:
    """Parse one record line; raises ``ValueError`` (or ``InvalidInputError``) saying what is
    wrong."""
    rid = obj.get("id")
    if not isinstance(rid, str) or not ID_PATTERN.match(rid):
        raise ValueError(f"id must be a 26-character chronomem id; got {rid!r}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("text must be a non-empty string")
    agent = obj.get("agent")
    if not isinstance(agent, str) or not agent:
        raise ValueError("agent must be a non-empty string")
    importance = obj.get("importance")
    if (
        isinstance(importance, bool)
        or not isinstance(importance, int | float)
        or not math.isfinite(importance)
        or not 1 <= importance <= 10
    ):
        raise ValueError(f"importance must be a number in 1..10; got {importance!r}")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError("metadata must be an object")
    embedding = None
    if obj.get("embedding") is not None:
        raw = base64.b64decode(obj["embedding"], validate=True)
        embedding = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        if dim is not None and embedding.shape[0] != dim:
            raise ValueError(f"embedding has length {embedding.shape[0]}, expected {dim}")
        if not np.all(np.isfinite(embedding)):
            raise ValueError("embedding contains NaN or infinite values")
    record = Record(
        id=rid,
        space=space,
        agent=agent,
        kind=Kind(str(obj.get("kind"))),
        text=text,
        importance=float(importance),
        occurred_at=_instant(obj, "occurred_at", required=True),  # type: ignore[arg-type]
        recorded_at=_instant(obj, "recorded_at", required=True),  # type: ignore[arg-type]
        last_accessed_at=_instant(obj, "last_accessed_at", required=True),  # type: ignore[arg-type]
        last_verified_at=_instant(obj, "last_verified_at", required=False),
        valid_from=_instant(obj, "valid_from", required=False),
        valid_until=_instant(obj, "valid_until", required=False),
        status=Status(obj.get("status", "open")),
        superseded_by=obj.get("superseded_by"),
        superseded_at=_instant(obj, "superseded_at", required=False),
        closed_reason=obj.get("closed_reason"),
        supersedes=_str_tuple(obj, "supersedes"),
        domain=obj.get("domain"),
        tags=_str_tuple(obj, "tags"),
        metadata=metadata,
        evidence=_str_tuple(obj, "evidence"),
        depth=int(obj.get("depth", 0)),
        event_id=obj.get("event_id"),
        sensitivity=Sensitivity(obj.get("sensitivity", "normal")),
        evidence_status=EvidenceStatus(obj.get("evidence_status", "ok")),
        feedback_score=float(obj.get("feedback_score", 0.0)),
        has_embedding=embedding is not None,
    )
    return StoredRecord(record=record, embedding=embedding)


def write_archive(
    path: str | os.PathLike[str], header: ArchiveHeader, items: Iterable[StoredRecord]
) -> int:
    """Write atomically (a temporary file renamed into place); return the number of records."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    count = 0
    with tmp.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
        for item in items:
            fh.write(json.dumps(record_to_json(item), ensure_ascii=False) + "\n")
            count += 1
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return count


def read_archive(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], Iterator[tuple[int, dict[str, Any]]]]:
    """The header and an iterator of ``(line_number, object)`` for the remaining lines."""
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(f"archive not found: {source}", field="path")
    fh = source.open(encoding="utf-8")
    first = fh.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        fh.close()
        raise InvalidInputError(f"{source}: line 1 is not a JSON header", field="path") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        fh.close()
        raise InvalidInputError(f"{source}: not a chronomem archive", field="path")
    if header.get("version") != VERSION:
        fh.close()
        raise InvalidInputError(
            f"{source}: archive version {header.get('version')} is not supported (expected "
            f"{VERSION})",
            field="path",
        )

    def lines() -> Iterator[tuple[int, dict[str, Any]]]:
        with fh:
            for number, line in enumerate(fh, start=2):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInputError(f"{source}:{number}: not JSON ({exc})") from None
                if not isinstance(obj, dict):
                    raise InvalidInputError(f"{source}:{number}: not a JSON object")
                yield number, obj

    return header, lines()
