"""The JSONL archive format of ``export`` / ``import_`` (DESIGN §6).

Line 1 is a header object (``{"format": "chronomem", "version": 3, ...}``); every further line is
one object with a ``type``: ``record`` lines (every field of :class:`~chronomem.model.Record`,
instants as ISO 8601 with offset to the microsecond, plus the raw embedding as base64 little-endian
float32, exact, and ``passages``, the passage vectors concatenated, when the record has them) in
insertion order, then ``audit`` lines (the audit log, oldest first), ``event`` lines (the causal
graph's events with their vectors, in insertion order), ``link`` lines (by cause and effect) and
``agent`` lines (each agent's reflection-trigger sum). Version 1 archives (records and audit only)
and version 2 (no ``passages``) are still read. The output is deterministic: exporting the same
space twice, or after a migration to another store, gives identical bytes.
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
from chronomem.model.event import Event, EventKind, Link, Provenance
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
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
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
    events: int = 0
    links: int = 0
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
    out["embedding"] = _vector_to_json(item.embedding)
    if item.passages is not None:
        out["passages"] = _vector_to_json(item.passages)
    return out


def _vector_to_json(vector: np.ndarray | None) -> str | None:
    if vector is None:
        return None
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")


def _vector_from_json(
    obj: dict[str, Any], dim: int | None, name: str = "embedding"
) -> np.ndarray | None:
    if obj.get(name) is None:
        return None
    if not isinstance(obj[name], str):
        raise ValueError(f"{name} must be a base64 string")
    raw = base64.b64decode(obj[name], validate=True)
    vector = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if dim is not None and vector.shape[0] != dim:
        raise ValueError(f"{name} has length {vector.shape[0]}, expected {dim}")
    if not np.all(np.isfinite(vector)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return vector


def _passages_from_json(obj: dict[str, Any], embedding: np.ndarray | None) -> np.ndarray | None:
    """A record line's passage vectors: rows as wide as its embedding."""
    flat = _vector_from_json(obj, None, "passages")
    if flat is None:
        return None
    width = 0 if embedding is None else embedding.shape[0]
    if not width or flat.shape[0] % width:
        raise ValueError(f"passages hold {flat.shape[0]} floats: not rows of the embedding's width")
    return flat.reshape(-1, width)


def _id(obj: dict[str, Any], name: str = "id") -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not ID_PATTERN.match(value):
        raise ValueError(f"{name} must be a 26-character chronomem id; got {value!r}")
    return value


