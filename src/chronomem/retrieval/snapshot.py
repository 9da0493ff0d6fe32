"""The in-memory index of a space saved to one file, so reopening a store loads its arrays in one
read instead of rebuilding them row by row from the store (docs/storage.md, "Index snapshot").

A snapshot holds every column of the loaded agents' :class:`~chronomem.retrieval.index.AgentArrays`
(vectors, passage vectors, the scoring and visibility columns, ids, texts and the derived keys)
exactly as they stood at one ``change_seq`` of the space. Loading maps the file into memory
(copy-on-write), so a reopen reads nothing up front. Loading it and then applying the store's
changes after that sequence gives the same arrays as a rebuild from the store.

Layout: the magic bytes, the length of a JSON header, the header (what the snapshot is of and
where each array sits), then the arrays' raw bytes, each at a 64-byte aligned offset. The file is
written to a temporary name, flushed to disk and renamed over the old one, so a reader sees the
old snapshot or the new one, never a part. Anything unexpected when loading — another format or
chronomem version, another space, model or dimension, a size that does not add up — makes
:func:`load` return ``None`` and the caller rebuild from the store.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.retrieval.compact import Codes
from chronomem.retrieval.index import AgentArrays

__all__ = ["Snapshot", "load", "own", "save"]

# 2: the occurred_at column; 3: the language and numbers columns; 4: sensitivity, status,
# sessions, tags and metadata (the filters' inputs)
_MAGIC = b"CHRMIDX\x04"
_ALIGN = 64
_SEP = "\x00"  # texts never hold NUL (chronomem.checks.check_text): it separates them
# The columns saved per agent: the numeric ones of AgentArrays plus the derived keys (stable
# hashes, saved so a multi-agent read after a reopen does not hash every text again).
_COLUMNS = (*AgentArrays._I64_FIELDS, *AgentArrays._F64_FIELDS, *AgentArrays._OTHER_FIELDS)
_DERIVED = ("text_keys", "domain_keys", "event_keys")
_OPTIONAL_TEXTS = ("keys", "domains", "event_ids", "tags", "metadata")


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A loaded snapshot: the agents' arrays as they stood at ``seq``."""

    seq: int
    agents: list[AgentArrays]


def _identity(space: str, model: str | None, dim: int | None, version: str) -> dict[str, Any]:
    return {"space": space, "model": model, "dim": dim, "chronomem": version}


