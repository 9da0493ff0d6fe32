"""The first read after a write-only bulk load (issue 30): 200,000 records over 400 agents written
through ``Memory.remember_many`` by a handle that never reads (a simulation's write phase, an
import), closed, then the store reopened by another handle whose first read spans every agent.

Measures, in one run: the load, the close (which now writes the index snapshot: every agent
loaded once, then saved), and the time from ``Memory.open`` to the first read's hits (``peek``,
default preset, top-10, every agent) — warm (the snapshot the close wrote) and cold (the same file
with ``index_snapshot=None``: the arrays rebuilt from the store, what every first read paid before
a write-only handle wrote a snapshot). Both reads return the same hits. Writes
``bench/results/write_only.{json,md}``. Target: first read ≤ 0.1 s.

    python bench/write_only.py [--records 200000] [--agents 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory, SimClock

DIM, K = 384, 10
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def first_read(path: Path, q: np.ndarray, *, warm: bool) -> tuple[float, list[str], str]:
    gc.collect()
    started = time.perf_counter()
    off = {} if warm else {"index_snapshot": None}
    mem = Memory.open(path, embedder=None, clock=SimClock(T0), create=False, **off)
    hits = mem.peek("q", k=K, query_embedding=q)  # every agent of the space
    elapsed = time.perf_counter() - started
    source = str(mem._h.index.loaded_from)
    mem._h.index._snapshot_records = None  # reads only: leave the file as the load left it
    mem.close()
    return elapsed, [h.record.id for h in hits], source


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--agents", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(30)
    per_agent = args.records // args.agents
    with tempfile.TemporaryDirectory(prefix="chronomem-write-only-") as tmp:
        path = Path(tmp) / "load.db"
        mem = Memory.open(path, embedder=None, clock=SimClock(T0), synchronous="NORMAL")
        started = time.perf_counter()
        for a in range(args.agents):
            vectors = rng.normal(size=(per_agent, DIM)).astype(np.float32)
            mem.remember_many(
                [{"text": f"citizen {a} memory {i}", "embedding": vectors[i],
                  "importance": 1 + i % 10} for i in range(per_agent)],
                agent=f"citizen{a:03d}",
            )  # fmt: skip
        load_s = time.perf_counter() - started
        assert not mem._h.index._agents, "the load must not read"
        started = time.perf_counter()
        mem.close()
        close_s = time.perf_counter() - started
        snapshot_files = list(Path(f"{path}-index").iterdir())
        assert len(snapshot_files) == 1, "the write-only close wrote no snapshot"
        q = rng.normal(size=DIM).astype(np.float32)
        warm, cold = [], []
        for _ in range(args.repeats):
            t_cold, hits_cold, source_cold = first_read(path, q, warm=False)
            t_warm, hits_warm, source_warm = first_read(path, q, warm=True)
            assert (source_cold, source_warm) == ("store", "snapshot")
            assert hits_cold == hits_warm
            cold.append(t_cold)
            warm.append(t_warm)
    row = {
        "records": per_agent * args.agents,
        "agents": args.agents,
        "load_s": load_s,
        "close_s": close_s,
        "first_read_warm_s": statistics.median(warm),
        "first_read_cold_s": statistics.median(cold),
        "cold_over_warm": statistics.median(cold) / statistics.median(warm),
    }
    for key, value in row.items():
        print(f"{key:22s} {value:,.3f}" if isinstance(value, float) else f"{key:22s} {value:,}")
    info = machine()
    command = (
        f"python bench/write_only.py --records {args.records} --agents {args.agents} "
        f"--repeats {args.repeats}"
    )
    write_results(
        "write_only",
        {"command": command, "machine": info, "result": row},
        f"# First read after a write-only load ({row['records']:,} records, {args.agents} agents,"
        f" 384-d)\n\nCommand: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores (shared), Python {info['python']}, numpy {info['numpy']}. "
        f"Median of {args.repeats} alternating reopenings of the same file (in the page cache); "
        "both return the same hits.\n\n"
        "| measure | s |\n|---|---:|\n"
        f"| load (remember_many per agent, precomputed vectors) | {row['load_s']:.1f} |\n"
        f"| close of the loading handle (loads every agent, writes the snapshot) | "
        f"{row['close_s']:.2f} |\n"
        f"| open + first read of every agent, warm (the snapshot) | "
        f"{row['first_read_warm_s']:.3f} |\n"
        f"| open + first read of every agent, cold (rebuilt from the store) | "
        f"{row['first_read_cold_s']:.2f} |\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
