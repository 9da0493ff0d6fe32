"""Recall latency vs the raw numpy floor, one agent, 384-d (issues: engine core, PostgreSQL).

For N = 1k, 10k, 100k (and 1M with --million) records of one agent in a real SQLite file, this
measures the p50 time of a full ``generative-agents`` read (elapsed recency, min-max normalised
relevance/recency/importance, top-30, records fetched from the store, read-only) and, in the same
run on the same vectors, the floor: ``matrix @ q`` plus ``argpartition`` for the top 30. It prints
the ratio and writes ``bench/results/recall_scaling.{json,md}``.

With ``--store postgresql://user@host/db`` the same records and queries also run on PostgreSQL (in
a scratch database created next to ``db`` and dropped afterwards; the role needs CREATEDB), and
the PostgreSQL latencies are reported next to SQLite's in
``bench/results/recall_scaling_postgres.{json,md}``.

    python bench/recall_scaling.py [--million] [--queries 200] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory, SimClock
from chronomem.stores.postgres import redact, scratch_database

DIM = 384
K = 30


def build(location: str | Path, vectors: np.ndarray, importance: np.ndarray) -> Memory:
    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    mem = Memory.open(
        location, embedder=None, clock=clock, preset="generative-agents", synchronous="NORMAL"
    )
    n, batch = len(vectors), 5_000
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        clock.advance(hours=1)
        mem.remember_many(
            (
                {"text": f"memory {i}", "importance": int(importance[i]), "embedding": vectors[i]}
                for i in range(start, stop)
            ),
            agent="agent",
        )
    clock.advance(hours=1)
    return mem


def settle(url: str) -> None:
    """After the bulk load, what an operator (or autovacuum, minutes later) would run: planner
    statistics and the visibility map, so autovacuum does not compete with the timing."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


@contextmanager
def sqlite_location() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="chronomem-bench-") as tmp:
        yield Path(tmp) / "bench.db"


def p50_ms(samples: list[int]) -> float:
    return statistics.median(samples) / 1e6


def measure(
    location: str | Path, vectors: np.ndarray, importance: np.ndarray, qs: np.ndarray
) -> dict[str, float]:
    """Build the store at ``location`` and time reads on it; the floor runs on the same data."""
    n = len(vectors)
    t0 = time.perf_counter()
    mem = build(location, vectors, importance)
    build_s = time.perf_counter() - t0
    if str(location).startswith("postgresql://"):
        settle(str(location))
    t0 = time.perf_counter()
    mem.peek("warm-up", agent="agent", k=K, query_embedding=qs[0])  # loads the arrays
    load_s = time.perf_counter() - t0
    ours, floor, touching = [], [], []
    for q in qs:
        t = time.perf_counter_ns()
        hits = mem.peek("q", agent="agent", k=K, query_embedding=q)
        ours.append(time.perf_counter_ns() - t)
        t = time.perf_counter_ns()
        scores = vectors @ q
        top = np.argpartition(-scores, K)[:K]
        floor.append(time.perf_counter_ns() - t)
        assert len(hits) == K
        assert top.size == K
    mem.clock.advance(hours=1)  # type: ignore[attr-defined]
    for q in qs[: max(10, len(qs) // 4)]:
        t = time.perf_counter_ns()
        mem.recall("q", agent="agent", k=K, query_embedding=q)
        touching.append(time.perf_counter_ns() - t)
    mem.close()
    return {
        "n": n,
        "recall_p50_ms": p50_ms(ours),
        "floor_p50_ms": p50_ms(floor),
        "ratio": p50_ms(ours) / p50_ms(floor),
        "touching_recall_p50_ms": p50_ms(touching),
        "build_s": build_s,
        "first_load_s": load_s,
    }


def data(n: int, queries: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    importance = rng.integers(1, 11, size=n)
    qs = rng.normal(size=(queries, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    return vectors, importance, qs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="also run N = 1,000,000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="*", help="override the sizes")
    parser.add_argument(
        "--store", help="also run on PostgreSQL: postgresql://user@host/db (needs CREATEDB)"
    )
    args = parser.parse_args()
    sizes = args.sizes or [1_000, 10_000, 100_000] + ([1_000_000] if args.million else [])
    rng = np.random.default_rng(20240101)
    rows, pg_rows = [], []
    print(
        f"{'store':>10}  {'N':>9}  {'recall p50 ms':>13}  {'floor p50 ms':>12}  {'ratio':>6}  "
        f"{'touching p50 ms':>15}  {'build s':>8}  {'load s':>7}"
    )

    def show(store: str, row: dict[str, float]) -> None:
        print(
            f"{store:>10}  {row['n']:>9,}  {row['recall_p50_ms']:>13.3f}  "
            f"{row['floor_p50_ms']:>12.3f}  {row['ratio']:>6.2f}  "
            f"{row['touching_recall_p50_ms']:>15.3f}  {row['build_s']:>8.1f}  "
            f"{row['first_load_s']:>7.2f}",
            flush=True,
        )

    for n in sizes:
        vectors, importance, qs = data(n, args.queries, rng)
        with sqlite_location() as path:
            rows.append(measure(path, vectors, importance, qs))
        show("sqlite", rows[-1])
        if args.store:
            with scratch_database(args.store, prefix="chronomem_bench") as url:
                pg_rows.append(measure(url, vectors, importance, qs))
            show("postgresql", pg_rows[-1])

    info = machine()
    million = " --million" if args.million else ""
    command = f"python bench/recall_scaling.py{million}"
    write_results(
        "recall_scaling",
        {"command": command, "machine": info, "k": K, "dim": DIM, "rows": rows},
        [
            "# Recall scaling (one agent, 384-d, generative-agents preset, top-30, read-only)",
            "",
            f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
            f"{info['cpu_count']} cores, Python {info['python']}, numpy {info['numpy']}.",
            "",
            "| N | recall p50 ms | floor p50 ms (`matrix @ q` + argpartition) | ratio "
            "| touching recall p50 ms |",
            "|---:|---:|---:|---:|---:|",
            *(
                f"| {r['n']:,} | {r['recall_p50_ms']:.3f} | {r['floor_p50_ms']:.3f} | "
                f"{r['ratio']:.2f} | {r['touching_recall_p50_ms']:.3f} |"
                for r in rows
            ),
        ],
    )
    if args.store:
        command = f"python bench/recall_scaling.py{million} --store {redact(args.store)}"
        write_results(
            "recall_scaling_postgres",
            {
                "command": command,
                "machine": info,
                "k": K,
                "dim": DIM,
                "sqlite": rows,
                "postgresql": pg_rows,
            },
            [
                "# Recall latency on PostgreSQL next to SQLite (same records, same queries)",
                "",
                f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
                f"{info['cpu_count']} cores, Python {info['python']}; the server ran on the same "
                "machine (127.0.0.1).",
                "",
                "| N | SQLite recall p50 ms | PostgreSQL recall p50 ms | PostgreSQL / SQLite "
                "| SQLite touching p50 ms | PostgreSQL touching p50 ms | SQLite build s "
                "| PostgreSQL build s |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|",
                *(
                    f"| {s['n']:,} | {s['recall_p50_ms']:.3f} | {p['recall_p50_ms']:.3f} | "
                    f"{p['recall_p50_ms'] / s['recall_p50_ms']:.2f} | "
                    f"{s['touching_recall_p50_ms']:.3f} | {p['touching_recall_p50_ms']:.3f} | "
                    f"{s['build_s']:.1f} | {p['build_s']:.1f} |"
                    for s, p in zip(rows, pg_rows, strict=True)
                ),
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
