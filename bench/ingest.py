"""Ingest throughput (issue: retrieval quality): records per second through ``remember_many`` with
the real all-MiniLM-L6-v2, next to the raw model's sentences per second on the same texts in the
same run (target ratio >= 0.85), and with precomputed vectors (storage alone).

Texts: LoCoMo dialogue turns. One torch thread for both. Writes ``bench/results/ingest.{json,md}``.

    python bench/ingest.py [--records 2000] [--batch 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import Memory
from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder
from locomo import DATA, load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=500)
    args = parser.parse_args()
    texts = [t.text for c in load(DATA) for t in c.turns][: args.records]
    embedder = SentenceTransformerEmbedder(num_threads=1, batch_size=64)
    embedder.embed(texts[:64])  # load the model and warm up outside the timings

    t0 = time.perf_counter()
    vectors = embedder.embed(texts)
    raw_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory(prefix="chronomem-ingest-") as tmp:
        with Memory.open(Path(tmp) / "model.db", embedder=embedder) as mem:
            t0 = time.perf_counter()
            for start in range(0, len(texts), args.batch):
                mem.remember_many(texts[start : start + args.batch], agent="a", kind="chat")
            model_s = time.perf_counter() - t0
        with Memory.open(Path(tmp) / "vectors.db", embedder=None) as mem:
            items = [{"text": t, "embedding": v} for t, v in zip(texts, vectors, strict=True)]
            t0 = time.perf_counter()
            for start in range(0, len(items), args.batch):
                mem.remember_many(items[start : start + args.batch], agent="a", kind="chat")
            vectors_s = time.perf_counter() - t0

    n = len(texts)
    row = {
        "records": n,
        "batch": args.batch,
        "raw_model_sentences_per_s": n / raw_s,
        "remember_many_with_model_records_per_s": n / model_s,
        "ratio": (n / model_s) / (n / raw_s),
        "remember_many_precomputed_records_per_s": n / vectors_s,
        "mean_chars": float(np.mean([len(t) for t in texts])),
    }
    for key, value in row.items():
        print(f"{key:42s} {value:,.2f}" if isinstance(value, float) else f"{key:42s} {value:,}")
    info = machine()
    command = f"python bench/ingest.py --records {args.records} --batch {args.batch}"
    write_results(
        "ingest",
        {"command": command, "machine": info, "result": row},
        "# Ingest throughput (LoCoMo turns, all-MiniLM-L6-v2, one torch thread)\n\n"
        f"Command: `{command}` — revision {info['revision']}, {info['date']}, "
        f"{info['cpu_count']} cores.\n\n"
        "| path | per second |\n|---|---:|\n"
        f"| raw model (`embed`, batch 64) | {row['raw_model_sentences_per_s']:.0f} sentences |\n"
        f"| `remember_many` with the model (SQLite, synchronous=FULL) | "
        f"{row['remember_many_with_model_records_per_s']:.0f} records |\n"
        f"| `remember_many` with precomputed vectors | "
        f"{row['remember_many_precomputed_records_per_s']:.0f} records |\n\n"
        f"Ratio of `remember_many` to the raw model: {row['ratio']:.2f} (target >= 0.85).\n",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
