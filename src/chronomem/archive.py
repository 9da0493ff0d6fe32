"""The JSONL archive format of ``export`` / ``import_`` (DESIGN §6).

Line 1 is a header object (``{"format": "chronomem", "version": 1, ...}``); every further line is
one object with a ``type``: ``record`` lines (every field of :class:`~chronomem.model.Record`,
instants as ISO 8601 with offset to the microsecond, plus the raw embedding as base64 little-endian
float32, exact) in insertion order, then ``audit`` lines (the audit log, oldest first). The output
is deterministic: exporting the same space twice gives identical bytes.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.clock import require_aware
from chronomem.embedders.base import Embedder
from chronomem.errors import ConflictError, EmbedderMismatchError, InvalidInputError
from chronomem.model.audit import AuditEntry
from chronomem.model.record import (
    INSTANT_FIELDS,
    EvidenceStatus,
    Kind,
    Record,
    Sensitivity,
    Status,
)
from chronomem.stores.base import EmbeddingMeta, MemoryStore, StoredRecord

__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveHeader",
    "ImportReport",
    "export_space",
    "import_space",
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
    audit_entries: int = 0
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
        valid_until_before=_instant(obj, "valid_until_before", required=False),
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


def audit_to_json(entry: AuditEntry) -> dict[str, Any]:
    out = entry.to_dict()
    del out["seq"]  # store-local; the order of the lines keeps the sequence
    out["at"] = _iso(entry.at)
    return {"type": "audit", **out}


def audit_from_json(obj: dict[str, Any]) -> AuditEntry:
    for name in ("action", "record_id"):
        if not isinstance(obj.get(name), str) or not obj[name]:
            raise ValueError(f"{name} must be a non-empty string")
    detail = obj.get("detail", {})
    if not isinstance(detail, dict):
        raise ValueError("detail must be an object")
    return AuditEntry(
        seq=0,
        at=_instant(obj, "at", required=True),  # type: ignore[arg-type]
        action=obj["action"],
        record_id=obj["record_id"],
        actor=obj.get("actor"),
        reason=obj.get("reason"),
        detail=detail,
    )


def write_archive(
    path: str | os.PathLike[str],
    header: ArchiveHeader,
    items: Iterable[StoredRecord],
    audit: Iterable[AuditEntry] = (),
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
        for entry in audit:
            fh.write(json.dumps(audit_to_json(entry), ensure_ascii=False) + "\n")
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


def export_space(
    store: MemoryStore, space: str, meta: EmbeddingMeta, path: str | os.PathLike[str]
) -> int:
    """Export one space from one consistent snapshot; return the number of records."""
    header = ArchiveHeader(space=space, embedding_model=meta.model, embedding_dim=meta.dim)
    with store.snapshot():
        return write_archive(path, header, store.iter_records(space), store.audit(space))


def _archive_meta(
    header: Mapping[str, Any], ours: EmbeddingMeta, embedder: Embedder | None
) -> EmbeddingMeta:
    """The store's embedding metadata after importing an archive with ``header``; refuses
    vectors of another model or dimension."""
    model, dim = header.get("embedding_model"), header.get("embedding_dim")
    if dim is None:
        return ours
    if ours.dim is None:
        if embedder is not None and model != embedder.model_id:
            raise EmbedderMismatchError(
                f"the archive's vectors come from {model!r}, this store uses {embedder.model_id!r}",
                expected_model=embedder.model_id,
                expected_dim=embedder.dim,
                got_model=model,
                got_dim=dim,
            )
        return EmbeddingMeta(model=model, dim=int(dim))
    if ours.dim != dim or (ours.model is not None and model != ours.model):
        raise EmbedderMismatchError(
            f"the archive's vectors ({model!r}, dimension {dim}) do not match this store's "
            f"({ours.model!r}, dimension {ours.dim})",
            expected_model=ours.model,
            expected_dim=ours.dim,
            got_model=model,
            got_dim=dim,
        )
    return ours


def _dangling(
    store: MemoryStore, space: str, items: list[StoredRecord], line_of: Mapping[str, int]
) -> list[str]:
    refs: dict[str, list[tuple[str, str]]] = {}
    for item in items:
        r = item.record
        for name, targets in (
            ("evidence", r.evidence),
            ("supersedes", r.supersedes),
            ("superseded_by", (r.superseded_by,) if r.superseded_by else ()),
        ):
            for target in targets:
                if target not in line_of:
                    refs.setdefault(target, []).append((r.id, name))
    if not refs:
        return []
    in_store = {r.id for r in store.get_records(space, sorted(refs))}
    return [
        f"line {line_of[source]} (id {source}): {name} {target!r} does not exist"
        for target, sources in sorted(refs.items())
        if target not in in_store
        for source, name in sources
    ]


def import_space(
    store: MemoryStore,
    space: str,
    meta: EmbeddingMeta,
    embedder: Embedder | None,
    path: str | os.PathLike[str],
) -> tuple[ImportReport, EmbeddingMeta]:
    """Validate the whole archive, then import it in one transaction (or raise, writing
    nothing). Returns the report and the store's embedding metadata afterwards."""
    header, lines = read_archive(path)
    meta_after = _archive_meta(header, meta, embedder)
    problems: list[str] = []
    items: list[StoredRecord] = []
    audit: list[AuditEntry] = []
    line_of: dict[str, int] = {}
    for number, obj in lines:
        kind = obj.get("type")
        try:
            if kind == "audit":
                audit.append(audit_from_json(obj))
                continue
            if kind != "record":
                raise ValueError(f"unknown line type {kind!r}")
            item = record_from_json(obj, space=space, dim=meta_after.dim)
        except (ValueError, InvalidInputError) as exc:
            problems.append(f"line {number} (id {obj.get('id', obj.get('record_id'))!r}): {exc}")
            continue
        if item.record.id in line_of:
            problems.append(
                f"line {number}: id {item.record.id} repeats line {line_of[item.record.id]}"
            )
            continue
        line_of[item.record.id] = number
        items.append(item)
    problems.extend(_dangling(store, space, items, line_of))
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise InvalidInputError(
            f"{path}: {len(problems)} problem(s), nothing imported:\n  {shown}{more}"
        )
    clash = store.existing_ids([i.record.id for i in items])
    if clash:
        first = sorted(clash)[0]
        raise ConflictError(
            f"{path}: {len(clash)} id(s) already exist in the store (e.g. {first}); "
            f"nothing imported",
            record_id=first,
        )
    with store.write():
        if meta_after != meta:
            store.set_embedding_meta(meta_after)
        store.insert_records(space, items)
        if audit:
            store.append_audit(space, audit)
    return ImportReport(path=str(path), records=len(items), audit_entries=len(audit)), meta_after
