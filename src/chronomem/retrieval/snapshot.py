"""The in-memory index of a space saved to one file, so reopening a store loads its arrays in one
read instead of rebuilding them row by row from the store (docs/storage.md, "Index snapshot").

A snapshot holds every column of the loaded agents' :class:`~chronomem.retrieval.index.AgentArrays`
(vectors, passage vectors, the scoring and visibility columns, ids, texts and the derived keys)
exactly as they stood at one ``change_seq`` of the space. Loading maps the file into memory
(copy-on-write), so a reopen reads nothing up front. Loading it and then applying the store's
changes after that sequence gives the same arrays as a rebuild from the store.

Layout: the magic bytes, the length of a JSON header, the header (what the snapshot is of, each
agent's row counts and where each array sits), then the arrays' raw bytes, each at a 64-byte
aligned offset: one array per column holding every agent's rows one after another, so the
loaded agents' columns are views of one space-wide array (:class:`~chronomem.retrieval.span.Span`)
and a read over all of them takes each column whole. The file is
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.retrieval.compact import Codes
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.span import Span

__all__ = ["Snapshot", "load", "own", "save"]

# 2: the occurred_at column; 3: the language and numbers columns; 4: sensitivity, status,
# sessions, tags and metadata (the filters' inputs); 5: one block per column for the whole space
# (docs/design/space-wide-layout.md)
_MAGIC = b"CHRMIDX\x05"
_ALIGN = 64
_SEP = "\x00"  # texts never hold NUL (chronomem.checks.check_text): it separates them
# The columns saved per agent: the numeric ones of AgentArrays plus the derived keys (stable
# hashes, saved so a multi-agent read after a reopen does not hash every text again).
_COLUMNS = AgentArrays.COLUMNS
_DERIVED = ("text_keys", "domain_keys", "event_keys")
_OPTIONAL_TEXTS = ("keys", "domains", "event_ids", "tags", "metadata")
_DTYPES = {name: getattr(AgentArrays("", None), name).dtype for name in _COLUMNS}


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
    strings = {
        "texts": [t for a in agents for t in a.texts],
        **{
            name: [v for a in agents for v in getattr(a, name) if v is not None]
            for name in _OPTIONAL_TEXTS
        },
    }
    if any(_SEP in s for values in strings.values() for s in values):
        return False
    blocks: list[tuple[str, npt.NDArray[Any]]] = []

    def whole(name: str, parts: list[npt.NDArray[Any]], dtype: Any) -> None:
        blocks.append((name, np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)))

    for name in _COLUMNS:
        whole(name, [getattr(a, name)[: a.n] for a in agents], _DTYPES[name])
    for name in _DERIVED:
        whole(name, [getattr(a, name)() for a in agents], np.int64)
    for name in _OPTIONAL_TEXTS:
        flags = [v is not None for a in agents for v in getattr(a, name)]
        blocks.append((f"has_{name}", np.asarray(flags, dtype=np.bool_)))
    for name, values in strings.items():
        blocks.append((name, np.frombuffer(_SEP.join(values).encode("utf-8"), dtype=np.uint8)))
    if dim is not None and any(a.emb is not None for a in agents):
        blocks.append(("emb", _rows([a.emb for a in agents], [a.n for a in agents], dim)))
    coded = [a for a in agents if a.codes is not None and a.emb is not None]
    if coded:
        blocks.append(("codes", np.concatenate([a.codes.codes[: a.n] for a in coded])))  # type: ignore[union-attr]
        blocks.append(("codes_scale", np.concatenate([a.codes.scale[: a.n] for a in coded])))  # type: ignore[union-attr]
        blocks.append(("codes_err", np.concatenate([a.codes.err[: a.n] for a in coded])))  # type: ignore[union-attr]
    passaged = [a for a in agents if a.pemb is not None and a.pn]
    if passaged and dim is not None:
        blocks.append(("pemb", _rows([a.pemb for a in passaged], [a.pn for a in passaged], dim)))
        blocks.append(("powner", np.concatenate([a.powner[: a.pn] for a in passaged])))
    # the passages' int8 copy as far as it goes (pcoded rows); a read extends it from there
    pcoded = {a.agent: a.pcoded for a in passaged if a.pcodes is not None and dim is not None}
    if any(pcoded.values()):
        held = [a.pcodes for a in passaged if a.agent in pcoded]
        counts = list(pcoded.values())
        for name, field in (("pcodes", "codes"), ("pcodes_scale", "scale"), ("pcodes_err", "err")):
            parts = [getattr(c, field)[:k] for c, k in zip(held, counts, strict=True)]
            blocks.append((name, np.concatenate(parts)))
    described = [
        {
            "agent": a.agent,
            "n": a.n,
            "pn": a.pn if a.pemb is not None else 0,
            "pcoded": pcoded.get(a.agent, 0),
            "codes": a.codes is not None and a.emb is not None,
            "speakers": list(a.speaker_names),
            "sessions": list(a.session_names),
        }
        for a in agents
    ]
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
    a.span = None  # (its arrays are views of the mapping)
    for name in _COLUMNS:
        setattr(a, name, np.array(getattr(a, name)))
    for name in ("emb", "pemb"):
        if getattr(a, name) is not None:
            setattr(a, name, np.array(getattr(a, name)))
    a.powner = np.array(a.powner)
    for name in ("codes", "pcodes"):
        held = getattr(a, name)
        if held is not None:
            setattr(a, name, Codes(np.array(held.codes), np.array(held.scale), np.array(held.err)))
    for key, value in list(a._derived.items()):
        a._derived[key] = np.array(value)


def _rows(mats: list[npt.NDArray[Any] | None], counts: list[int], dim: int) -> npt.NDArray[Any]:
    """The first ``counts[i]`` rows of each matrix, one after another (zeros for a ``None``)."""
    out = np.zeros((sum(counts), dim), dtype=np.float32)
    at = 0
    for m, n in zip(mats, counts, strict=True):
        if m is not None:
            out[at : at + n] = m[:n]
        at += n
    return out


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
        count = math.prod(shape)
        at = start + int(entry["offset"])
        if at + count * dtype.itemsize > buf.size:
            return None
        arrays[entry["name"]] = (
            np.frombuffer(buf, dtype=dtype, count=count, offset=at).reshape(shape)
            if count
            else np.empty(shape, dtype=dtype)
        )
    described = header["agents"]
    sizes = [int(d["n"]) for d in described]
    starts = np.concatenate(([0], np.cumsum(sizes, dtype=np.intp)))
    total, dim = int(starts[-1]), expected["dim"]
    for name in (*_COLUMNS, *_DERIVED, *(f"has_{n}" for n in _OPTIONAL_TEXTS)):
        if arrays[name].shape[0] != total:
            raise ValueError(f"{name}: {arrays[name].shape[0]} rows, expected {total}")
    for name in _COLUMNS:
        if arrays[name].dtype != _DTYPES[name]:
            raise ValueError(f"{name}: dtype {arrays[name].dtype}, expected {_DTYPES[name]}")
    emb = arrays.get("emb")
    if emb is not None and (emb.dtype != np.float32 or emb.shape != (total, dim)):
        raise ValueError("vectors of another shape")
    texts = _Texts(arrays["texts"], total)
    optional = {name: _optional(arrays[f"has_{name}"], arrays[name]) for name in _OPTIONAL_TEXTS}
    codes = _Split(
        arrays,
        ("codes", "codes_scale", "codes_err"),
        [int(d["n"]) if d.get("codes") else 0 for d in described],
    )
    passages = _Split(arrays, ("pemb", "powner"), [int(d["pn"]) for d in described])
    pcodes = _Split(
        arrays,
        ("pcodes", "pcodes_scale", "pcodes_err"),
        [int(d.get("pcoded", 0)) for d in described],
    )
    agents = []
    for k, d in enumerate(described):
        lo, hi = int(starts[k]), int(starts[k + 1])
        a = AgentArrays(str(d["agent"]), dim, capacity=0)
        for name in _COLUMNS:
            setattr(a, name, arrays[name][lo:hi])
        a.n = hi - lo
        a.texts = texts.part(lo, hi)
        for name, values in optional.items():
            setattr(a, name, values[lo:hi])
        a.speaker_names = {name: code for code, name in enumerate(d["speakers"])}
        a.session_names = {name: code for code, name in enumerate(d["sessions"])}
        if emb is not None:
            a.emb = emb[lo:hi]
        elif dim is not None:
            a.emb = np.zeros((a.n, dim), dtype=np.float32)
        if d.get("codes") and a.emb is not None:
            code_rows, scale, err = codes.part(k)
            a.codes = Codes(code_rows, scale, err)
            kinds = (code_rows.dtype.str, scale.dtype.str, err.dtype.str)
            if code_rows.shape != a.emb.shape or kinds != ("|i1", "<f4", "<f4"):
                raise ValueError("int8 codes of another shape")
        pn = int(d["pn"])
        if pn:
            a.pemb, a.powner = passages.part(k)
            a.pn = pn
            if a.pemb.shape != (pn, dim) or a.powner.shape != (pn,):
                raise ValueError("passage vectors of another shape")
            coded = int(d.get("pcoded", 0))
            if coded:
                code_rows, scale, err = pcodes.part(k)
                kinds = (code_rows.dtype.str, scale.dtype.str, err.dtype.str)
                if coded > pn or code_rows.shape != (coded, dim) or kinds != ("|i1", "<f4", "<f4"):
                    raise ValueError("the passages' int8 codes of another shape")
                a.pcodes, a.pcoded = Codes(code_rows, scale, err), coded
        a._position = None
        for name in _DERIVED:
            a._derived[name] = arrays[name][lo:hi]
        agents.append(a)
    laid = {name: arrays[name] for name in (*_COLUMNS, *_DERIVED, "emb") if name in arrays}
    for a, bounds in zip(agents, Span(laid, starts, agents).bounds(), strict=True):
        a._bounds = bounds
    return Snapshot(seq=int(header["seq"]), agents=agents)


class _Texts:
    """The texts of every row, NUL-separated: each agent's decoded when it first asks."""

    def __init__(self, raw: npt.NDArray[np.uint8], count: int) -> None:
        self._raw = raw
        # where each text starts and ends in the bytes
        seps = np.flatnonzero(raw == 0)
        if count and seps.size != count - 1:
            raise ValueError("wrong number of texts")
        self._starts = np.concatenate(([0], seps + 1)) if count else np.zeros(0, np.intp)
        self._ends = np.concatenate((seps, [raw.size])) if count else np.zeros(0, np.intp)

    def part(self, lo: int, hi: int) -> Callable[[], list[str]]:
        if lo == hi:
            return list
        a, b = int(self._starts[lo]), int(self._ends[hi - 1])
        raw, count = self._raw, hi - lo
        return lambda: _strings(raw[a:b], count)


