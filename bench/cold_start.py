"""Reopen + first recall: the index snapshot against a rebuild from the store (issue 18).

For N records of one agent (384-d fixed random vectors, no model) in a real SQLite file, built
with the store's bulk insert, this measures in one run, alternating, the time from
``Memory.open`` to the first read's hits (``peek``, generative-agents preset, top-30):

- ``rebuild``: ``index_snapshot=None, compact_vectors=None``, the arrays built from the store's
  rows and scanned in float32 (the path before issue 18);
- ``snapshot``: the defaults, the arrays (and the int8 codes) mapped from the snapshot the
  previous close wrote.

Both read files the OS has in its page cache (the runs alternate over the same files). It also
reports the first close's cost (writing the snapshot) and the file sizes, checks that both
paths return the same hits, and writes ``bench/results/cold_start.{json,md}``.

    python bench/cold_start.py [--sizes 200000 1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory
from chronomem.model.ids import IdFactory
from chronomem.model.record import Kind, Record
from chronomem.stores.base import EmbeddingMeta, StoredRecord
from chronomem.stores.sqlite import SQLiteStore

DIM = 384
K = 30
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def build(path: Path, n: int, rng: np.random.Generator, kind: Kind = Kind.OBSERVATION) -> float:
    """``n`` records of one agent through ``insert_records`` in batches of 10,000 (the write
    gate does not run)."""
    started = time.perf_counter()
    store = SQLiteStore(path, synchronous="NORMAL")
    store.set_embedding_meta(EmbeddingMeta(model=None, dim=DIM))
    ids = IdFactory()
    for start in range(0, n, 10_000):
        count = min(10_000, n - start)
        vectors = rng.normal(size=(count, DIM)).astype(np.float32)
        importance = rng.integers(1, 11, size=count)
        items = []
        for j in range(count):
            i = start + j
            at = T0 + timedelta(seconds=30 * i)
            record = Record(
                id=ids.new_id(at), space="default", agent="agent", kind=kind,
                text=f"memory {i} of the bench", importance=float(importance[j]),
                occurred_at=at, recorded_at=at, last_accessed_at=at,
            )  # fmt: skip
            items.append(StoredRecord(record=record, embedding=vectors[j]))
        store.insert_records("default", items)
    store.close()
    return time.perf_counter() - started


def first_read(path: Path, q: np.ndarray, new: bool) -> tuple[float, list[str], str]:
    """Seconds from open to the first read's hits; the hits; where the arrays came from."""
    gc.collect()
    started = time.perf_counter()
    off = {} if new else {"index_snapshot": None, "compact_vectors": None}
    mem = Memory.open(path, embedder=None, preset="generative-agents", create=False, **off)
    hits = mem.peek("q", agent="agent", k=K, query_embedding=q)
    elapsed = time.perf_counter() - started
    source = str(mem._h.index.loaded_from)
    mem.close()
    return elapsed, [h.record.id for h in hits], source


def measure(n: int, repeats: int, rng: np.random.Generator) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="chronomem-cold-") as tmp:
        path = Path(tmp) / "bench.db"
        build_s = build(path, n, rng)
        q = rng.normal(size=DIM).astype(np.float32)
        # the first use: built from the rows, then the close writes the snapshot
        mem = Memory.open(path, embedder=None, preset="generative-agents", create=False)
        mem.peek("q", agent="agent", k=K, query_embedding=q)
        started = time.perf_counter()
        mem.close()
        save_s = time.perf_counter() - started
        (snapshot_file,) = Path(f"{path}-index").iterdir()
        rebuild, loaded = [], []
        for _ in range(repeats):
            t_old, hits_old, source_old = first_read(path, q, new=False)
            t_new, hits_new, source_new = first_read(path, q, new=True)
            assert (source_old, source_new) == ("store", "snapshot"), (source_old, source_new)
            assert hits_old == hits_new
            rebuild.append(t_old)
            loaded.append(t_new)
        return {
            "n": n,
            "rebuild_s": statistics.median(rebuild),
            "snapshot_s": statistics.median(loaded),
            "speedup": statistics.median(rebuild) / statistics.median(loaded),
            "save_s": save_s,
            "build_s": build_s,
            "store_mb": path.stat().st_size / 1e6,
            "snapshot_mb": snapshot_file.stat().st_size / 1e6,
            "rebuild_runs_s": rebuild,
            "snapshot_runs_s": loaded,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[200_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(20240101)
    rows = []
    print(
        f"{'N':>9}  {'rebuild s':>9}  {'snapshot s':>10}  {'speedup':>7}  {'save s':>6}  "
        f"{'store MB':>8}  {'snapshot MB':>11}"
    )
    for n in args.sizes:
        row = measure(n, args.repeats, rng)
        rows.append(row)
        print(
            f"{n:>9,}  {row['rebuild_s']:>9.2f}  {row['snapshot_s']:>10.3f}  "
            f"{row['speedup']:>7.1f}  {row['save_s']:>6.2f}  {row['store_mb']:>8.0f}  "
            f"{row['snapshot_mb']:>11.0f}",
            flush=True,
        )
    info = machine()
    sizes = " ".join(str(n) for n in args.sizes)
    command = f"python bench/cold_start.py --sizes {sizes} --repeats {args.repeats}"
    write_results(
        "cold_start",
        {"command": command, "machine": info, "k": K, "dim": DIM, "rows": rows},
        [
            "# Reopen + first recall (one agent, 384-d, generative-agents preset, top-30)",
            "",
            f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
            f"{info['cpu_count']} cores (shared), Python {info['python']}, numpy "
            f"{info['numpy']}. Median of {args.repeats} alternating runs over the same files "
            "(in the OS page cache). `rebuild`: `index_snapshot=None, compact_vectors=None`, "
            "arrays built from the rows, float32 scan (the path before); `snapshot`: the "
            "defaults, arrays and int8 codes mapped from the snapshot file. Both return the same "
            "hits. `save`: the first close, which wrote the snapshot.",
            "",
            "| N | rebuild s | snapshot s | speedup | save s | store MB | snapshot MB |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            *(
                f"| {r['n']:,} | {r['rebuild_s']:.2f} | {r['snapshot_s']:.3f} | "
                f"{r['speedup']:.1f} | {r['save_s']:.2f} | {r['store_mb']:.0f} | "
                f"{r['snapshot_mb']:.0f} |"
                for r in rows
            ),
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
