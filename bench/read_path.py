"""One agent's read at 100k dialogue turns — the service's read (``bench/serve.py``'s store) —
whole and stage by stage, against the float32 scan and the bare floor, in one run (issue 30).

The store is ``bench/serve.py``'s: 16,842 real LoCoMo and LongMemEval turns with their real
all-MiniLM-L6-v2 vectors, then the same turns tagged with a pass number, their vectors jittered,
up to ``--records``. The questions are LoCoMo's (real words: a common one matches most turns).
Each read is a ``default`` top-10 ``peek`` with the question's vector given (the model's run is
not in these figures; ``bench/embedding.py`` has it), after every question was asked once (every
term's postings held, as in a service that has run a while). Interleaved per question:

- the read, through a handle that scans the int8 copy (the default from 100k records);
- the same read through a handle with ``compact_vectors=None`` (the float32 scan), whose hits
  must be identical;
- the floor: a bare float32 ``matrix @ q`` + ``argpartition`` for the top 10.

Then the reads again with tracing on (an in-memory OpenTelemetry exporter), for each stage's
p50 / p95 (``chronomem.read.*`` spans; tracing adds a little to each).

Prints the figures and writes ``bench/results/read_path.{json,md}``.

    python bench/read_path.py [--records 100000] [--queries 400] [--db PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from _quality import CachedEmbedder
from chronomem import Memory
from serve import SPACE, build, corpus

K = 10


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def stages(
    mem: Memory, questions: list[str], vectors: np.ndarray, at: datetime
) -> dict[str, list[float]]:
    """Each ``chronomem.read.*`` stage's duration per read, in seconds."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from chronomem.telemetry.tracing import instrument, uninstrument

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    try:
        for question, vector in zip(questions, vectors, strict=True):
            mem.peek(question, k=K, query_embedding=vector, as_of=at)
    finally:
        uninstrument()
    out: dict[str, list[float]] = defaultdict(list)
    for span in exporter.get_finished_spans():
        if span.name.startswith("chronomem.read.") and span.end_time and span.start_time:
            out[span.name.removeprefix("chronomem.")].append(
                (span.end_time - span.start_time) / 1e9
            )
    return out


def run(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    texts, questions = corpus(args.records)
    embedder = CachedEmbedder()
    if not path.exists():
        started = time.perf_counter()
        real = build(path, texts, args.records, embedder)
        print(f"built {args.records:,} records ({real:,} real turns) in "
              f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    asked = questions[: args.queries]
    vectors = embedder.embed(asked)
    embedder.save()
    opened: dict[str, Any] = {"embedder": None, "space": SPACE, "preset": "default"}
    timed: dict[str, list[float]] = {"read": [], "float32": [], "floor": []}
    same = 0
    with (
        Memory.open(path, **opened) as fast,
        Memory.open(path, compact_vectors=None, **opened) as exact,
    ):
        at = fast.clock.now()  # one instant for every read: the two scans must agree exactly
        agent = fast.agents()[0]
        matrix = fast._h.index.arrays([agent])[0].emb
        assert matrix is not None
        for mem in (fast, exact):  # every term's postings held
            for question, vector in zip(asked, vectors, strict=True):
                mem.peek(question, k=K, query_embedding=vector, as_of=at)
        matrix = matrix[: fast._h.index.arrays([agent])[0].n]
        for question, vector in zip(asked, vectors, strict=True):
            started = time.perf_counter()
            hits = fast.peek(question, k=K, query_embedding=vector, as_of=at)
            timed["read"].append(time.perf_counter() - started)
            started = time.perf_counter()
            want = exact.peek(question, k=K, query_embedding=vector, as_of=at)
            timed["float32"].append(time.perf_counter() - started)
            started = time.perf_counter()
            products = matrix @ vector
            np.argpartition(-products, K)[:K]
            timed["floor"].append(time.perf_counter() - started)
            same += [h.record.id for h in hits] == [h.record.id for h in want]
        per_stage = stages(fast, asked, vectors, at)
    return {
        "records": args.records,
        "queries": len(asked),
        "identical_top10": same / len(asked),
        **{
            f"{name}_{label}_ms": pct(values, q)
            for name, values in timed.items()
            for label, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
        },
        "stages": {
            name: {"p50_ms": pct(values, 0.5), "p95_ms": pct(values, 0.95), "count": len(values)}
            for name, values in sorted(per_stage.items())
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--db", type=Path, help="build the store here (kept), or reuse it")
    args = parser.parse_args()
    if args.db is not None:
        result = run(args.db, args)
    else:
        with tempfile.TemporaryDirectory(prefix="chronomem-read-path-") as tmp:
            result = run(Path(tmp) / "read.db", args)
    floor = result["floor_p50_ms"]
    lines = [
        f"# One agent's read at {result['records']:,} dialogue turns, stage by stage",
        "",
        f"Command: `python bench/read_path.py --records {args.records} --queries "
        f"{args.queries}` — revision {machine()['revision']}, {machine()['date']}, "
        f"{machine()['cpu_count']} cores (shared). `bench/serve.py`'s store; LoCoMo's questions, "
        "`default` top-10 `peek` with the question's vector given, every term's postings held.",
        "",
        "| measure | p50 ms | p95 ms | p99 ms | p50 / floor |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in (
        ("read", "read, int8 scan + exact rescoring"),
        ("float32", "read, float32 scan"),
        ("floor", "floor: float32 `matrix @ q` + argpartition"),
    ):
        lines.append(
            f"| {label} | {result[f'{name}_p50_ms']:.2f} | {result[f'{name}_p95_ms']:.2f} | "
            f"{result[f'{name}_p99_ms']:.2f} | {result[f'{name}_p50_ms'] / floor:.2f} |"
        )
    lines += [
        "",
        "Identical top 10 (int8 against float32, every read at one instant) in "
        f"{result['identical_top10']:.1%} of {result['queries']} questions.",
        "",
        "Stages of the int8 read, traced (tracing on adds to each):",
        "",
        "| stage | p50 ms | p95 ms |",
        "|---|---:|---:|",
    ]
    for name, s in result["stages"].items():
        lines.append(f"| {name} | {s['p50_ms']:.2f} | {s['p95_ms']:.2f} |")
    write_results("read_path", {"machine": machine(), "result": result}, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
