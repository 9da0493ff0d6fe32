"""Lexical (BM25) lookup latency: chronomem's postings vs SQLite FTS5, same texts, same queries.

N records (default 100k) are LoCoMo dialogue turns, cycled and numbered; the queries are LoCoMo's
questions. For each query this times, in the same run:

- chronomem's ``store.lexical`` (analyser, postings of the query terms, BM25 in numpy over the
  space's statistics) on a real SQLite file — and on PostgreSQL with ``--store postgresql://...``
  (a scratch database, dropped afterwards);
- the baseline: a bare FTS5 table (porter unicode61) over the same texts, ``bm25()`` for every
  document matching any query term (the same terms, OR-ed), rows fetched;
- a whole lexical-only ``peek`` (top-10, records fetched) on chronomem's SQLite store.

It prints p50 / p90 and the ratio to FTS5, and writes ``bench/results/lexical.{json,md}``.

    python bench/lexical.py [--n 100000] [--queries 200] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import store_of
from chronomem import Memory, SimClock
from chronomem.analysis.analyser import default_analyser
from chronomem.stores.postgres import redact, scratch_database

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json"


def corpus() -> tuple[list[str], list[str]]:
    data = json.loads(DATA.read_text())
    turns, questions = [], []
    for conversation in data:
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session]
        questions += [qa["question"] for qa in conversation["qa"]]
    return turns, questions


def texts(turns: list[str], n: int) -> list[str]:
    return [f"{turns[i % len(turns)]} #{i}" for i in range(n)]


def fill(location: str | Path, docs: list[str]) -> tuple[Memory, float]:
    mem = Memory.open(
        location, embedder=None, clock=SimClock(datetime(2024, 1, 1, tzinfo=UTC)),
        synchronous="NORMAL",
    )  # fmt: skip
    t0 = time.perf_counter()
    for start in range(0, len(docs), 5_000):
        mem.remember_many(
            ({"text": t, "importance": 5} for t in docs[start : start + 5_000]), agent="a"
        )
    return mem, time.perf_counter() - t0


def fts5(path: Path, docs: list[str]) -> tuple[sqlite3.Connection, float]:
    conn = sqlite3.connect(path)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61')")
    t0 = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO t (text) VALUES (?)", ((d,) for d in docs))
    return conn, time.perf_counter() - t0


def timed(fn: Callable[[str], object], queries: list[str]) -> list[float]:
    for q in queries[:5]:
        fn(q)
    out = []
    for q in queries:
        t = time.perf_counter_ns()
        fn(q)
        out.append((time.perf_counter_ns() - t) / 1e6)
    return out


def summary(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(samples), "p90_ms": float(np.percentile(samples, 90))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--store", help="also time PostgreSQL: postgresql://user@host/db")
    args = parser.parse_args()
    turns, questions = corpus()
    docs = texts(turns, args.n)
    queries = [q for q in questions if default_analyser().query_terms(q)][: args.queries]
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="chronomem-bench-") as tmp:
        mem, build = fill(Path(tmp) / "chronomem.db", docs)
        conn, fts_build = fts5(Path(tmp) / "fts5.db", docs)

        def baseline(q: str) -> object:
            match = " OR ".join(f'"{term}"' for term in default_analyser().query_terms(q))
            return conn.execute(
                "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ?", (match,)
            ).fetchall()

        rows["FTS5 bm25() (baseline)"] = {**summary(timed(baseline, queries)), "build_s": fts_build}
        rows["chronomem lexical, SQLite"] = {
            **summary(timed(lambda q: store_of(mem).lexical(mem.space, ["a"], q), queries)),
            "build_s": build,
        }
        rows["chronomem lexical-only peek top-10, SQLite"] = summary(
            timed(lambda q: mem.peek(q, agent="a", k=10), queries)
        )
        mem.close()
        conn.close()
    if args.store:
        with scratch_database(args.store, prefix="chronomem_bench") as url:
            pg, pg_build = fill(url, docs)
            rows["chronomem lexical, PostgreSQL"] = {
                **summary(timed(lambda q: store_of(pg).lexical(pg.space, ["a"], q), queries)),
                "build_s": pg_build,
            }
            pg.close()
    base = rows["FTS5 bm25() (baseline)"]["p50_ms"]
    print(f"{'':<46} {'p50 ms':>8} {'p90 ms':>8} {'/ FTS5':>7}")
    for name, row in rows.items():
        print(
            f"{name:<46} {row['p50_ms']:>8.2f} {row['p90_ms']:>8.2f} {row['p50_ms'] / base:>7.2f}"
        )
    info = machine()
    command = f"python bench/lexical.py --n {args.n} --queries {len(queries)}"
    if args.store:
        command += f" --store {redact(args.store)}"
    lines = [
        f"# Lexical lookup: chronomem postings vs SQLite FTS5 ({args.n:,} LoCoMo turns)",
        "",
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores, Python {info['python']}.",
        "",
        "| what | p50 ms | p90 ms | p50 / FTS5 | build s |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {name} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} | {r['p50_ms'] / base:.2f} | "
            f"{r['build_s']:.1f} |"
            if "build_s" in r
            else f"| {name} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} | {r['p50_ms'] / base:.2f} | |"
            for name, r in rows.items()
        ),
    ]
    write_results(
        "lexical", {"command": command, "machine": info, "n": args.n, "rows": rows}, lines
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
