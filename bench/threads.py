"""A read beside another thread's writes on one handle, in one process (issue 30).

An application sharing one ``Memory`` between threads: one thread remembers long chat turns
(LongMemEval's assistant answers, several sentences each: the record and its passages go through
the model) back to back, while another reads (``peek`` of LoCoMo questions, top-10) back to back.
With the real all-MiniLM-L6-v2 on the backend ``Memory.open`` picks, one thread per model run,
on a store of ``--records`` LoCoMo turns written first.

Two ways, alternating in blocks of ``--seconds``, on the same handle:

- *thread-safe* (the built-in embedders say so): the engine runs the model before the handle's
  lock, so a read waits for another thread's write only while it writes;
- *under the lock*: the same embedder behind a wrapper that does not say so (every embedder
  before the built-ins did): a model run holds the handle, and a read waits for a write's whole
  model run.

Reports the reads' p50 / p95 / p99 and the writes per second of each way. Writes
``bench/results/threads.{json,md}``.

    python bench/threads.py [--records 1000] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory
from chronomem.embedders import default_embedder
from locomo import DATA as LOCOMO
from locomo import load
from longmemeval import DATA as LONGMEMEVAL


class UnderTheLock:
    """The same embedder, not saying it is thread-safe: the engine calls it under the lock."""

    thread_safe = False

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.languages = getattr(inner, "languages", None)

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        return self.inner.embed(texts, progress=progress)  # type: ignore[no-any-return]

    def read_lengths(self, texts: Sequence[str]) -> list[int]:
        return self.inner.read_lengths(texts)  # type: ignore[no-any-return]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def block(mem: Memory, questions: list[str], answers: list[str], seconds: float) -> dict[str, Any]:
    """``seconds`` of a writer thread and this thread reading; the reads' latencies, the writes."""
    stop = threading.Event()
    written = [0]

    def writer() -> None:
        i = 0
        while not stop.is_set():
            mem.remember(answers[i % len(answers)], agent="assistant")
            written[0] += 1
            i += 1

    reads: list[float] = []
    thread = threading.Thread(target=writer)
    thread.start()
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        started = time.perf_counter()
        mem.peek(questions[i % len(questions)], k=10)
        reads.append(time.perf_counter() - started)
        i += 1
    stop.set()
    thread.join()
    return {"reads": reads, "writes": written[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    conversations = load(LOCOMO)
    turns = [t.text for c in conversations for t in c.turns][: args.records]
    questions = [q["question"] for c in conversations for q in c.qa]
    answers = [
        t["content"]
        for item in json.loads(LONGMEMEVAL.read_text())[:60]
        for session in item["haystack_sessions"]
        for t in session
        if t["role"] == "assistant" and len(t["content"]) > 400
    ]
    inner = default_embedder(num_threads=1)
    ways = {"thread-safe": inner, "under the lock": UnderTheLock(inner)}
    found: dict[str, dict[str, list[float]]] = {w: {"reads": [], "writes_s": []} for w in ways}
    with tempfile.TemporaryDirectory(prefix="chronomem-threads-") as tmp:
        path = Path(tmp) / "m.db"
        with Memory.open(path, embedder=inner) as mem:
            mem.remember_many(turns, agent="assistant")
        for r in range(args.rounds):
            for way in list(ways) if r % 2 == 0 else list(reversed(ways)):
                with Memory.open(path, embedder=ways[way]) as mem:
                    mem.peek("warm up", k=1)
                    got = block(mem, questions, answers, args.seconds)
                found[way]["reads"] += got["reads"]
                found[way]["writes_s"].append(got["writes"] / args.seconds)
                print(f"round {r + 1} {way}: {len(got['reads'])} reads, {got['writes']} writes")
    rows = {
        way: {
            "reads": len(f["reads"]),
            "p50_ms": round(pct(f["reads"], 0.50), 2),
            "p95_ms": round(pct(f["reads"], 0.95), 2),
            "p99_ms": round(pct(f["reads"], 0.99), 2),
            "writes_per_s": round(statistics.mean(f["writes_s"]), 2),
        }
        for way, f in found.items()
    }
    payload = {
        "machine": machine(),
        "embedder": type(inner).__name__,
        "records": len(turns),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "answer_chars_mean": round(statistics.mean(len(a) for a in answers)),
        "ways": rows,
    }
    lines = [
        "# A read beside another thread's writes on one handle",
        "",
        f"Command: `python bench/threads.py --records {args.records} --seconds {args.seconds:g} "
        f"--rounds {args.rounds}` — {payload['machine']['revision']}, "
        f"{payload['machine']['date'][:10]}, {payload['machine']['cpu_count']} cores. "
        f"{type(inner).__name__} (all-MiniLM-L6-v2), one thread per model run; a store of "
        f"{len(turns):,} LoCoMo turns; one thread remembering LongMemEval assistant answers "
        f"(mean {payload['answer_chars_mean']:,} characters, with passages) back to back, "
        "another peeking LoCoMo questions (top-10) back to back; the two ways alternate in "
        f"blocks of {args.seconds:g} s.",
        "",
        "| the model runs | reads | read p50 / p95 / p99 ms | writes/s |",
        "|---|---:|---:|---:|",
        *[
            f"| {way} | {r['reads']} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} / "
            f"{r['p99_ms']:.1f} | {r['writes_per_s']:.1f} |"
            for way, r in rows.items()
        ],
    ]
    print("\n".join(lines))
    write_results("threads", payload, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
