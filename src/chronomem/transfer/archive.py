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

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronomem.arrays import F32
from chronomem.checks import (
    number_in,
    require_text,
)
from chronomem.embedders.base import Embedder
from chronomem.errors import (
    ChronomemError,
    ConflictError,
    EmbedderMismatchError,
    InvalidInputError,
    StoreError,
)
from chronomem.model.audit import AuditEntry
from chronomem.model.event import Event, Link
from chronomem.model.transfer import ImportReport
from chronomem.stores.base import EmbeddingMeta, MemoryStore, StoredRecord
from chronomem.transfer.lines import (
    agent_to_json,
    audit_from_json,
    audit_to_json,
    event_from_json,
    event_to_json,
    link_from_json,
    link_to_json,
    record_from_json,
    record_to_json,
)

__all__ = [
    "FORMAT",
    "VERSION",
    "ArchiveHeader",
    "ImportReport",
    "export_space",
    "import_space",
    "read_archive",
    "write_archive",
]

FORMAT = "chronomem"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


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


def write_archive(
    path: str | os.PathLike[str], header: ArchiveHeader, lines: Iterable[dict[str, Any]]
) -> int:
    """Write the header and ``lines`` to ``path`` atomically and return the number of record
    lines.

    The content goes to a new temporary file in the target's directory, created exclusively
    with a random name and never through a symlink (``O_EXCL | O_NOFOLLOW``, mode 0600), is
    flushed to disk, renamed over ``path`` and the directory is synced: a reader sees the old
    file or the whole new one, and a symlink planted in the directory is never written
    through. An existing target keeps its permission bits; a symlink at ``path`` is replaced,
    not followed."""
    target = Path(path)
    directory = target.parent
    if target.name in ("", ".", ".."):
        raise InvalidInputError(f"cannot export to {target}: not a file name", field="path")
    if not directory.is_dir():
        raise InvalidInputError(
            f"cannot export to {target}: directory {directory} does not exist", field="path"
        )
    if target.is_dir():
        raise InvalidInputError(f"cannot export to {target}: it is a directory", field="path")
    count = 0
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(json.dumps(header.to_json(), ensure_ascii=False) + "\n")
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                count += line["type"] == "record"
            fh.flush()
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG((before := os.lstat(target)).st_mode):
                    os.chmod(fh.fileno(), stat.S_IMODE(before.st_mode))
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        tmp = None
        _sync_directory(directory)
    except OSError as exc:
        raise _path_error(exc, f"cannot export to {target}") from exc
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return count


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the platform can open directories)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot sync a directory; the rename itself is atomic
    finally:
        os.close(fd)


_CALLER_ERRNOS = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS,
     errno.ENAMETOOLONG, errno.ELOOP}
)  # fmt: skip


def _path_error(exc: OSError, what: str) -> ChronomemError:
    """An ``OSError`` as chronomem's error: the path's fault (missing, a directory, no
    permission) is the caller's to fix, anything else (a full disk, I/O) the storage's."""
    message = f"{what}: {exc.strerror or exc}"
    if exc.errno in _CALLER_ERRNOS:
        return InvalidInputError(message, field="path")
    return StoreError(message)


def read_archive(
    path: str | os.PathLike[str],
) -> tuple[dict[str, Any], Iterator[tuple[int, dict[str, Any]]]]:
    """The header and an iterator of ``(line_number, object)`` for the remaining lines."""
    source = Path(path)
    if not source.is_file():
        raise InvalidInputError(f"archive path {source}: no such file", field="path")
    try:
        fh = source.open("rb")
    except OSError as exc:
        raise _path_error(exc, f"cannot read {source}") from exc
    try:
        header = _parse_line(source, 1, fh.readline())
    except OSError as exc:
        fh.close()
        raise _path_error(exc, f"cannot read {source}") from exc
    except InvalidInputError:
        fh.close()
        raise InvalidInputError(
            f"{source}: line 1 is not a JSON header (a chronomem archive is UTF-8 JSON lines)",
            field="path",
        ) from None
    if header.get("format") != FORMAT:
        fh.close()
        raise InvalidInputError(f"{source}: not a chronomem archive", field="path")
    version = header.get("version")
    readable = ", ".join(map(str, READABLE_VERSIONS))
    if type(version) is not int or version not in READABLE_VERSIONS:
        fh.close()
        got = f"the integer {version}" if type(version) is int else f"{version!r}"
        raise InvalidInputError(
            f"{source}: the header's version must be one of the integers {readable} this "
            f"chronomem reads; got {got}",
            field="version",
        )

    def lines() -> Iterator[tuple[int, dict[str, Any]]]:
        with fh:
            try:
                for number, line in enumerate(fh, start=2):
                    if line.strip():
                        yield number, _parse_line(source, number, line)
            except OSError as exc:
                raise _path_error(exc, f"cannot read {source}") from exc

    return header, lines()


def _parse_line(source: Path, number: int, line: bytes) -> dict[str, Any]:
    """One line as a JSON object, or :class:`InvalidInputError` saying why not."""
    try:
        obj = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInputError(f"{source}:{number}: not UTF-8 text", field="path") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInputError(f"{source}:{number}: not JSON ({exc})", field="path") from None
    if not isinstance(obj, dict):
        raise InvalidInputError(f"{source}:{number}: not a JSON object", field="path")
    return obj


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
    if model is not None:
        require_text(model, "embedding_model")
    if dim is None:
        return ours
    if type(dim) is not int or dim < 1:
        raise InvalidInputError(
            f"the header's embedding_dim must be a positive integer; got {dim!r}",
            field="embedding_dim",
        )
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
    events: list[tuple[Event, F32 | None]] = field(default_factory=list)
    links: list[tuple[int, Link]] = field(default_factory=list)
    agents: dict[str, float] = field(default_factory=dict)
    line_of: dict[str, int] = field(default_factory=dict)
    event_line_of: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    fields: list[str | None] = field(default_factory=list)  # the field of each problem

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
            agent = require_text(obj.get("agent"), "agent")
            if agent in self.agents:
                raise InvalidInputError(f"agent {agent!r} appears twice", field="agent")
            self.agents[agent] = number_in(
                obj.get("importance_accumulated"), "importance_accumulated", 0, math.inf
            )
        else:
            raise InvalidInputError(f"unknown line type {kind!r}", field="type")


def _claim(line_of: dict[str, int], number: int, rid: str) -> None:
    if rid in line_of:
        raise InvalidInputError(f"id {rid} repeats line {line_of[rid]}", field="id")
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
        except InvalidInputError as exc:
            label = obj.get("id", obj.get("record_id", obj.get("agent")))
            contents.problems.append(f"line {number} (id {label!r}): {exc}")
            contents.fields.append(exc.field)
    problems = contents.problems
    dangling = _dangling(store, space, contents.records, contents.line_of)
    problems.extend(dangling)
    contents.fields.extend(["references"] * len(dangling))
    problems.extend(_dangling_links(store, space, contents))
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        first = next((f for f in contents.fields if f), "references")
        raise InvalidInputError(
            f"{path}: {len(problems)} problem(s), nothing imported:\n  {shown}{more}",
            field=first,
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
