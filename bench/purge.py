"""What a purge costs: forget(purge=True) against a plain forget, by store size.

On SQLite a purge deletes the row, its vector and postings in one transaction, then rewrites the
whole file (VACUUM) and truncates the write-ahead log, so no byte of the record survives in the
unused space of live pages (docs/reliability.md). The rewrite grows with the file; this measures
by how much. On PostgreSQL (``--store postgresql://...``) a purge only deletes (nothing that locks
the tables runs); ``chronomem scrub`` (VACUUM FULL of chronomem's tables) is timed separately.

Records are LoCoMo dialogue turns (cycled and numbered) with random 384-d float32 vectors (the
size of all-MiniLM-L6-v2's), in one space and agent. For each size: the file size, the p50 of
``--repeats`` plain forgets and of as many purges (each of a different record), and, with a
server, one scrub.

    python bench/purge.py [--sizes 1000 10000 100000] [--repeats 5] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
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
from chronomem.stores.postgres import redact, scratch_database

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"
DIM = 384


def turns() -> list[str]:
    data = json.loads(DATA.read_text())
    out = []
    for conversation in data:
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                out += [f"{t['speaker']}: {t['text']}" for t in session]
    return out


def fill(location: str | Path, n: int, source: list[str]) -> tuple[Memory, list[str]]:
    mem = Memory.open(
        location, embedder=None, clock=SimClock(datetime(2024, 1, 1, tzinfo=UTC)), passages=False
    )
    rng = np.random.default_rng(n)
    ids: list[str] = []
    for start in range(0, n, 1000):
        count = min(1000, n - start)
        vectors = rng.normal(size=(count, DIM)).astype(np.float32)
        items = [
            {"text": f"{source[(start + i) % len(source)]} #{start + i}", "embedding": vectors[i]}
            for i in range(count)
        ]
        ids += [r.id or "" for r in mem.remember_many(items, agent="ada")]
    return mem, ids


def timed(step: object) -> float:
    start = time.perf_counter()
    step()  # type: ignore[operator]
    return (time.perf_counter() - start) * 1000


def measure(mem: Memory, ids: list[str], repeats: int, server: bool) -> dict[str, float | None]:
    picks = np.random.default_rng(7).choice(len(ids), size=2 * repeats, replace=False)
    forgets = [timed(lambda i=i: mem.forget(ids[i], "bench")) for i in picks[:repeats]]
    purges = [timed(lambda i=i: mem.forget(ids[i], "bench", purge=True)) for i in picks[repeats:]]
    return {
        "bytes": float(mem.stats()["bytes_on_disk"]),
        "forget_p50_ms": statistics.median(forgets),
        "purge_p50_ms": statistics.median(purges),
        "scrub_ms": timed(mem.scrub) if server else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--store", help="a PostgreSQL server URL (its role may create databases)")
    args = parser.parse_args()
    source = turns()
    rows = []
    for n in args.sizes:
        if args.store:
            with scratch_database(args.store, prefix="chronomem_bench") as url:
                mem, ids = fill(url, n, source)
                with mem:
                    rows.append({"n": n, **measure(mem, ids, args.repeats, server=True)})
        else:
            with tempfile.TemporaryDirectory() as tmp:
                mem, ids = fill(Path(tmp) / "purge.db", n, source)
                with mem:
                    rows.append({"n": n, **measure(mem, ids, args.repeats, server=False)})
        print(rows[-1], flush=True)
    store = "postgresql" if args.store else "sqlite"
    command = "python bench/purge.py" + (f" --store {redact(args.store)}" if args.store else "")
    if args.sizes != [1000, 10_000, 100_000] or args.repeats != 5:
        command += f" --sizes {' '.join(map(str, args.sizes))} --repeats {args.repeats}"
    info = machine()
    lines = [
        f"# Purge cost ({store})",
        "",
        f"`{command}` — {info['date']}, revision {info['revision']}, "
        f"{info['cpu_count']} cores, Python {info['python']}.",
        "",
        "One agent, LoCoMo turns with random 384-d vectors; p50 of "
        f"{args.repeats} operations per size.",
        "",
        "| records | size on disk MB | forget p50 ms | purge p50 ms | purge / forget |"
        + (" scrub ms |" if args.store else ""),
        "|---:|---:|---:|---:|---:|" + ("---:|" if args.store else ""),
    ]
    for r in rows:
        ratio = r["purge_p50_ms"] / r["forget_p50_ms"]
        scrub = f" {r['scrub_ms']:.0f} |" if args.store else ""
        lines.append(
            f"| {r['n']:,} | {r['bytes'] / 1e6:.1f} | {r['forget_p50_ms']:.1f} | "
            f"{r['purge_p50_ms']:.1f} | {ratio:.1f} |{scrub}"
        )
    write_results(f"purge_{store}", {"machine": info, "command": command, "rows": rows}, lines)


if __name__ == "__main__":
    main()
