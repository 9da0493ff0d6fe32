"""One agent, 1M records: the int8 scan with exact rescoring against the float32 scan and the
bare floor, in one run (issue 18).

Records of one agent (384-d fixed random vectors, no model) in a real SQLite file, built with the
store's bulk insert. For each query, interleaved: a full ``generative-agents`` read (elapsed
recency, min-max normalised relevance, recency and importance, top-30, records fetched,
read-only) through a handle that scans the int8 copy (the default from 100k records), the same
read through a handle with ``compact_vectors=None`` (the float32 scan), and the floor — a bare
float32 ``matrix @ q`` + ``argpartition`` for the top 30 on the same vectors. Reports the p50s,
the ratios, and how often the top 10 (and the top 30) of the two reads are identical. Writes
``bench/results/large_read.{json,md}``.

    python bench/large_read.py [--n 1000000] [--queries 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory
from cold_start import DIM, build

K = 30


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--preset", default="generative-agents")
    args = parser.parse_args()
    rng = np.random.default_rng(20240102)
    with tempfile.TemporaryDirectory(prefix="chronomem-large-") as tmp:
        path = Path(tmp) / "bench.db"
        build_s = build(path, args.n, rng)
        qs = rng.normal(size=(args.queries, DIM)).astype(np.float32)
        qs /= np.linalg.norm(qs, axis=1, keepdims=True)
        opened = {"embedder": None, "preset": args.preset, "create": False}
        fast = Memory.open(path, **opened)  # type: ignore[arg-type]
        started = time.perf_counter()
        fast.peek("q", agent="agent", k=K, query_embedding=qs[0])  # loads, builds the codes
        first_s = time.perf_counter() - started
        fast.close()  # writes the snapshot (with the codes) for both handles
        fast = Memory.open(path, **opened)  # type: ignore[arg-type]
        exact = Memory.open(path, compact_vectors=None, **opened)  # type: ignore[arg-type]
        exact.peek("q", agent="agent", k=K, query_embedding=qs[0])
        fast.peek("q", agent="agent", k=K, query_embedding=qs[0])
        arrays = exact._h.index._agents["agent"]
        assert arrays.emb is not None
        matrix = arrays.emb[: arrays.n]
        assert fast._h.index._agents["agent"].codes is not None
        t_fast, t_exact, t_floor = [], [], []
        same10 = same30 = 0
        for q in qs:
            t = time.perf_counter()
            got = fast.peek("q", agent="agent", k=K, query_embedding=q)
            t_fast.append(time.perf_counter() - t)
            t = time.perf_counter()
            want = exact.peek("q", agent="agent", k=K, query_embedding=q)
            t_exact.append(time.perf_counter() - t)
            t = time.perf_counter()
            top = np.argpartition(-(matrix @ q), K)[:K]
            t_floor.append(time.perf_counter() - t)
            assert top.size == K
            ids_got = [h.record.id for h in got]
            ids_want = [h.record.id for h in want]
            same10 += ids_got[:10] == ids_want[:10]
            same30 += ids_got == ids_want
        fast.close()
        exact.close()
    row = {
        "n": args.n,
        "queries": args.queries,
        "preset": args.preset,
        "int8_p50_ms": p50_ms(t_fast),
        "float32_p50_ms": p50_ms(t_exact),
        "floor_p50_ms": p50_ms(t_floor),
        "int8_over_floor": p50_ms(t_fast) / p50_ms(t_floor),
        "float32_over_floor": p50_ms(t_exact) / p50_ms(t_floor),
        "identical_top10": same10 / args.queries,
        "identical_top30": same30 / args.queries,
        "first_read_s": first_s,
        "build_s": build_s,
    }
    print(
        f"N={args.n:,} {args.preset} top-{K}: int8 scan p50 {row['int8_p50_ms']:.1f} ms, "
        f"float32 scan {row['float32_p50_ms']:.1f} ms, floor {row['floor_p50_ms']:.1f} ms; "
        f"int8/floor {row['int8_over_floor']:.2f}, float32/floor "
        f"{row['float32_over_floor']:.2f}; identical top-10 {row['identical_top10']:.1%}, "
        f"top-30 {row['identical_top30']:.1%}; first read (load + codes) {first_s:.1f} s"
    )
    info = machine()
    command = f"python bench/large_read.py --n {args.n} --queries {args.queries}"
    name = "large_read"
    if args.preset != "generative-agents":
        command += f" --preset {args.preset}"
        name += f"-{args.preset}"
    if args.n != 1_000_000:
        name += f"-{args.n // 1000}k"
    write_results(
        name,
        {"command": command, "machine": info, "k": K, "dim": DIM, "row": row},
        [
            f"# One agent, {args.n:,} records: int8 scan + exact rescoring vs float32",
            "",
            f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
            f"{info['cpu_count']} cores (shared), Python {info['python']}, numpy "
            f"{info['numpy']}. `{args.preset}` preset, top-{K}, records fetched, read-only; "
            "the three measures interleaved query by query. The question's text (`q`) matches "
            "no record: under `default` its hybrid relevance is the floored dense part.",
            "",
            "| measure | p50 ms | / floor |",
            "|---|---:|---:|",
            f"| read, int8 scan + exact rescoring | {row['int8_p50_ms']:.1f} | "
            f"{row['int8_over_floor']:.2f} |",
            f"| read, float32 scan | {row['float32_p50_ms']:.1f} | "
            f"{row['float32_over_floor']:.2f} |",
            f"| floor: float32 `matrix @ q` + argpartition | {row['floor_p50_ms']:.1f} | 1.00 |",
            "",
            f"Identical top 10 in {row['identical_top10']:.1%} of {args.queries} queries, "
            f"identical top 30 in {row['identical_top30']:.1%}. The first read of the handle "
            f"(arrays from the rows, then the int8 codes) took {first_s:.1f} s.",
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