def save(
    path: Path,
    agents: list[AgentArrays],
    *,
    space: str,
    seq: int,
    model: str | None,
    dim: int | None,
    version: str,
) -> bool:
    """Write the snapshot of ``agents`` at ``seq`` atomically (temporary file, fsync, rename).
    Returns ``False`` (writing nothing) when a text holds a NUL, which the format cannot hold."""
    blocks: list[tuple[str, npt.NDArray[Any]]] = []
    described = []
    for k, a in enumerate(agents):
        n = a.n
        texts = [*a.texts]
        present = {name: [v is not None for v in getattr(a, name)] for name in _OPTIONAL_TEXTS}
        strings = {
            "texts": texts,
            **{name: [v for v in getattr(a, name) if v is not None] for name in _OPTIONAL_TEXTS},
        }
        if any(_SEP in s for values in strings.values() for s in values):
            return False
        for name in _COLUMNS:
            blocks.append((f"{k}.{name}", getattr(a, name)[:n]))
        for name in _DERIVED:
            blocks.append((f"{k}.{name}", getattr(a, name)()))
        for name, flags in present.items():
            blocks.append((f"{k}.has_{name}", np.asarray(flags, dtype=np.bool_)))
        for name, values in strings.items():
            raw = _SEP.join(values).encode("utf-8")
            blocks.append((f"{k}.{name}", np.frombuffer(raw, dtype=np.uint8)))
        if a.emb is not None:
            blocks.append((f"{k}.emb", a.emb[:n]))
        if a.codes is not None:
            blocks.append((f"{k}.codes", a.codes.codes[:n]))
            blocks.append((f"{k}.codes_scale", a.codes.scale[:n]))
            blocks.append((f"{k}.codes_err", a.codes.err[:n]))
        if a.pemb is not None and a.pn:
            blocks.append((f"{k}.pemb", a.pemb[: a.pn]))
            blocks.append((f"{k}.powner", a.powner[: a.pn]))
        described.append(
            {
                "agent": a.agent, "n": n, "pn": a.pn, "speakers": list(a.speaker_names),
                "sessions": list(a.session_names),
            }
        )  # fmt: skip
    layout: list[dict[str, Any]] = []
    offsets: list[int] = []
    offset = 0
    for name, arr in blocks:
        layout.append(
            {"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset}
        )
        offsets.append(offset)
        offset += -(-arr.nbytes // _ALIGN) * _ALIGN
    header = json.dumps(
        {
            **_identity(space, model, dim, version),
            "seq": seq,
            "agents": described,
            "blocks": layout,
            "size": offset,
        }
    ).encode("utf-8")
    start = -(-(len(_MAGIC) + 8 + len(header)) // _ALIGN) * _ALIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(handle, "wb") as fh:
            fh.write(_MAGIC + len(header).to_bytes(8, "little") + header)
            fh.write(b"\x00" * (start - fh.tell()))
            for (_, arr), at in zip(blocks, offsets, strict=True):
                fh.seek(start + at)
                fh.write(np.ascontiguousarray(arr).data)
            fh.truncate(start + offset)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return True


def load(
    path: Path, *, space: str, model: str | None, dim: int | None, version: str
) -> Snapshot | None:
    """The snapshot at ``path`` when it is one of this space, model, dimension and chronomem
    version and its sizes add up; ``None`` otherwise (missing, damaged, of something else).

    The file is mapped into memory copy-on-write, and the arrays are views of that one mapping:
    nothing is copied, pages come from the OS's cache as the first read touches them, and
    writes to the arrays stay private to this process (the file never changes). Call
    :func:`own` before the views may hold bytes that must not outlive the file."""
    try:
        with path.open("rb") as fh:
            if os.fstat(fh.fileno()).st_size < len(_MAGIC) + 8:
                return None
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):
        return None
    buf = np.frombuffer(mapped, dtype=np.uint8)
    try:
        return _parse(buf, _identity(space, model, dim, version))
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        return None


def own(a: AgentArrays) -> None:
    """Replace every array of ``a`` that is a view of a snapshot's mapping with a copy, so the
    mapping (and the file it keeps alive after a purge deleted it) can go."""
    a.texts = a.texts  # decoded: the lazy decoder holds a view of the mapping
    for name in _COLUMNS:
        setattr(a, name, np.array(getattr(a, name)))
    for name in ("emb", "pemb"):
        if getattr(a, name) is not None:
            setattr(a, name, np.array(getattr(a, name)))
    a.powner = np.array(a.powner)
    if a.codes is not None:
        a.codes = Codes(np.array(a.codes.codes), np.array(a.codes.scale), np.array(a.codes.err))
    for key, value in list(a._derived.items()):
        a._derived[key] = np.array(value)


def _parse(buf: npt.NDArray[np.uint8], expected: dict[str, Any]) -> Snapshot | None:
    head = len(_MAGIC) + 8
    if buf.size < head or bytes(buf[: len(_MAGIC)]) != _MAGIC:
        return None
    length = int.from_bytes(bytes(buf[len(_MAGIC) : head]), "little")
    header = json.loads(bytes(buf[head : head + length]).decode("utf-8"))
    if any(header.get(key) != value for key, value in expected.items()):
        return None
    start = -(-(head + length) // _ALIGN) * _ALIGN
    if buf.size != start + int(header["size"]):
        return None
    arrays: dict[str, npt.NDArray[Any]] = {}
    for entry in header["blocks"]:
        dtype = np.dtype(entry["dtype"])
        shape = tuple(int(s) for s in entry["shape"])
        count = math.prod(shape)  # (numpy's prod costs ~3 µs a call: 12k blocks at 400 agents)
        at = start + int(entry["offset"])
        if at + count * dtype.itemsize > buf.size:
            return None
        arrays[entry["name"]] = (
            np.frombuffer(buf, dtype=dtype, count=count, offset=at).reshape(shape)
            if count
            else np.empty(shape, dtype=dtype)
        )
    agents = [
        _agent(k, described, arrays, expected["dim"])
        for k, described in enumerate(header["agents"])
    ]
    return Snapshot(seq=int(header["seq"]), agents=agents)


def _strings(raw: npt.NDArray[np.uint8], count: int) -> list[str]:
    if count == 0:
        return []
    values = raw.tobytes().decode("utf-8").split(_SEP)
    if len(values) != count:
        raise ValueError("wrong number of texts")
    return values


def _optional(flags: npt.NDArray[np.bool_], raw: npt.NDArray[np.uint8]) -> list[str | None]:
    present = _strings(raw, int(np.count_nonzero(flags)))
    if not present:
        return [None] * flags.size
    values = iter(present)
    return [next(values) if f else None for f in flags.tolist()]


def _agent(
    k: int, described: dict[str, Any], arrays: dict[str, npt.NDArray[Any]], dim: int | None
) -> AgentArrays:
    n, pn = int(described["n"]), int(described["pn"])
    a = AgentArrays(str(described["agent"]), dim, capacity=0)

    def block(name: str) -> npt.NDArray[Any]:
        arr = arrays[f"{k}.{name}"]
        if arr.shape[0] != n:
            raise ValueError(f"{name}: {arr.shape[0]} rows, expected {n}")
        return arr

    for name in _COLUMNS:
        expected = getattr(a, name).dtype
        arr = block(name)
        if arr.dtype != expected:
            raise ValueError(f"{name}: dtype {arr.dtype}, expected {expected}")
        setattr(a, name, arr)
    a.n = n
    raw_texts = arrays[f"{k}.texts"]
    if n and np.count_nonzero(raw_texts == 0) != n - 1:
        raise ValueError("wrong number of texts")
    a.texts = lambda: _strings(raw_texts, n)  # decoded when first needed
    for name in _OPTIONAL_TEXTS:
        setattr(a, name, _optional(block(f"has_{name}"), arrays[f"{k}.{name}"]))
    a.speaker_names = {name: code for code, name in enumerate(described["speakers"])}
    a.session_names = {name: code for code, name in enumerate(described["sessions"])}
    if f"{k}.emb" in arrays:
        emb = block("emb")
        if emb.dtype != np.float32 or emb.ndim != 2 or emb.shape[1] != dim:
            raise ValueError("vectors of another shape")
        a.emb = emb
    elif dim is not None:
        a.emb = np.zeros((n, dim), dtype=np.float32)
    if f"{k}.codes" in arrays and a.emb is not None:
        a.codes = Codes(block("codes"), block("codes_scale"), block("codes_err"))
        kinds = (a.codes.codes.dtype.str, a.codes.scale.dtype.str, a.codes.err.dtype.str)
        if a.codes.codes.shape != a.emb.shape or kinds != ("|i1", "<f4", "<f4"):
            raise ValueError("int8 codes of another shape")
    if pn:
        a.pemb, a.powner, a.pn = arrays[f"{k}.pemb"], arrays[f"{k}.powner"], pn
        if a.pemb.shape != (pn, dim) or a.powner.shape != (pn,):
            raise ValueError("passage vectors of another shape")
    a._position = None
    for name in _DERIVED:
        a._derived[name] = block(name)
    return a
