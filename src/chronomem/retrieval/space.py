""":class:`SpaceIndex`: the loaded agents' in-memory arrays of one space, kept in sync with the
store, and saved between runs (DESIGN §6; docs/storage.md, "Index snapshot").

Every committed change bumps the space's ``change_seq``. Before a read, the index compares its
last seen sequence with the store's and fetches exactly the rows changed since (by this process
or any other process writing the same store), inside the read's snapshot.

On its first read the index loads the space's snapshot file when the store keeps one
(``MemoryStore.index_path``) and it is valid — of this space, model, dimension and chronomem
version, at a sequence the store has reached, its sampled records present in the store — and
then applies only the changes after the snapshot's sequence. A snapshot that is missing, damaged
or stale is deleted and the arrays are built from the store, as without one. :meth:`save`
(called when a :class:`~chronomem.Memory` closes) writes the snapshot again when the space is
large enough and it changed since.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from chronomem.clock import to_micros
from chronomem.errors import EmbedderMismatchError
from chronomem.retrieval import compact, snapshot
from chronomem.retrieval.compact import DEFAULT_COMPACT_RECORDS
from chronomem.retrieval.index import AgentArrays
from chronomem.retrieval.span import Span
from chronomem.stores.base import MemoryStore, RecordColumns, Touch

__all__ = ["DEFAULT_SNAPSHOT_RECORDS", "PRELOAD_ROOM", "SpaceIndex", "warm"]

_log = logging.getLogger("chronomem")

#: Below this many loaded records a rebuild from the store is quick (~0.2 s) and no snapshot is
#: written (one found is still used).
DEFAULT_SNAPSHOT_RECORDS = 10_000
#: :meth:`SpaceIndex.preload` readies agents of at least this many records for writes.
PRELOAD_ROOM = 10_000
_SAMPLES = 16  # records of a snapshot looked up in the store before it is trusted


@cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chronomem")
    except PackageNotFoundError:
        return "unknown"


class SpaceIndex:
    """The loaded agents of one space, synchronised with the store on every read.

    Args:
        store: the store.
        space: the space.
        dim: the vector dimension (``None`` until the first vector).
        snapshot_records: write a snapshot on :meth:`save` once the loaded agents hold this many
            records; ``None`` never reads nor writes one.
        compact_records: one-agent reads of at least this many records scan an int8 copy of the
            vectors and rescore the best exactly; ``None``: never.
    """

    def __init__(
        self,
        store: MemoryStore,
        space: str,
        dim: int | None,
        *,
        snapshot_records: int | None = DEFAULT_SNAPSHOT_RECORDS,
        compact_records: int | None = DEFAULT_COMPACT_RECORDS,
    ) -> None:
        self._store = store
        self._space = space
        self._dim = dim
        self._agents: dict[str, AgentArrays] = {}
        self._seen_seq = 0
        self._aborted = store.aborted_writes
        self._snapshot_records = snapshot_records
        #: One-agent reads of at least this many records scan an int8 copy of the vectors
        #: (``chronomem.retrieval.compact``); ``None``: never.
        self.compact_records = compact_records
        self._snapshot_tried = False
        self._snapshot_seq: int | None = None  # the sequence of the snapshot on disk, if known
        self._changed = 0  # rows fetched or removed since that snapshot (or since empty)
        self._mapped = False  # some arrays are views of a snapshot file's mapping
        #: Where the loaded agents came from on the first read: "snapshot" or "store".
        self.loaded_from: str | None = None

    def scans_int8(self, arrays: AgentArrays) -> bool:
        """Whether a scan of ``arrays``' vectors alone goes over their int8 copy: an agent of at
        least :attr:`compact_records` records with vectors, and ``simsimd`` installed (a read
        adds conditions of its own: ``recall._compact_exact``)."""
        return (
            self.compact_records is not None
            and arrays.n >= self.compact_records
            and arrays.emb is not None
            and compact.available()
        )

    def renewed(self, dim: int | None) -> SpaceIndex:
        """An empty index of the same space and settings for vectors of ``dim`` (after the store
        switched models: nothing held so far is of the new model)."""
        return SpaceIndex(
            self._store, self._space, dim,
            snapshot_records=self._snapshot_records, compact_records=self.compact_records,
        )  # fmt: skip

    def set_dim(self, dim: int) -> None:
        self._dim = dim
        for arrays in self._agents.values():
            arrays.set_dim(dim)

    def arrays(self, agents: Sequence[str], *, raw: bool = False) -> list[AgentArrays]:
        """The synchronised arrays of ``agents`` (call inside the read's store snapshot); with
        ``raw``, holding the vectors as stored too (:meth:`AgentArrays.hold_raw`: loaded from
        the store on the first such read)."""
        if self._store.aborted_writes != self._aborted:
            # A write transaction rolled back since the last sync, which may have run inside it
            # and loaded rows that were never committed: start again from the store.
            self._aborted = self._store.aborted_writes
            self._agents.clear()
            self._snapshot_seq, self._mapped = None, False
        seq = self._store.change_seq(self._space)
        if not self._agents and not self._snapshot_tried:
            self._snapshot_tried = True
            self._load_snapshot(seq)
        if seq != self._seen_seq and self._agents:
            touched = self._store.own_touches(self._space, self._seen_seq, seq)
            if touched is None:
                self._apply_changes()
            else:
                self._stamp(touched)
        missing = [a for a in dict.fromkeys(agents) if a not in self._agents]
        if missing:
            self.loaded_from = self.loaded_from or "store"
            cols = self._store.load_columns(self._space, missing)
            for agent in missing:
                self._agents[agent] = AgentArrays(agent, self._dim)
            self._distribute(cols)
            if len(missing) > 1:  # a read of them in order then takes their columns whole
                Span.lay_out([self._agents[a] for a in sorted(missing)])
        self._seen_seq = seq
        out = [self._agents[a] for a in agents]
        unheld = [a for a in out if raw and a.raw is None and a.emb is not None]
        if unheld:
            cols = self._store.load_columns(self._space, [a.agent for a in unheld])
            for arrays in unheld:
                arrays.hold_raw(cols)
        return out

    def preload(self, room_from: int = PRELOAD_ROOM) -> None:
        """Load every agent of the space now (from the snapshot, else the store) and ready the
        large ones for what a first read and a first write would do to them: the int8 copies of
        an agent that reads scan in int8 (its vectors' and its passages'), the position of each
        id, and room for new rows (a snapshot's arrays have none: the first append copies every
        column, 0.3 s at 100k records). Agents under ``room_from`` rows keep their place in the
        space-wide layout (making room copies an agent out of it); their first append costs
        little."""
        with self._store.snapshot():
            held = self.arrays(sorted(self._store.agents(self._space)))
        for arrays in held:
            if arrays.n < room_from:
                continue
            if self.scans_int8(arrays):
                arrays.compact()
                if arrays.pemb is not None and arrays.pn:
                    arrays.passage_compact()
            arrays.make_room()

    def _apply_changes(self) -> None:
        loaded = list(self._agents)
        cols = self._store.load_columns(self._space, loaded, after_seq=self._seen_seq)
        removed: dict[str, list[str]] = {}
        for record_id, agent in self._store.removed_since(self._space, self._seen_seq):
            removed.setdefault(agent, []).append(record_id)
        if removed and self._mapped:
            # A purge may be among the removals: copy the arrays off the snapshot's mapping,
            # which keeps the file's bytes alive (even once deleted) as long as it exists.
            for arrays in self._agents.values():
                snapshot.own(arrays)
            self._mapped = False
        for agent, ids in removed.items():
            if agent in self._agents:
                self._agents[agent].remove(ids)
                self._changed += len(ids)
        # (after the removals: an agent that lost as many rows as it gained keeps its capacity,
        # and its place in a span)
        self._distribute(cols)

    def _stamp(self, touched: Sequence[tuple[Touch, ...]]) -> None:
        """Catch up with touches this store object committed itself, and nothing else since the
        last sync (``MemoryStore.own_touches``), by stamping their ``last_accessed_at`` here as
        the store did: a touch changes no other column. Reading the touched rows back (every
        column, their vectors and passages) took ~1 ms of the next read."""
        for touches in touched:
            for t in touches:
                left = set(t.ids)
                for arrays in self._agents.values():
                    left -= arrays.stamp_access(left, t.at_us, backwards=t.backwards)
                    if not left:
                        break
                self._changed += len(t.ids) - len(left)

    def _distribute(self, cols: RecordColumns) -> None:
        if len(cols) == 0:
            return
        self._changed += len(cols)
        if cols.embeddings is not None and self._dim is None:
            self.set_dim(cols.embeddings.shape[1])
        elif cols.embeddings is not None and cols.embeddings.shape[1] != self._dim:
            raise EmbedderMismatchError(
                f"{self._store.location}'s vectors are {cols.embeddings.shape[1]}-wide now, not "
                f"{self._dim}: another process switched its model (reembed); reopen it",
                expected_model=None, expected_dim=cols.embeddings.shape[1],
                got_model=None, got_dim=self._dim,
            )  # fmt: skip
        by_agent: dict[str, list[int]] = {}
        for row, agent in enumerate(cols.agents):
            by_agent.setdefault(agent, []).append(row)
        for agent, row_list in by_agent.items():
            arrays = self._agents.get(agent)
            if arrays is None:
                continue
            rows = np.asarray(row_list, dtype=np.intp)
            known = np.fromiter(
                (cols.ids[i] in arrays.position for i in row_list), dtype=np.bool_, count=rows.size
            )
            arrays.update(cols, rows[known])
            arrays.append(cols, rows[~known])

    # -- the snapshot file ----------------------------------------------------------------------
    def snapshot_path(self) -> Path | None:
        """Where this space's snapshot lives (``None``: the store keeps none, or disabled)."""
        if self._snapshot_records is None:
            return None
        locate = getattr(self._store, "index_path", None)
        return None if locate is None else locate(self._space)

    def _load_snapshot(self, seq: int) -> None:
        path = self.snapshot_path()
        if path is None or not path.exists() or not os.access(path, os.R_OK):
            return  # (written 0600: another user's is left alone)
        meta = self._store.embedding_meta()
        found = snapshot.load(
            path, space=self._space, model=meta.model, dim=meta.dim, version=_version()
        )
        if found is None or found.seq > seq or not self._is_of_this_store(found):
            path.unlink(missing_ok=True)  # damaged or stale: the arrays come from the store
            return
        for arrays in found.agents:
            if self._dim is not None and arrays.dim is None:
                arrays.set_dim(self._dim)
            self._agents[arrays.agent] = arrays
        self._seen_seq = self._snapshot_seq = found.seq
        self._changed = 0
        self._mapped = True
        self.loaded_from = "snapshot"

    def _is_of_this_store(self, found: snapshot.Snapshot) -> bool:
        """A few of the snapshot's records (each agent's first and last) exist in the store with
        the same agent and ``recorded_at``, or were deleted after the snapshot: so a file
        left next to another store (a file copied or restored over this one) is not trusted."""
        rows: dict[str, tuple[str, int]] = {}
        for a in found.agents:
            for row in {0, a.n - 1} if a.n else set():
                rows[str(a.ids[row])] = (a.agent, int(a.recorded_at[row]))
            if len(rows) >= _SAMPLES:
                break
        if not rows:
            return True
        records = {r.id: r for r in self._store.get_records(self._space, list(rows))}
        gone = {rid for rid, _ in self._store.removed_since(self._space, found.seq)}
        for rid, (agent, recorded) in rows.items():
            r = records.get(rid)
            if r is None and rid not in gone:
                return False
            if r is not None and (r.agent != agent or to_micros(r.recorded_at) != recorded):
                return False
        return True

    def save(self) -> bool:
        """Write the snapshot of the loaded agents when they hold at least ``snapshot_records``
        records and the snapshot on disk is missing or behind by more than 2% of the rows
        (after syncing with the store) — of every agent of the space when this handle loaded
        none but inserted records (at least ``snapshot_records`` of them, and 100). Returns
        whether a snapshot was written. A purge committed meanwhile deletes it again (the
        store's scrub deletes every snapshot too)."""
        path = self.snapshot_path()
        if path is None or self._snapshot_records is None:
            return False
        if not self._agents and self._store.inserted.get(self._space, 0) < max(
            100, self._snapshot_records
        ):
            # Read nothing and wrote less than a snapshot's worth: the next reader's sync (or
            # rebuild of a small space) is cheap, and this close needs no load of every agent.
            return False
        with self._store.snapshot():
            # A handle that only wrote (a bulk load, an import, a simulation's write phase)
            # loads every agent once, here, so the next process opens warm.
            # (in the order of a read of every agent: the reopened span serves it)
            held = self.arrays(sorted(self._agents) or self._store.agents(self._space))
            seq = self._seen_seq
            meta = self._store.embedding_meta()
        total = sum(a.n for a in held)
        if total < self._snapshot_records:
            return False
        current = self._snapshot_seq is not None and path.exists()
        if current and self._changed <= max(100, total // 50):
            return False
        written = snapshot.save(
            path, held, space=self._space, seq=seq, model=meta.model, dim=meta.dim,
            version=_version(),
        )  # fmt: skip
        if not written:
            return False
        if self._store.removed_since(self._space, seq):
            # Deleted (perhaps purged) after the sync: the file may hold their bytes.
            path.unlink(missing_ok=True)
            return False
        self._snapshot_seq, self._changed = seq, 0
        return True


def warm(store: MemoryStore, space: str) -> bool:
    """Write ``space``'s index snapshot after a bulk load through ``store`` (a migration: no
    handle held its arrays), so the next process opens it warm. A cache: an ``OSError`` is
    logged, not raised. Returns whether a snapshot was written."""
    try:
        return SpaceIndex(store, space, store.embedding_meta().dim).save()
    except OSError as exc:
        _log.warning("could not save the index snapshot of %s: %s", space, exc)
        return False