class _Split:
    """Blocks holding some agents' rows one after another (``counts[k]`` rows of agent ``k``)."""

    def __init__(
        self, arrays: dict[str, npt.NDArray[Any]], names: tuple[str, ...], counts: list[int]
    ) -> None:
        self._blocks = [arrays.get(name) for name in names]
        self._starts = np.concatenate(([0], np.cumsum(counts, dtype=np.intp))).tolist()
        total = self._starts[-1]
        if total and any(b is None or b.shape[0] != total for b in self._blocks):
            raise ValueError(f"{names[0]}: rows do not add up")

    def part(self, k: int) -> list[npt.NDArray[Any]]:
        lo, hi = self._starts[k], self._starts[k + 1]
        return [b[lo:hi] for b in self._blocks if b is not None]


def _strings(raw: npt.NDArray[np.uint8], count: int) -> list[str]:
    if count == 0:
        return []
    values = raw.tobytes().decode("utf-8").split(_SEP)
    if len(values) != count:
        raise ValueError("wrong number of texts")
    return values


def _optional(flags: npt.NDArray[np.bool_], raw: npt.NDArray[np.uint8]) -> list[str | None]:
    """Every row's value (``None`` where ``flags`` says it has none)."""
    out: list[str | None] = [None] * flags.size
    present = np.flatnonzero(flags).tolist()
    for at, value in zip(present, _strings(raw, len(present)), strict=True):
        out[at] = value
    return out