def _text(obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string")
    return value


def _object(obj: dict[str, Any], name: str) -> dict[str, Any]:
    value = obj.get(name, {})
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be an object")
    return value


def _number(obj: dict[str, Any], name: str, low: float, high: float) -> float:
    value = obj.get(name)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise ValueError(f"{name} must be a number in {low:g}..{high:g}; got {value!r}")
    return float(value)


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
    rid = _id(obj)
    text = _text(obj, "text")
    agent = _text(obj, "agent")
    importance = _number(obj, "importance", 1, 10)
    metadata = _object(obj, "metadata")
    embedding = _vector_from_json(obj, dim)
    record = Record(
        id=rid,
        space=space,
        agent=agent,
        kind=Kind(str(obj.get("kind"))),
        text=text,
        importance=importance,
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
    return StoredRecord(
        record=record, embedding=embedding, passages=_passages_from_json(obj, embedding)
    )


def audit_to_json(entry: AuditEntry) -> dict[str, Any]:
    out = entry.to_dict()
    del out["seq"]  # store-local; the order of the lines keeps the sequence
    out["at"] = _iso(entry.at)
    return {"type": "audit", **out}


def audit_from_json(obj: dict[str, Any]) -> AuditEntry:
    return AuditEntry(
        seq=0,
        at=_instant(obj, "at", required=True),  # type: ignore[arg-type]
        action=_text(obj, "action"),
        record_id=_text(obj, "record_id"),
        actor=obj.get("actor"),
        reason=obj.get("reason"),
        detail=_object(obj, "detail"),
    )


def event_to_json(event: Event, embedding: np.ndarray | None) -> dict[str, Any]:
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
) -> tuple[Event, np.ndarray | None]:
    embedding = _vector_from_json(obj, dim)
    scope = obj.get("scope")
    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise ValueError("scope must be a non-empty string or null")
    event = Event(
        id=_id(obj),
        space=space,
        text=_text(obj, "text"),
        kind=EventKind(str(obj.get("kind"))),
        scope=scope,
        occurred_at=_instant(obj, "occurred_at", required=True),  # type: ignore[arg-type]
        recorded_at=_instant(obj, "recorded_at", required=True),  # type: ignore[arg-type]
        metadata=_object(obj, "metadata"),
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
    cause, effect = _id(obj, "cause"), _id(obj, "effect")
    if cause == effect:
        raise ValueError(f"an event cannot cause itself ({cause})")
    weight = _number(obj, "weight", 0, 1)
    if weight == 0:
        raise ValueError("weight must be in (0, 1]; got 0")
    similarity = obj.get("similarity")
    return Link(
        cause=cause,
        effect=effect,
        weight=weight,
        provenance=Provenance(str(obj.get("provenance"))),
        similarity=None if similarity is None else _number(obj, "similarity", -1, 1),
        created_at=_instant(obj, "created_at", required=True),  # type: ignore[arg-type]
    )


def agent_to_json(agent: str, accumulated: float) -> dict[str, Any]:
    return {"type": "agent", "agent": agent, "importance_accumulated": accumulated}


def write_archive(
    path: str | os.PathLike[str], header: ArchiveHeader, lines: Iterable[dict[str, Any]]
) -> int:
    """Write the header and ``lines`` atomically (a temporary file renamed into place); return
    the number of record lines."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp")
    count = 0
    try:
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                count += line["type"] == "record"
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
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
    if header.get("version") not in READABLE_VERSIONS:
        fh.close()
        raise InvalidInputError(
            f"{source}: archive version {header.get('version')} is not supported (this "
            f"chronomem reads versions {', '.join(map(str, READABLE_VERSIONS))})",
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

    def lines() -> Iterator[dict[str, Any]]:
        yield from (record_to_json(item) for item in store.iter_records(space))
        yield from (audit_to_json(entry) for entry in store.audit(space))
        yield from (event_to_json(event, vector) for event, vector in store.iter_events(space))
        links = sorted(store.links(space), key=lambda link: (link.cause, link.effect))
        yield from (link_to_json(link) for link in links)
        for agent in sorted(store.agents(space)):
            yield agent_to_json(agent, store.accumulated_importance(space, agent))

    with store.snapshot():
        return write_archive(path, header, lines())


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


@dataclass(slots=True)
class _Contents:
    """An archive's lines, parsed; ``line_of`` / ``event_line_of`` map ids to their line."""

    records: list[StoredRecord] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)
    events: list[tuple[Event, np.ndarray | None]] = field(default_factory=list)
    links: list[tuple[int, Link]] = field(default_factory=list)
    agents: dict[str, float] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    event_line_of: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def add(self, number: int, obj: dict[str, Any], space: str, dim: int | None) -> None:
        kind = obj.get("type")
        if kind == "record":
            item = record_from_json(obj, space=space, dim=dim)
            _claim(self.line_of, number, item.record.id)
            self.records.append(item)
        elif kind == "audit":
            self.audit.append(audit_from_json(obj))
        elif kind == "event":
            event, vector = event_from_json(obj, space=space, dim=dim)
            _claim(self.event_line_of, number, event.id)
            self.events.append((event, vector))
        elif kind == "link":
            self.links.append((number, link_from_json(obj)))
        elif kind == "agent":
            agent = _text(obj, "agent")
            if agent in self.agents:
                raise ValueError(f"agent {agent!r} appears twice")
            self.agents[agent] = _number(obj, "importance_accumulated", 0, math.inf)
        else:
            raise ValueError(f"unknown line type {kind!r}")


def _claim(line_of: dict[str, int], number: int, rid: str) -> None:
    if rid in line_of:
        raise ValueError(f"id {rid} repeats line {line_of[rid]}")
    line_of[rid] = number


def _dangling_links(store: MemoryStore, space: str, contents: _Contents) -> list[str]:
    ends = {end for _, link in contents.links for end in (link.cause, link.effect)}
    missing = ends - contents.event_line_of.keys()
    if missing:
        missing -= {e.id for e in store.get_events(space, sorted(missing))}
    return [
        f"line {number}: link {link.cause} -> {link.effect}: event {end!r} does not exist"
        for number, link in contents.links
        for end in (link.cause, link.effect)
        if end in missing
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
    contents = _Contents()
    for number, obj in lines:
        try:
            contents.add(number, obj, space, meta_after.dim)
        except (ValueError, InvalidInputError) as exc:
            label = obj.get("id", obj.get("record_id", obj.get("agent")))
            contents.problems.append(f"line {number} (id {label!r}): {exc}")
    problems = contents.problems
    problems.extend(_dangling(store, space, contents.records, contents.line_of))
    problems.extend(_dangling_links(store, space, contents))
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise InvalidInputError(
            f"{path}: {len(problems)} problem(s), nothing imported:\n  {shown}{more}"
        )
    records = contents.records
    clash = store.existing_ids([i.record.id for i in records])
    clash |= {e.id for e in store.get_events(space, [e.id for e, _ in contents.events])}
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
        store.insert_records(space, records)
        if contents.audit:
            store.append_audit(space, contents.audit)
        for event, vector in contents.events:
            store.insert_event(space, event, vector)
        for _, link in contents.links:
            store.put_link(space, link)
        for agent, accumulated in sorted(contents.agents.items()):
            store.set_accumulated_importance(space, agent, accumulated)
    report = ImportReport(
        path=str(path),
        records=len(records),
        audit_entries=len(contents.audit),
        events=len(contents.events),
        links=len(contents.links),
    )
    return report, meta_after
