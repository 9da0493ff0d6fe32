"""Importance without an LLM: agreement with human-style labels, and cost.

175 memories labelled 1..10 on the Generative Agents poignancy scale (how they were labelled:
docs/reflection.md), split once into a calibration half (shipped with the package:
``src/chronomem/writing/data/importance_calibration.jsonl``) and a held-out half
(``bench/data/importance_held_out.jsonl``; the ``split`` field). In one run this script

1. fits the anchor scorer's calibration (temperature on a grid; intercept and slope by least
   squares) on the calibration half only, and checks it against the shipped
   ``DEFAULT_CALIBRATION``;
2. scores every memory with the anchor scorer (``EmbeddingImportance``, all-MiniLM-L6-v2) and
   with the keyword heuristic (``HeuristicImportance``), and reports Spearman's rho (with a 95%
   bootstrap interval) and Kendall's tau-b against the labels on the held-out half, the
   calibration half and all of them, the mean absolute error, and how many distinct values each
   gives the 20 farm memories;
3. times the scorers (ms per 100 memories, beyond embedding; the embedding itself for scale)
   and ``remember_many`` of all 175 memories into a temporary SQLite store with each scorer.

    python bench/importance.py

Writes ``bench/results/importance.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import HeuristicImportance, Memory, SentenceTransformerEmbedder
from chronomem.writing.anchors import (
    DEFAULT_ANCHORS,
    DEFAULT_CALIBRATION,
    EmbeddingImportance,
    fit_calibration,
)
from chronomem.writing.calibration import CALIBRATION_LABELS

# The calibration half ships with the package (Memory.calibrate fits other models on it); the
# held-out half is the bench's alone.
ROOT = Path(__file__).resolve().parent.parent
LABELS = (
    CALIBRATION_LABELS,
    Path(__file__).resolve().parent / "data" / "importance_held_out.jsonl",
)
F = np.ndarray[Any, np.dtype[np.float64]]


def ranks(values: F) -> F:
    """Ranks 1..n, ties sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    out = np.empty(len(values), np.float64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            out[order[start:end]] = (start + end + 1) / 2
            start = end
    return out


def spearman(a: F, b: F) -> float:
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def kendall_tau_b(a: F, b: F) -> float:
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    upper = np.triu_indices(len(a), 1)
    da, db = da[upper], db[upper]
    concordant_minus_discordant = float(np.sum(da * db))
    denominator = float(np.sqrt(np.count_nonzero(da) * np.count_nonzero(db)))
    return concordant_minus_discordant / denominator if denominator else 0.0


def bootstrap(a: F, b: F, n: int = 2000, seed: int = 20) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    draws = [spearman(a[i], b[i]) for i in (rng.integers(0, len(a), len(a)) for _ in range(n))]
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))


