"""pgvector candidate pre-selection vs exact scoring on PostgreSQL: latency and agreement.

The records are every distinct LoCoMo and LongMemEval dialogue turn with its real
all-MiniLM-L6-v2 vector (from ``bench/.cache``, which the quality benchmarks fill; missing ones
are embedded), one agent — and, up to ``--n``, near-duplicates of random turns (the same text
numbered, its vector plus Gaussian noise, cosine ≈ 0.9 to the original: a long history full of
similar memories, the hard case for an approximate index). The queries are LoCoMo questions
with their vectors. One scratch
database on a server with pgvector (``--store``, role needs CREATEDB) is read two ways, in the
same run: ``vector_index="off"`` (every record scored exactly — the baseline) and
``vector_index="require"`` with ``preselect_min_records=0`` (pgvector's HNSW picks the candidates
for the dense part). Both use the ``default`` preset, top-10, read-only.

Reported: p50 / p90 read latency of each, their ratio, the share of exact top-10 ids the
pre-selected read also returns (recall@10 against exact), the share of queries with identical
hits, and how long building and indexing took. Writes ``bench/results/<name>.{json,md}``
(``--name``, default ``preselect``); ``--keep DATABASE`` builds into a named database and reuses
it on the next run (building 200k records and the index takes ~17 minutes on 2 cores).

    python bench/preselect.py --store postgresql://user@host/db [--n 200000] [--queries 200]
        [--candidates 400] [--keep DATABASE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import CachedEmbedder
from chronomem import PRESETS, Memory, PostgresStore, ScoringConfig, SimClock
from chronomem.config import RelevanceMode
from chronomem.stores.postgres import redact, scratch_database

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
K = 10


def corpus() -> tuple[list[str], list[str]]:
    """Distinct dialogue turns (as the quality benchmarks embed them) and LoCoMo questions."""
    turns: dict[str, None] = {}
    questions = []
    for conversation in json.loads((DATA / "locomo" / "locomo10.json").read_text()):
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns.update((f"{t['speaker']}: {t['text']}", None) for t in session)
        questions += [qa["question"] for qa in conversation["qa"]]
    for item in json.loads((DATA / "longmemeval" / "longmemeval_oracle.json").read_text()):
        for session in item["haystack_sessions"]:
            turns.update((f"{t['role']}: {t['content']}", None) for t in session)
    return list(turns), questions


@contextmanager
def database(server: str, keep: str | None) -> Iterator[str]:
    """A scratch database dropped afterwards, or with ``keep`` a named one kept for the next run
    (built once: the build takes several minutes)."""
    if keep is None:
        with scratch_database(server, prefix="chronomem_bench") as url:
            yield url
        return
    with psycopg.connect(server, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (keep,)).fetchone():
            conn.execute(f'CREATE DATABASE "{keep}"')
    yield urlunsplit(urlsplit(server)._replace(path=f"/{keep}"))


def count(url: str) -> int:
    store = PostgresStore(url, vector_index="off")
    try:
        return int(store.stats("default")["records"])
    finally:
        store.close()


def timed_reads(
    mem: Memory, questions: list[str], qv: np.ndarray, preset: ScoringConfig
) -> tuple[list[float], list[list[tuple[str, float]]]]:
    samples, results = [], []
    for text, vector in zip(questions, qv, strict=True):
        t = time.perf_counter_ns()
        hits = mem.peek(text, agent="memory", k=K, query_embedding=vector, preset=preset)
        samples.append((time.perf_counter_ns() - t) / 1e6)
        results.append([(h.record.id, h.score) for h in hits])
    return samples, results


READS = {
    "default": PRESETS["default"],
    "default, dense only": replace(PRESETS["default"], relevance=RelevanceMode.DENSE),
}


def compare(
    exact: Memory, fast: Memory, asked: list[str], qv: np.ndarray, preset: ScoringConfig
) -> dict[str, float]:
    """Time the same reads on both stores, interleaved query by query (alternating which goes
    first, so drift in the machine's load falls on both); how often and how much they agree."""
    exact_ms, exact_hits, fast_ms, fast_hits = [], [], [], []
    for i in range(len(asked)):
        one = slice(i, i + 1)
        order = [(exact, exact_ms, exact_hits), (fast, fast_ms, fast_hits)]
        for mem, times, hits in order if i % 2 == 0 else order[::-1]:
            ms, found = timed_reads(mem, asked[one], qv[one], preset)
            times += ms
            hits += found
    preselected = 0
    for text, vector in zip(asked, qv, strict=True):
        hits = fast.peek(
            text, agent="memory", k=1, query_embedding=vector, preset=preset, explain=True
        )
        preselected += bool(hits and hits[0].breakdown and hits[0].breakdown.preselected)
    pairs = list(zip(exact_hits, fast_hits, strict=True))
    return {
        "exact_p50_ms": statistics.median(exact_ms),
        "exact_p90_ms": float(np.percentile(exact_ms, 90)),
        "preselect_p50_ms": statistics.median(fast_ms),
        "preselect_p90_ms": float(np.percentile(fast_ms, 90)),
        "preselected_reads": preselected,
        "recall_at_10_vs_exact": float(
            np.mean([len({i for i, _ in a} & {i for i, _ in b}) / max(1, len(a)) for a, b in pairs])
        ),
        # Same records in the same order (scores may differ in float32 rounding).
        "identical_hits": sum([i for i, _ in a] == [i for i, _ in b] for a, b in pairs)
        / len(pairs),
    }


def build_line(build_s: float | None, index_s: float | None) -> str:
    if build_s is None or index_s is None:
        return "The database was built by an earlier run (`--keep`)."
    return (
        f"Building the store without the index: {build_s:.1f} s; copying the vectors and "
        f"building the HNSW index when it was switched on: {index_s:.1f} s."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="postgresql://... with pgvector")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=400)
    parser.add_argument("--n", type=int, default=200_000, help="records (real turns first)")
    parser.add_argument("--keep", metavar="DATABASE", help="build into this database and keep it")
    parser.add_argument("--name", default="preselect", help="results file name (bench/results/)")
    args = parser.parse_args()

    texts, questions = corpus()
    embedder = CachedEmbedder(threads=1)
    vectors = embedder.embed(texts, progress=True)
    rng = np.random.default_rng(7)
    real = len(texts)
    if args.n > real:
        source = rng.integers(0, real, args.n - real)
        noisy = vectors[source] + rng.normal(0, 0.025, (source.size, vectors.shape[1]))
        noisy = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
        vectors = np.vstack([vectors, noisy])
        texts = texts + [f"{texts[j]} (#{i})" for i, j in enumerate(source.tolist())]
    asked = [questions[i] for i in sorted(rng.choice(len(questions), args.queries, False))]
    qv = embedder.embed(asked)
    embedder.save()
    n = len(texts)
    print(f"{n:,} records ({min(n, real):,} real turns), {len(asked)} queries", flush=True)

    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    with database(args.store, args.keep) as url:
        build_s = index_s = None
        if count(url) != n:
            t0 = time.perf_counter()
            with Memory.open(
                PostgresStore(url, vector_index="off"), embedder=None, clock=clock
            ) as mem:
                for start in range(0, n, 5000):
                    clock.advance(hours=6)
                    mem.remember_many(
                        (
                            {"text": texts[i], "embedding": vectors[i], "importance": 5}
                            for i in range(start, min(n, start + 5000))
                        ),
                        agent="memory",
                    )
            build_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            PostgresStore(url, vector_index="require").close()  # copies vectors, builds HNSW
            index_s = time.perf_counter() - t0
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
        clock.set(datetime(2024, 1, 1, tzinfo=UTC) + timedelta(hours=6 * -(-n // 5000) + 1))
        exact = Memory.open(PostgresStore(url, vector_index="off"), embedder=None, clock=clock)
        fast = Memory.open(
            PostgresStore(
                url,
                vector_index="require",
                preselect_min_records=0,
                preselect_candidates=args.candidates,
            ),
            embedder=None,
            clock=clock,
        )
        with exact, fast:
            timed_reads(exact, asked[:5], qv[:5], PRESETS["default"])  # load the arrays
            timed_reads(fast, asked[:5], qv[:5], PRESETS["default"])
            rows = {name: compare(exact, fast, asked, qv, preset) for name, preset in READS.items()}
    for row in rows.values():
        row["candidates"] = args.candidates
    print(json.dumps(rows, indent=2))
    info = machine()
    command = f"python bench/preselect.py --store {redact(args.store)} --n {args.n}"
    command += f" --queries {args.queries} --candidates {args.candidates}"
    command += "" if args.keep is None else f" --keep {args.keep}"
    command += "" if args.name == "preselect" else f" --name {args.name}"
    table = [
        "| read | exact p50 ms | pre-selected p50 ms | ratio | exact p90 ms | pre-selected p90 ms "
        "| reads pre-selected | recall@10 vs exact | identical top-10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        table.append(
            f"| {name} | {r['exact_p50_ms']:.2f} | {r['preselect_p50_ms']:.2f} | "
            f"{r['preselect_p50_ms'] / r['exact_p50_ms']:.2f} | {r['exact_p90_ms']:.2f} | "
            f"{r['preselect_p90_ms']:.2f} | {r['preselected_reads']} of {len(asked)} | "
            f"{r['recall_at_10_vs_exact']:.3f} | {r['identical_hits']:.3f} |"
        )
    write_results(
        args.name,
        {"command": command, "machine": info, "k": K, "n": n, "real_turns": real, "reads": rows},
        [
            "# pgvector pre-selection vs exact scoring (PostgreSQL, real MiniLM vectors)",
            "",
            f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
            f"{info['cpu_count']} cores, Python {info['python']}; server on 127.0.0.1.",
            "",
            f"{n:,} records of one agent ({min(n, real):,} distinct real turns, the rest "
            f"noisy near-duplicates of them), {len(asked)} LoCoMo questions, top-{K}, "
            f"read-only; pgvector pre-selects {args.candidates} candidates. `default` is the "
            "hybrid preset (a read whose query terms match so many records that computing "
            "their cosines would cost about the whole product is scored exactly); "
            "`default, dense only` is the same preset with `relevance='dense'`.",
            "",
            *table,
            "",
            build_line(build_s, index_s),
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
