"""What passage vectors cost a read: the ``default`` preset over the same records with and without
them, in one run.

The records are every LoCoMo dialogue turn (all ten conversations in one agent's memory) with their
real all-MiniLM-L6-v2 vectors, written twice: to a store opened with ``passages=True`` (a record of
several sentences also gets one vector per sentence) and to one with ``passages=False``. The
queries are LoCoMo questions with their vectors, read-only, top 10, reads of the two stores
interleaved query by query. Prints p50 / p90 per store, the ratio, and how many passage vectors
there are; writes ``bench/results/passages.{json,md}``.

    python bench/passages.py [--queries 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import CachedEmbedder
from chronomem import Memory, SimClock
from chronomem.text import passages
from locomo import DATA, load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    conversations = load(DATA)
    texts = [t.text for c in conversations for t in c.turns]
    questions = [q["question"] for c in conversations for q in c.qa][: args.queries]
    embedder = CachedEmbedder()
    vectors = embedder.embed(texts, progress=True)
    split = [p for t in texts for p in passages(t)]
    embedder.embed(split, progress=True)
    asked = embedder.embed(questions)
    embedder.save()

    clock = SimClock(datetime(2024, 1, 1, tzinfo=UTC))
    items = [{"text": t, "embedding": v} for t, v in zip(texts, vectors, strict=True)]
    timings: dict[str, list[float]] = {"with passages": [], "record vectors only": []}
    with tempfile.TemporaryDirectory(prefix="chronomem-passages-") as tmp:
        stores = {
            name: Memory.open(
                Path(tmp) / f"{on}.db", embedder=embedder, clock=clock, passages=on,
                synchronous="NORMAL",
            )
            for name, on in (("with passages", True), ("record vectors only", False))
        }  # fmt: skip
        try:
            for mem in stores.values():
                for start in range(0, len(items), 1000):
                    mem.remember_many(items[start : start + 1000], agent="memory")
            clock.advance(timedelta(days=1))
            for mem in stores.values():  # load the arrays outside the timings
                mem.peek(questions[0], agent="memory", query_embedding=asked[0])
            for question, vector in zip(questions, asked, strict=True):
                for name, mem in stores.items():
                    t0 = time.perf_counter()
                    mem.peek(question, agent="memory", k=10, query_embedding=vector)
                    timings[name].append((time.perf_counter() - t0) * 1000)
        finally:
            for mem in stores.values():
                mem.close()

    def pct(values: list[float], q: int) -> float:
        return statistics.quantiles(values, n=100)[q - 1]

    rows = {
        name: {"p50_ms": statistics.median(v), "p90_ms": pct(v, 90)} for name, v in timings.items()
    }
    ratio = rows["with passages"]["p50_ms"] / rows["record vectors only"]["p50_ms"]
    info = machine()
    command = f"python bench/passages.py --queries {args.queries}"
    lines = [
        "# Read latency with passage vectors (`default` preset, LoCoMo turns)",
        "",
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores. {len(texts)} records in one agent's memory, "
        f"{len(split)} passage vectors; {len(questions)} questions, top 10, read-only, "
        "reads of the two stores interleaved.",
        "",
        "| store | p50 ms | p90 ms |",
        "|---|---:|---:|",
        *(f"| {name} | {r['p50_ms']:.2f} | {r['p90_ms']:.2f} |" for name, r in rows.items()),
        "",
        f"Ratio of p50 with passages to without: {ratio:.2f}.",
    ]
    print("\n".join(lines))
    write_results(
        "passages",
        {
            "command": command,
            "machine": info,
            "records": len(texts),
            "passages": len(split),
            "queries": len(questions),
            "timings": rows,
            "ratio_p50": ratio,
        },
        lines,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