def per_100_ms(run: Callable[[], object], n: int, repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000 * 100 / n


def remember_all_s(
    embedder: SentenceTransformerEmbedder, texts: list[str], scorer: Any, *, warm: bool
) -> float:
    """Seconds for ``remember_many(texts)`` into a new SQLite store; ``warm``: after one
    remember (which, with the anchor scorer, embeds the anchors)."""
    with (
        tempfile.TemporaryDirectory() as folder,
        Memory.open(Path(folder) / "m.db", embedder=embedder, importance=scorer) as mem,
    ):
        if warm:
            mem.remember("warming up", agent="warm")
        start = time.perf_counter()
        mem.remember_many(texts, agent="bench")
        return time.perf_counter() - start


def main() -> int:
    # no options: --help describes the run instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rows = [json.loads(line) for f in LABELS for line in f.read_text().splitlines() if line.strip()]
    texts = [r["text"] for r in rows]
    labels = np.array([r["importance"] for r in rows], np.float64)
    held = np.array([r["split"] == "held_out" for r in rows])
    cal = ~held
    farm = np.array([r["category"] == "farm" for r in rows])
    embedder = SentenceTransformerEmbedder(num_threads=1)
    anchor_scorer = EmbeddingImportance(embedder)
    heuristic = HeuristicImportance()

    embedder.embed(["load the model"])
    start = time.perf_counter()
    anchors = anchor_scorer.anchor_vectors()  # embeds the anchors, once per scorer
    anchors_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    vectors = np.asarray(embedder.embed(texts), np.float64)
    embed_ms = (time.perf_counter() - start) * 1000 * 100 / len(texts)
    levels = np.array([a.level for a in DEFAULT_ANCHORS], np.float64)
    fitted, mse = fit_calibration(vectors[cal], anchors, levels, labels[cal])
    shipped = DEFAULT_CALIBRATION

    scores = {
        "anchors (EmbeddingImportance)": np.array(anchor_scorer.score_vectors(vectors)),
        "keywords (HeuristicImportance)": np.array(heuristic.score(texts)),
    }
    halves = {"held-out": held, "calibration": cal, "all": np.ones(len(rows), bool)}
    figures: dict[str, Any] = {}
    for name, s in scores.items():
        figures[name] = {
            half: {
                "n": int(mask.sum()),
                "spearman": spearman(s[mask], labels[mask]),
                "spearman_95ci": bootstrap(s[mask], labels[mask]),
                "kendall_tau_b": kendall_tau_b(s[mask], labels[mask]),
                "mae": float(np.mean(np.abs(s[mask] - labels[mask]))),
                "mean": float(np.mean(s[mask])),
                "label_mean": float(np.mean(labels[mask])),
            }
            for half, mask in halves.items()
        }
        figures[name]["farm_distinct_values"] = len(set(s[farm].tolist()))
        figures[name]["farm_values"] = s[farm].tolist()

    cost = {
        "anchor_embedding_ms_once_per_scorer": anchors_ms,
        "embedding_ms_per_100": embed_ms,
        "anchor_scorer_ms_per_100_beyond_embedding": per_100_ms(
            lambda: anchor_scorer.score_vectors(vectors), len(texts)
        ),
        "keyword_heuristic_ms_per_100": per_100_ms(lambda: heuristic.score(texts), len(texts)),
    }
    # best of 5 each, alternating (the machine is shared); the anchor scorer is built per Memory
    # (Memory.open with no importance=), so a first write embeds the anchors ("first"); "warm"
    # times a Memory that has written once
    for warm in (False, True):
        label = "warm" if warm else "first"
        times: dict[str, list[float]] = {"anchors": [], "keywords": []}
        for _ in range(5):
            times["anchors"].append(remember_all_s(embedder, texts, None, warm=warm))
            times["keywords"].append(remember_all_s(embedder, texts, heuristic, warm=warm))
        anchors_s, keywords_s = min(times["anchors"]), min(times["keywords"])
        cost[f"remember_many_175_{label}_s_anchors"] = anchors_s
        cost[f"remember_many_175_{label}_s_keywords"] = keywords_s
        cost[f"remember_many_175_{label}_ratio_anchors_over_keywords"] = anchors_s / keywords_s
    payload = {
        "machine": machine(),
        "labels": " + ".join(str(f.relative_to(ROOT)) for f in LABELS),
        "n": len(rows),
        "n_held_out": int(held.sum()),
        "model": embedder.model_id,
        "calibration_fitted_on_calibration_half": {
            "temperature": fitted.temperature, "intercept": fitted.intercept,
            "slope": fitted.slope, "mse": mse,
        },
        "calibration_shipped": {
            "temperature": shipped.temperature, "intercept": shipped.intercept,
            "slope": shipped.slope,
        },
        "figures": figures,
        "cost": cost,
    }  # fmt: skip

    lines = [
        "# Importance without an LLM: agreement with labels",
        "",
        f"{len(rows)} memories labelled 1..10 (`{payload['labels']}`), {int(held.sum())} held "
        f"out; model {embedder.model_id}; revision {payload['machine']['revision']}, "
        f"{payload['machine']['date']}.",
        "",
        f"Calibration fitted on the calibration half: temperature {fitted.temperature}, "
        f"intercept {fitted.intercept}, slope {fitted.slope} (shipped: {shipped.temperature}, "
        f"{shipped.intercept}, {shipped.slope}).",
        "",
        "| scorer | half | n | Spearman rho [95% CI] | Kendall tau-b | MAE | mean (labels) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, by_half in figures.items():
        for half in halves:
            f = by_half[half]
            low, high = f["spearman_95ci"]
            lines.append(
                f"| {name} | {half} | {f['n']} | {f['spearman']:.3f} [{low:.2f}, {high:.2f}] | "
                f"{f['kendall_tau_b']:.3f} | {f['mae']:.2f} | {f['mean']:.2f} "
                f"({f['label_mean']:.2f}) |"
            )
    lines += [
        "",
        "Distinct values given to the 20 farm memories: "
        + ", ".join(f"{n} {f['farm_distinct_values']}" for n, f in figures.items())
        + ".",
        "",
        "| cost (one torch thread) | value |",
        "|---|---:|",
        *(f"| {k} | {v:.3f} |" for k, v in cost.items()),
    ]
    write_results("importance", payload, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
