"""Ingest throughput (issue: retrieval quality): records per second through ``remember_many`` with
the real all-MiniLM-L6-v2, next to the raw model's sentences per second on the same texts in the
same run (target ratio >= 0.85), with and without passage vectors (with them, the raw model is
timed on the records' texts plus their passages: the same work), and with precomputed vectors
(storage alone). Passages both ways (issue 18): ``"sentences"`` (the whole record and every
sentence) and ``"derived"`` (the default: each sentence the model reads embedded once, the record's
vector their mean), each next to the raw model on what it asks for.

Texts: LoCoMo dialogue turns, or with ``--data longmemeval`` LongMemEval's chat sessions (the
oracle file's turns in order, most of several sentences: issue 18's "long chat sessions"). One
thread for both. With another backend than torch, the raw torch model on the same whole texts
is timed in the same run too (issue 18's reference: end to end with passages >= 0.8x it). Writes
``bench/results/ingest.{json,md}`` (``ingest_<backend>``, ``_longmemeval`` for that data).

    python bench/ingest.py [--records 2000] [--batch 500] [--backend torch|onnx|onnx-int8]
        [--data locomo|longmemeval]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory
from chronomem.embedders import default_embedder
from chronomem.text import passage_spans, passages
from locomo import DATA, load
from longmemeval import DATA as LONGMEMEVAL


def derived_work(embedder: Any, texts: list[str]) -> list[str]:
    """What ``passages="derived"`` asks the model for: the passages that start within what the
    model reads of each record (when two or more do), else the record whole."""
    reads = embedder.read_lengths(texts)
    out: list[str] = []
    for text, end in zip(texts, reads, strict=True):
        kept = [p for p, (s, _) in zip(passages(text), passage_spans(text), strict=True) if s < end]
        out += kept if len(kept) > 1 else [text]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--backend", default="torch", choices=("torch", "onnx", "onnx-int8"))
    parser.add_argument("--data", default="locomo", choices=("locomo", "longmemeval"))
    args = parser.parse_args()
    if args.data == "locomo":
        texts = [t.text for c in load(DATA) for t in c.turns][: args.records]
    else:
        sessions = [s for q in json.loads(LONGMEMEVAL.read_text()) for s in q["haystack_sessions"]]
        turns = dict.fromkeys(f"{t['role']}: {t['content']}" for s in sessions for t in s)
        texts = list(turns)[: args.records]  # sessions in file order, every turn
    split = [p for t in texts for p in passages(t)]
    embedder = default_embedder(args.backend, num_threads=1)  # batches of 64
    embedder.embed(texts[:64])  # load the model and warm up outside the timings
    derived = derived_work(embedder, texts)
    torch_s = None
    if args.backend != "torch":  # the reference: the raw torch model on the whole texts
        reference = default_embedder("torch", num_threads=1)
        reference.embed(texts[:64])
        t0 = time.perf_counter()
        reference.embed(texts)
        torch_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    raw_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder.embed(texts + split)
    raw_passages_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    embedder.embed(derived)
    raw_derived_s = time.perf_counter() - t0

    def remember_all(mem: Memory, items: list[Any]) -> float:
        t0 = time.perf_counter()
        for start in range(0, len(items), args.batch):
            mem.remember_many(items[start : start + args.batch], agent="a", kind="chat")
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="chronomem-ingest-") as tmp:
        with Memory.open(Path(tmp) / "records.db", embedder=embedder, passages=False) as mem:
            model_s = remember_all(mem, list(texts))
        with Memory.open(Path(tmp) / "s.db", embedder=embedder, passages="sentences") as mem:
            passages_s = remember_all(mem, list(texts))
        with Memory.open(Path(tmp) / "d.db", embedder=embedder, passages="derived") as mem:
            derived_s = remember_all(mem, list(texts))
        with Memory.open(Path(tmp) / "vectors.db", embedder=None) as mem:
            items = [{"text": t, "embedding": v} for t, v in zip(texts, vectors, strict=True)]
            vectors_s = remember_all(mem, items)

    n = len(texts)
    row = {
        "records": n,
        "passages": len(split),
        "batch": args.batch,
        "raw_model_sentences_per_s": n / raw_s,
        "remember_many_with_model_records_per_s": n / model_s,
        "ratio": raw_s / model_s,
        "raw_model_records_and_passages_records_per_s": n / raw_passages_s,
        "remember_many_with_passages_records_per_s": n / passages_s,
        "ratio_with_passages": raw_passages_s / passages_s,
        "raw_model_derived_records_per_s": n / raw_derived_s,
        "remember_many_derived_records_per_s": n / derived_s,
        "ratio_derived": raw_derived_s / derived_s,
        "derived_texts": len(derived),
        "remember_many_precomputed_records_per_s": n / vectors_s,
        "mean_chars": float(np.mean([len(t) for t in texts])),
    }
    if torch_s is not None:
        row["raw_torch_whole_texts_records_per_s"] = n / torch_s
        row["with_passages_to_raw_torch"] = torch_s / passages_s
        row["derived_to_raw_torch"] = torch_s / derived_s
    for key, value in row.items():
        print(f"{key:46s} {value:,.2f}" if isinstance(value, float) else f"{key:46s} {value:,}")
    info = machine()
    slowdown = passages_s / model_s
    command = f"python bench/ingest.py --records {args.records} --batch {args.batch}"
    name = "ingest"
    if args.backend != "torch":
        command += f" --backend {args.backend}"
        name += "_" + args.backend.replace("-", "_")
    if args.data != "locomo":
        command += f" --data {args.data}"
        name += f"_{args.data}"
    reference = ""
    if torch_s is not None:
        reference = (
            f"| raw torch model on the same whole texts (the reference) | "
            f"{row['raw_torch_whole_texts_records_per_s']:.1f} |\n"
        )
        slowdown_note = (
            f" End to end on {args.backend}, to the raw torch model on whole texts: "
            f'{row["with_passages_to_raw_torch"]:.2f}× with `"sentences"`, '
            f'{row["derived_to_raw_torch"]:.2f}× with `"derived"`.'
        )
    else:
        slowdown_note = ""
    title = "LoCoMo turns" if args.data == "locomo" else "LongMemEval chat turns"
    write_results(
        name,
        {"command": command, "backend": args.backend, "machine": info, "result": row},
        f"# Ingest throughput ({title}, all-MiniLM-L6-v2 on {args.backend}, one thread)\n\n"
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores. {n} records of {row['mean_chars']:.0f} characters on "
        f"average; the records of several sentences add {len(split)} passages.\n\n"
        "| path | records per second |\n|---|---:|\n"
        f"{reference}"
        f"| raw model (`embed`, batch 64) on the records' texts | "
        f"{row['raw_model_sentences_per_s']:.1f} |\n"
        f"| `remember_many(..., passages=False)` (SQLite, synchronous=FULL) | "
        f"{row['remember_many_with_model_records_per_s']:.1f} |\n"
        f"| raw model on the records' texts and their passages | "
        f"{row['raw_model_records_and_passages_records_per_s']:.1f} |\n"
        f'| `remember_many(..., passages="sentences")` | '
        f"{row['remember_many_with_passages_records_per_s']:.1f} |\n"
        f'| raw model on what `"derived"` asks for ({len(derived)} texts) | '
        f"{row['raw_model_derived_records_per_s']:.1f} |\n"
        f'| `remember_many` with `passages="derived"` (the default) | '
        f"{row['remember_many_derived_records_per_s']:.1f} |\n"
        f"| `remember_many` with precomputed vectors | "
        f"{row['remember_many_precomputed_records_per_s']:.0f} |\n\n"
        f"Ratio of `remember_many` to the raw model on the same texts: {row['ratio']:.2f} without "
        f'passages, {row["ratio_with_passages"]:.2f} with `"sentences"`, '
        f'{row["ratio_derived"]:.2f} with `"derived"` (target >= 0.85). Passages cost model '
        f'time: with `"sentences"` a record takes {slowdown:.2f}× as long to write as without, '
        f'with `"derived"` {derived_s / model_s:.2f}×; `"derived"` writes '
        f'{passages_s / derived_s:.2f}× as fast as `"sentences"`.{slowdown_note}\n',
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
