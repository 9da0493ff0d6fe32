"""The Generative Agents code preset's speed (issue 30): one agent of 10,000 memories with 1536-d
vectors (the authors' text-embedding-ada-002 width), a top-30 read of one focal point.

Measures, in one run on one store: the p50 of chronomem's ``generative-agents-code`` read
(read-only, records fetched), of its ``generative-agents`` read (the paper's formula), and of
the authors' retrieval as their code computes it — a Python loop over the nodes with numpy's
``dot(a, b) / (norm(a) * norm(b))`` per node on the stored lists, min-max normalisation of
dictionaries, a stable sort (written from the semantics, as ``tests/transfer/ga_reference.py``
models them). The top 30 of chronomem's read are checked against the reference model's, in
order. Writes ``bench/results/ga_code.{json,md}``. Target: ≥ 150× the authors' code.

    python bench/ga_code.py [--records 10000] [--dim 1536] [--queries 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "transfer"))
from ga_reference import ReferenceMemory

from _machine import machine, write_results
from chronomem import Memory, SimClock

T0 = datetime(2023, 2, 13, 8, tzinfo=UTC)
K = 30


def authors_retrieve(
    nodes: list[tuple[str, datetime, int]], vectors: dict[str, list[float]], focal: list[float]
) -> list[str]:
    """The shape of the authors' ``new_retrieve`` for one focal point (nodes newest first)."""
    ordered = sorted(nodes, key=lambda node: node[1])  # stable, by last access
    recency = {node[0]: 0.99 ** (i + 1) for i, node in enumerate(ordered)}
    importance = {node[0]: float(node[2]) for node in ordered}
    relevance = {}
    for node_id, _, _ in ordered:
        a, b = vectors[node_id], focal
        relevance[node_id] = np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))

    def normalised(d: dict[str, float]) -> dict[str, float]:
        lo, hi = min(d.values()), max(d.values())
        span = hi - lo
        return {k: (0.5 if span == 0 else (v - lo) / span) for k, v in d.items()}

    recency, importance, relevance = (
        normalised(recency),
        normalised(importance),
        normalised(relevance),
    )
    score = {k: recency[k] * 0.5 + relevance[k] * 3 + importance[k] * 2 for k in recency}
    return [k for k, _ in sorted(score.items(), key=lambda kv: kv[1], reverse=True)[:K]]


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=1536)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--authors", type=int, default=3, help="timed runs of the authors' loop")
    args = parser.parse_args()
    rng = np.random.default_rng(13)
    vectors = rng.normal(size=(args.records, args.dim)).astype(np.float32)
    poignancy = rng.integers(1, 11, args.records)
    clock = SimClock(T0)
    with tempfile.TemporaryDirectory(prefix="chronomem-ga-") as tmp:
        mem = Memory.open(Path(tmp) / "ga.db", embedder=None, clock=clock, synchronous="NORMAL")
        reference = ReferenceMemory()
        items = []
        for i in range(args.records):
            created = T0 + timedelta(minutes=i)
            items.append({"text": f"memory {i}", "importance": int(poignancy[i]),
                          "embedding": vectors[i], "occurred_at": created})  # fmt: skip
            node = reference.add("event", created, f"memory {i}", f"memory {i}",
                                 int(poignancy[i]), vectors[i].tolist())  # fmt: skip
            node.last_accessed = T0  # written at one instant, as remember_many writes them
        t0 = time.perf_counter()
        written = mem.remember_many(items, agent="isabella")
        build_s = time.perf_counter() - t0
        node_of = {r.id: f"memory {i}" for i, r in enumerate(written)}
        queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
        clock.set(T0 + timedelta(days=30))
        read = {"agent": "isabella", "k": K}
        mem.peek("warm", query_embedding=queries[0], preset="generative-agents-code", **read)
        mem.peek("warm", query_embedding=queries[0], preset="generative-agents", **read)
        code_s, paper_s = [], []
        for q in queries:
            t = time.perf_counter()
            mem.peek("q", query_embedding=q, preset="generative-agents-code", **read)
            code_s.append(time.perf_counter() - t)
            t = time.perf_counter()
            mem.peek("q", query_embedding=q, preset="generative-agents", **read)
            paper_s.append(time.perf_counter() - t)
        focal = queries[0].tolist()
        ours = [node_of[h.record.id] for h in mem.peek(
            "q", query_embedding=queries[0], preset="generative-agents-code", **read)]  # fmt: skip
        expected = [s.node.description for s in reference.retrieve([focal], clock.now())[0]]
        assert ours == expected, "the compatibility preset's top 30 differ from the reference"
        nodes = [(n.description, n.last_accessed, n.poignancy)
                 for n in reference.lists["event"]]  # fmt: skip
        lists = {n.description: reference.vectors[n.embedding_key]
                 for n in reference.lists["event"]}  # fmt: skip
        authors_s = []
        for _ in range(args.authors):
            t = time.perf_counter()
            authors_retrieve(nodes, lists, focal)
            authors_s.append(time.perf_counter() - t)
        mem.close()
    row = {
        "records": args.records,
        "dim": args.dim,
        "k": K,
        "ga_code_p50_ms": p50(code_s) * 1e3,
        "ga_paper_p50_ms": p50(paper_s) * 1e3,
        "authors_p50_ms": p50(authors_s) * 1e3,
        "authors_over_ga_code": p50(authors_s) / p50(code_s),
        "top30_identical_to_reference": True,
        "build_s": build_s,
    }
    for key, value in row.items():
        print(f"{key:30s} {value:,.3f}" if isinstance(value, float) else f"{key:30s} {value}")
    info = machine()
    command = "python bench/ga_code.py " + " ".join(sys.argv[1:])
    write_results(
        "ga_code",
        {"command": command.strip(), "machine": info, "result": row},
        f"# The Generative Agents code preset ({args.records:,} memories × {args.dim}-d, top-{K})"
        f"\n\nCommand: `{command.strip()}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores (shared), Python {info['python']}, numpy {info['numpy']}. "
        "One run, one store, read-only reads.\n\n"
        "| read | p50 ms |\n|---|---:|\n"
        f"| `generative-agents-code` | {row['ga_code_p50_ms']:.2f} |\n"
        f"| `generative-agents` (the paper's formula) | {row['ga_paper_p50_ms']:.2f} |\n"
        f"| the authors' retrieval (Python loop, numpy per node) | "
        f"{row['authors_p50_ms']:.0f} |\n\n"
        f"`generative-agents-code` is {row['authors_over_ga_code']:.0f}× faster than the "
        "authors' code; its top 30 equal the reference model's, in order.\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
