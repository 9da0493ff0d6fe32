"""Recall latency vs the raw numpy floor, one agent, 384-d (issue: engine core).

For N = 1k, 10k, 100k (and 1M with --million) records of one agent in a real SQLite file, this
measures the p50 time of a full ``generative-agents`` read (elapsed recency, min-max normalised
relevance/recency/importance, top-30, records fetched from the store, read-only) and, in the same
run on the same vectors, the floor: ``matrix @ q`` plus ``argpartition`` for the top 30. It prints
the ratio and writes ``bench/results/recall_scaling.{json,md}``.

    python bench/recall_scaling.py [--million] [--queries 200]
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
from _machine import machine
from chronomem import Memory, SimClock

DIM = 384
K = 30
RESULTS = Path(__file__).resolve().parent / "results"


def build(path: Path, n: int, rng: np.random.Generator) -> tuple[Memory, np.ndarray]:
    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    mem = Memory.open(
        path, embedder=None, clock=clock, preset="generative-agents", synchronous="NORMAL"
    )
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    importance = rng.integers(1, 11, size=n)
    batch = 5_000
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
    return mem, vectors


def p50_ms(samples: list[int]) -> float:
    return statistics.median(samples) / 1e6


def measure(n: int, queries: int, rng: np.random.Generator) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="chronomem-bench-") as tmp:
        t0 = time.perf_counter()
        mem, matrix = build(Path(tmp) / "bench.db", n, rng)
        build_s = time.perf_counter() - t0
        qs = rng.normal(size=(queries, DIM)).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        t0 = time.perf_counter()
        mem.peek("warm-up", agent="agent", k=K, query_embedding=qs[0])  # loads the arrays
        load_s = time.perf_counter() - t0
        ours, floor, touching = [], [], []
        for q in qs:
            t = time.perf_counter_ns()
            hits = mem.peek("q", agent="agent", k=K, query_embedding=q)
            ours.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns()
            scores = matrix @ q
            top = np.argpartition(-scores, K)[:K]
            floor.append(time.perf_counter_ns() - t)
            assert len(hits) == K
            assert top.size == K
        mem.clock.advance(hours=1)  # type: ignore[attr-defined]
        for q in qs[: max(10, queries // 4)]:
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="also run N = 1,000,000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="*", help="override the sizes")
    args = parser.parse_args()
    sizes = args.sizes or [1_000, 10_000, 100_000] + ([1_000_000] if args.million else [])
    rng = np.random.default_rng(20240101)
    rows = []
    print(
        f"{'N':>9}  {'recall p50 ms':>13}  {'floor p50 ms':>12}  {'ratio':>6}  "
        f"{'touching p50 ms':>15}  {'build s':>8}  {'load s':>7}"
    )
    for n in sizes:
        row = measure(n, args.queries, rng)
        rows.append(row)
        print(
            f"{n:>9,}  {row['recall_p50_ms']:>13.3f}  {row['floor_p50_ms']:>12.3f}  "
            f"{row['ratio']:>6.2f}  {row['touching_recall_p50_ms']:>15.3f}  "
            f"{row['build_s']:>8.1f}  {row['first_load_s']:>7.2f}",
            flush=True,
        )
    RESULTS.mkdir(exist_ok=True)
    info = machine()
    command = "python bench/recall_scaling.py" + (" --million" if args.million else "")
    (RESULTS / "recall_scaling.json").write_text(
        json.dumps(
            {"command": command, "machine": info, "k": K, "dim": DIM, "rows": rows}, indent=2
        )
        + "\n"
    )
    lines = [
        "# Recall scaling (one agent, 384-d, generative-agents preset, top-30, read-only)",
        "",
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores, Python {info['python']}, numpy {info['numpy']}.",
        "",
        "| N | recall p50 ms | floor p50 ms (`matrix @ q` + argpartition) | ratio "
        "| touching recall p50 ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['n']:,} | {r['recall_p50_ms']:.3f} | {r['floor_p50_ms']:.3f} | {r['ratio']:.2f} | "
        f"{r['touching_recall_p50_ms']:.3f} |"
        for r in rows
    ]
    (RESULTS / "recall_scaling.md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
