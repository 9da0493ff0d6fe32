"""Per-agent in-memory arrays that mirror the store, so a recall is a few vectorised passes
(DESIGN §6). :class:`~chronomem.retrieval.space.SpaceIndex` keeps them in sync with the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import compress, count
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from chronomem.analysis.scripts import language_code
from chronomem.arrays import F32, F64, Rows, unit_rows
from chronomem.errors import StoreError
from chronomem.model.record import Kind
from chronomem.retrieval.bounds import NO_ROWS, Bounds
from chronomem.retrieval.codes import KIND_CODES, SENSITIVITY_CODES, STATUS_CODES
from chronomem.retrieval.compact import Codes
from chronomem.retrieval.derived import DerivedColumns
from chronomem.retrieval.passage_vectors import PassageVectors
from chronomem.stores.base import RecordColumns
from chronomem.text import NameFinder, number_key, speaker

if TYPE_CHECKING:
    from chronomem.retrieval.span import Span

__all__ = ["AgentArrays"]

#: Vectors versions (``AgentArrays.vectors``): one number per state of one object's vectors,
#: never reused in the process.
_VERSIONS = count()


_ID_DTYPE = np.dtype("<U26")
#: ``rows_of`` keeps a key-to-row table from this many rows on (below, a binary search is as
#: cheap as building it after each write).
_DENSE_KEYS_FROM = 4096


def _speaker_of(cols: RecordColumns, i: int) -> str | None:
    """Who says row ``i``, case-folded: its ``speaker`` field, else the name its text gives
    (a transcript or prose line: :func:`chronomem.text.speaker`)."""
    who = cols.speakers[i]
    return who.casefold() if who else speaker(cols.texts[i])


class AgentArrays(DerivedColumns, PassageVectors):
    """Columns of one agent's records, in store-key order, with spare capacity for appends.

    Attributes are full-capacity arrays; use ``[: self.n]`` (the :meth:`view` helpers) to read.
    Embeddings are unit-normalised so a matrix-vector product is the cosine. Passage vectors sit
    in their own matrix (:class:`~chronomem.retrieval.passage_vectors.PassageVectors`, its
    base). ``raw`` holds the vectors as stored, not normalised,
    once a read with float64 cosines asked for them (:meth:`hold_raw`); it is then kept in step.
    """

    _I64_FIELDS = (
        "pk",
        "recorded_at",
        "occurred_at",
        "last_accessed_at",
        "last_verified_at",
        "valid_from",
        "valid_until",
        "valid_until_before",
        "superseded_at",
    )
    _F64_FIELDS = ("importance", "feedback_score")
    _OTHER_FIELDS = (
        "kind", "speaker", "language", "numbers", "has_embedding", "has_passages", "ids",
        "sensitivity", "state", "session",
    )  # fmt: skip

    #: every row-aligned column of one value per record (the vectors aside)
    COLUMNS: ClassVar[tuple[str, ...]] = (*_I64_FIELDS, *_F64_FIELDS, *_OTHER_FIELDS)

    def __init__(self, agent: str, dim: int | None, capacity: int = 16) -> None:
        self.agent = agent
        self.n = 0
        self.dim = dim
        cap = capacity
        for name in self._I64_FIELDS:
            setattr(self, name, np.zeros(cap, dtype=np.int64))
        for name in self._F64_FIELDS:
            setattr(self, name, np.zeros(cap, dtype=np.float64))
        self.kind = np.zeros(cap, dtype=np.int8)
        # the speaker of each row as a code into speaker_names (-1: none), kept on append
        self.speaker = np.zeros(cap, dtype=np.int32)
        self.speaker_names: dict[str, int] = {}
        self._names: NameFinder | None = None
        # each row's language as its position in analysis.scripts.LANGUAGES, kept on append
        self.language = np.zeros(cap, dtype=np.int8)
        # the numbers each row's text states (text.number_key), for the write gate
        self.numbers = np.zeros(cap, dtype=np.int64)
        self.has_embedding = np.zeros(cap, dtype=np.bool_)
        self.has_passages = np.zeros(cap, dtype=np.bool_)
        self.sensitivity = np.zeros(cap, dtype=np.int8)  # SENSITIVITY_CODES
        self.state = np.zeros(cap, dtype=np.int8)  # the stored status (STATUS_CODES)
        # the session of each row as a code into session_names (-1: none), kept on append
        self.session = np.zeros(cap, dtype=np.int32)
        self.session_names: dict[str, int] = {}
        self.ids = np.empty(cap, dtype=_ID_DTYPE)
        self.emb: F32 | None = None if dim is None else np.zeros((cap, dim), dtype=np.float32)
        self.codes: Codes | None = None  # the int8 copy of emb, once a large read asked for it
        #: The vectors as stored, in float64 (exact: every float32 is a float64), and each
        #: row's float64 norm — the Generative Agents code preset's cosine inputs, kept so a
        #: read does not convert and measure every stored vector again.
        self.raw: F64 | None = None
        self.raw_norms: F64 | None = None
        #: The version of the held rows' vectors: renewed when a held row's vector changes or
        #: rows are removed (appends add rows and keep it), so ``(n, vectors)`` names the
        #: rows' vectors (what a crisis keeps its ancestors' cosines by).
        self.vectors = next(_VERSIONS)
        self.pn = 0
        self.pemb: F32 | None = None
        self.powner: Rows = np.zeros(0, dtype=np.intp)
        self.pcodes: Codes | None = None
        self.pcoded = 0
        self._texts: list[str] | Callable[[], list[str]] = []
        self._appended: list[str] = []  # texts appended while a snapshot's are not decoded
        self.keys: list[str | None] = []  # embedding keys (metadata), None: the text is the key
        self.domains: list[str | None] = []
        self.event_ids: list[str | None] = []
        # the stored JSON of tags and metadata (None: none), parsed when a filter reads them
        self.tags: list[str | None] = []
        self.metadata: list[str | None] = []
        self._position: dict[str, int] | None = {}
        self._derived: dict[object, npt.NDArray[np.generic]] = {}
        # how to compute the rows from a start of the derived columns kept across writes that
        # filters asked for (see column()); the key columns of _KEYS are kept the same way
        self._growing: dict[object, Callable[[AgentArrays, int], npt.NDArray[np.generic]]] = {}
        # the codes of each metadata path's values that a filter asked for (filtering.py)
        self.vocabularies: dict[tuple[str, ...], dict[tuple[Any, ...], int]] = {}
        self._bounds: Bounds | None = None
        # (first key, rows covered, row of each key from the first): rows_of's table
        self._pk_table: tuple[int, int, npt.NDArray[np.int32]] | None = None
        #: ``(span, k)`` while this agent is member ``k`` of a space-wide layout (span.py)
        self.span: tuple[Span, int] | None = None

    # typed accessors for the dynamic columns (mypy cannot see setattr)
    pk: npt.NDArray[np.int64]
    recorded_at: npt.NDArray[np.int64]
    occurred_at: npt.NDArray[np.int64]
    last_accessed_at: npt.NDArray[np.int64]
    last_verified_at: npt.NDArray[np.int64]
    valid_from: npt.NDArray[np.int64]
    valid_until: npt.NDArray[np.int64]
    valid_until_before: npt.NDArray[np.int64]
    superseded_at: npt.NDArray[np.int64]
    importance: npt.NDArray[np.float64]
    feedback_score: npt.NDArray[np.float64]

    @property
    def texts(self) -> list[str]:
        """The records' texts (a snapshot's are decoded when first asked for)."""
        if callable(self._texts):
            self._texts = self._texts() + self._appended
            self._appended = []
        return self._texts

    @texts.setter
    def texts(self, value: list[str] | Callable[[], list[str]]) -> None:
        self._texts = value
        self._appended = []

    def texts_from(self, start: int) -> list[str]:
        """The texts of the rows from ``start`` on — without decoding a snapshot's texts when
        they all come after it (rows appended since the load: the derived keys of new rows)."""
        if callable(self._texts):
            held = self.n - len(self._appended)  # the snapshot's rows (n counts the appended)
            if start >= held:
                return self._appended[start - held :]
        return self.texts[start:]

    def _append_text(self, text: str) -> None:
        """Keep a new row's text (a snapshot's are left undecoded: the first write after a load
        of 100k records decoded them all, 0.3 s inside the write's sync)."""
        if callable(self._texts):
            self._appended.append(text)
        else:
            self._texts.append(text)

    @property
    def position(self) -> dict[str, int]:
        """Each held record's row, by id (built when first asked for after a load or removal)."""
        if self._position is None:
            self._position = dict(zip(self.ids[: self.n].tolist(), range(self.n), strict=True))
        return self._position

    @property
    def capacity(self) -> int:
        return int(self.pk.shape[0])

    def _grow(self, needed: int) -> None:
        cap = self.capacity
        if needed <= cap:
            return
        new_cap = max(needed, cap * 2)
        for name in self.COLUMNS:
            old = getattr(self, name)
            new = np.zeros(new_cap, dtype=old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)
        if self.emb is not None:
            emb = np.zeros((new_cap, self.emb.shape[1]), dtype=np.float32)
            emb[: self.n] = self.emb[: self.n]
            self.emb = emb
        if self.raw is not None and self.raw_norms is not None:
            raw = np.zeros((new_cap, self.raw.shape[1]), dtype=np.float64)
            raw[: self.n] = self.raw[: self.n]
            norms = np.zeros(new_cap, dtype=np.float64)
            norms[: self.n] = self.raw_norms[: self.n]
            self.raw, self.raw_norms = raw, norms
        if self.codes is not None:
            self.codes.grow(self.n, new_cap)

    def make_room(self) -> None:
        """Room for new rows now when there is none (a snapshot's arrays hold exactly their
        rows), as the next append would make it, and the position of each id."""
        self._grow(self.n + 1)
        self._position = self.position

    def set_dim(self, dim: int) -> None:
        if self.dim == dim and self.emb is not None:
            return
        if self.dim is not None and self.dim != dim:
            raise StoreError(f"embedding dimension changed from {self.dim} to {dim}")
        self.dim = dim
        self.emb = np.zeros((self.capacity, dim), dtype=np.float32)
        self.codes = self.raw = self.raw_norms = self.pcodes = None
        self.vectors = next(_VERSIONS)

    def _write_rows(self, at: Rows, cols: RecordColumns, rows: Rows) -> None:
        for name in (*self._I64_FIELDS, *self._F64_FIELDS):
            getattr(self, name)[at] = getattr(cols, name)[rows]
        self.has_embedding[at] = cols.has_embedding[rows]
        self.state[at] = [STATUS_CODES[cols.status[i]] for i in rows]
        if cols.embeddings is not None:
            self.set_dim(cols.embeddings.shape[1])
            assert self.emb is not None
            vectors = unit_rows(cols.embeddings[rows])
            held = at.size and int(at.min()) < self.n  # an update, not an append
            if held and not np.array_equal(self.emb[at], vectors):
                self.vectors = next(_VERSIONS)
            self.emb[at] = vectors
            if self.raw is not None and self.raw_norms is not None:
                self.raw[at] = cols.embeddings[rows]
                self.raw_norms[at] = np.linalg.norm(self.raw[at], axis=1)
            if self.codes is not None:
                self.codes.write(at, self.emb[at])

    def _append_passages(self, cols: RecordColumns, rows: Rows, start: int) -> None:
        mats = [(start + k, cols.passages[i]) for k, i in enumerate(rows.tolist())]
        self._add_passages([(owner, m) for owner, m in mats if m is not None and m.shape[0]])

    def append(self, cols: RecordColumns, rows: Rows) -> None:
        """Append ``rows`` of ``cols`` (their keys must be larger than every key held)."""
        if rows.size == 0:
            return
        start = self.n
        # (dropped until the rows are in: an append that fails half-way leaves none stale)
        bounds, self._bounds = self._bounds, None
        self._grow(start + rows.size)
        at = np.arange(start, start + rows.size)
        self._write_rows(at, cols, rows)
        self.has_passages[at] = False  # rows past n keep a removed row's flag
        self._append_passages(cols, rows, start)
        self.kind[at] = [KIND_CODES[Kind(cols.kinds[i])] for i in rows]
        names = self.speaker_names
        self.speaker[at] = [
            -1 if (who := _speaker_of(cols, i)) is None else names.setdefault(who, len(names))
            for i in rows
        ]
        self.language[at] = [language_code(cols.texts[i]) for i in rows]
        self.numbers[at] = [number_key(cols.texts[i]) for i in rows]
        self.sensitivity[at] = [SENSITIVITY_CODES[cols.sensitivity[i]] for i in rows]
        held = self.session_names
        self.session[at] = [
            -1 if (s := cols.sessions[i]) is None else held.setdefault(s, len(held)) for i in rows
        ]
        self.ids[at] = [cols.ids[i] for i in rows]
        for offset, i in enumerate(rows):
            self.position[cols.ids[i]] = start + offset
            self._append_text(cols.texts[i])
            self.keys.append(cols.embedding_keys[i])
            self.domains.append(cols.domains[i])
            self.event_ids.append(cols.event_ids[i])
            self.tags.append(cols.tags[i])
            self.metadata.append(cols.metadata[i])
        self.n = start + rows.size
        if start and self.pk[start - 1] >= self.pk[start]:
            raise StoreError("store keys are not increasing; the in-memory index is out of sync")
        self._extend_keys(start)
        self._bounds = None if bounds is None else bounds.widened(self, at)

    def update(self, cols: RecordColumns, rows: Rows) -> None:
        """Overwrite the mutable columns of rows already held (texts and kinds never change;
        passages only arrive, by a backfill, for rows that had none)."""
        at = np.fromiter((self.position[cols.ids[i]] for i in rows), dtype=np.intp, count=rows.size)
        if self._bounds is not None and not all(
            np.array_equal(getattr(self, name)[at], getattr(cols, name)[rows])
            for name in Bounds.FROM
        ):  # (a touch changes none of them: the next read keeps the bounds)
            self._bounds = None
        self._write_rows(at, cols, rows)
        self._add_passages(
            [
                (int(row), m)
                for row, i in zip(at.tolist(), rows.tolist(), strict=True)
                if (m := cols.passages[i]) is not None and m.shape[0] and not self.has_passages[row]
            ]
        )

    def stamp_access(self, ids: Iterable[str], at_us: int, *, backwards: bool) -> set[str]:
        """Stamp ``last_accessed_at = at_us`` on the held rows of ``ids`` whose stamp is earlier
        (``backwards``: any other), as the store's touch does; returns the ids held."""
        position = self.position
        held = {i for i in ids if i in position}
        if held:
            at = np.fromiter((position[i] for i in held), dtype=np.intp, count=len(held))
            stamped = self.last_accessed_at[at]
            moves = stamped != at_us if backwards else stamped < at_us
            self.last_accessed_at[at[moves]] = at_us
        return held

    def remove(self, ids: Sequence[str]) -> None:
        drop = sorted(self.position[i] for i in ids if i in self.position)
        if not drop:
            return
        keep = np.ones(self.n, dtype=np.bool_)
        keep[drop] = False
        for name in self.COLUMNS:
            arr = getattr(self, name)
            kept = arr[: self.n][keep]
            arr[: kept.shape[0]] = kept
        if self.codes is not None:
            self.codes.keep(keep, self.n)
        if self.emb is not None:
            kept_emb = self.emb[: self.n][keep]
            self.emb[: kept_emb.shape[0]] = kept_emb
            self.emb[kept_emb.shape[0] : self.n] = 0.0
        if self.raw is not None and self.raw_norms is not None:
            kept_norms = self.raw_norms[: self.n][keep]
            self.raw_norms[: kept_norms.shape[0]] = kept_norms
            self.raw_norms[kept_norms.shape[0] : self.n] = 0.0
            kept_raw = self.raw[: self.n][keep]
            self.raw[: kept_raw.shape[0]] = kept_raw
            self.raw[kept_raw.shape[0] : self.n] = 0.0
        self._keep_passages(keep)
        kept_rows = keep.tolist()
        for name in ("texts", "keys", "domains", "event_ids", "tags", "metadata"):
            setattr(self, name, list(compress(getattr(self, name), kept_rows)))
        self.n = int(keep.sum())
        self.vectors = next(_VERSIONS)
        self._position = None
        self._derived = {
            name: cached[keep]
            for name, cached in self._derived.items()
            if (name in self._KEYS or name in self._growing) and cached.shape[0] == keep.shape[0]
        }
        self._growing = {name: f for name, f in self._growing.items() if name in self._derived}
        self._bounds = None
        self._pk_table = None

    def compact(self) -> Codes:
        """The int8 copy of the vectors (built on first use, then kept in step with them)."""
        assert self.emb is not None
        if self.codes is None:
            self.codes = Codes.of(self.emb, self.n)
        return self.codes

    def hold_raw(self, cols: RecordColumns) -> None:
        """Keep the vectors as stored from ``cols``, every record of this agent (loaded in the
        read's store snapshot, after this agent's rows were brought up to date)."""
        assert self.dim is not None
        raw = np.zeros((self.capacity, self.dim), dtype=np.float64)
        if cols.embeddings is not None:
            held = self.position
            rows = [i for i, a in enumerate(cols.agents) if a == self.agent and cols.ids[i] in held]
            at = np.fromiter((held[cols.ids[i]] for i in rows), np.intp, len(rows))
            raw[at] = cols.embeddings[rows]
        self.raw, self.raw_norms = raw, np.linalg.norm(raw, axis=1)

    # -- derived values, cached until the rows change ------------------------------------
    def bounds(self) -> Bounds:
        """Extremes of the visibility and lifecycle columns: when a read's instants lie inside
        them every row is visible and the lifecycle factor is 1, so the read skips those passes."""
        if self._bounds is None:
            self._bounds = Bounds.of(self, slice(0, self.n)) if self.n else NO_ROWS
        return self._bounds

    def rows_of(self, pks: npt.NDArray[np.int64]) -> tuple[Rows, npt.NDArray[np.bool_]]:
        """Where the store keys ``pks`` sit among the rows (0 for a key not held) and which are
        held. An agent whose keys fill their range (one agent's records written together: no
        other agent's in between) keeps a table from key to row, built on first use after a
        write: a lookup per key instead of a binary search (a common word's 60k matches at 100k
        records: 0.9 ms of a read)."""
        n = self.n
        if n == 0:
            return np.zeros(pks.shape[0], dtype=np.intp), np.zeros(pks.shape[0], dtype=np.bool_)
        keys = self.pk[:n]
        low, high = int(keys[0]), int(keys[-1])
        if n < _DENSE_KEYS_FROM or high - low >= 4 * n:
            at = np.minimum(np.searchsorted(keys, pks), n - 1)
            return at, keys[at] == pks
        table = self._key_table(keys, low, high)
        inside = (pks >= low) & (pks <= high)
        rows = np.full(pks.shape[0], -1, dtype=np.intp)
        rows[inside] = table[pks[inside] - low]
        held = rows >= 0
        rows[~held] = 0
        return rows, held

    def _key_table(self, keys: npt.NDArray[np.int64], low: int, high: int) -> npt.NDArray[np.int32]:
        """The row of each key from ``low`` to ``high`` (-1: none): built once, extended by
        appends (their keys come after every held one), built again after a removal."""
        held = self._pk_table
        n = keys.shape[0]
        if held is not None and held[0] == low and held[1] == n:
            return held[2]
        table = np.full(high - low + 1, -1, dtype=np.int32)
        start = 0
        if held is not None and held[0] == low and held[1] < n:
            start = held[1]
            table[: held[2].shape[0]] = held[2]
        table[keys[start:] - low] = np.arange(start, n, dtype=np.int32)
        self._pk_table = (low, n, table)
        return table

    def language_codes(self) -> npt.NDArray[np.int8]:
        """Each text's language as its position in ``analysis.scripts.LANGUAGES``."""
        return self.language[: self.n]

    def speakers(self) -> tuple[npt.NDArray[np.int32], list[str]]:
        """Each row's speaker as a code into the returned names (-1: the text names none), from
        the ``"Name: words"`` convention of transcripts (:func:`chronomem.text.speaker`)."""
        return self.speaker[: self.n], list(self.speaker_names)

    def speaker_finder(self) -> NameFinder:
        """The speakers' names, sorted and found in a question's text (made again once a name
        is added)."""
        found = self._names
        if found is None or not found.current(self.speaker_names):
            found = self._names = NameFinder(self.speaker_names)
        return found

    def sessions(self) -> tuple[npt.NDArray[np.int32], list[str]]:
        """Each row's session as a code into the returned names (-1: none)."""
        return self.session[: self.n], list(self.session_names)
