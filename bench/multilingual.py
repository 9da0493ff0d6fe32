"""Retrieval in Korean, Japanese, Chinese and English, in three shapes (instructions,
observations, role-tagged chat), against the simple baselines of the same run.

The memories and questions (``bench/data/multilingual.json``) were written for this benchmark:
a coding assistant's instructions, a town in a crisis and an assistant's chat with its user, with
the inflections, particles, compounds, paraphrases and English words mixed in that users write.
Each question has one memory that answers it; each scenario is one agent's memory, so a system
ranks ten memories per question. ``split`` marks the half used while choosing the analysers
(``dev``) and the half kept out of that (``test``); both are reported.

Systems: chronomem's ``default`` preset with the bundled model (``--backend``), chronomem with
``embedder=None`` (words only), and the baselines — word BM25 (``\\w+`` tokens, lowercased),
character-bigram BM25 (every two adjacent letters or digits, punctuation and spaces removed) and
plain cosine on the same model's vectors. Metrics: hit@1 (the answer ranked first), MRR.

    python bench/multilingual.py [--backend onnx|torch] [--name multilingual]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from _machine import machine, write_results
from _quality import CachedEmbedder
from chronomem import Memory, SimClock
from chronomem.config import PRESETS

DATA = Path(__file__).resolve().parent / "data" / "multilingual.json"
# The default preset without the question's time window (what the timeline scenarios measure).
UNTIMED = replace(PRESETS["default"], name="default, no time cue", time_prior=0.0)
T0 = datetime(2025, 3, 1, 9, tzinfo=UTC)

Ranker = Callable[[str], list[str]]


def bm25_ranker(
    ids: Sequence[str], docs: Sequence[list[str]], tokens: Callable[[str], list[str]]
) -> Ranker:
    """BM25 (k1 1.2, b 0.75, Lucene's IDF) over the given token lists."""
    df = Counter(t for d in docs for t in set(d))
    n, avg = len(docs), sum(map(len, docs)) / max(len(docs), 1)
    tf = [Counter(d) for d in docs]

    def rank(query: str) -> list[str]:
        scores = []
        for counts, doc in zip(tf, docs, strict=True):
            s = 0.0
            for term in set(tokens(query)):
                if term in counts:
                    idf = math.log1p((n - df[term] + 0.5) / (df[term] + 0.5))
                    f = counts[term]
                    s += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(doc) / avg))
            scores.append(s)
        order = sorted(range(len(ids)), key=lambda i: (-scores[i], ids[i]))
        return [ids[i] for i in order]

    return rank


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def bigrams(text: str) -> list[str]:
    s = re.sub(r"[\W_]+", "", text.lower())
    return [s[i : i + 2] for i in range(len(s) - 1)] or ([s] if s else [])


def cosine_ranker(
    ids: Sequence[str], vectors: np.ndarray, embed: Callable[[str], np.ndarray]
) -> Ranker:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def rank(query: str) -> list[str]:
        q = embed(query)
        sims = unit @ (q / np.linalg.norm(q))
        order = np.lexsort((np.asarray(ids), -sims))
        return [ids[i] for i in order]

    return rank


def chronomem_ranker(
    mem: Memory, agent: str, scenario: dict[str, Any], preset: Any = None
) -> Ranker:
    """chronomem on the scenario's memories: each remembered at its ``at`` (world time; default
    an hour apart), with its ``speaker``, read at the scenario's ``now``."""
    to_id: dict[str, str] = {}
    for i, m in enumerate(scenario["memories"]):
        at = datetime.fromisoformat(m["at"]) if "at" in m else T0 + timedelta(hours=i)
        result = mem.remember(
            m["text"], agent=agent, occurred_at=at, kind="observation", speaker=m.get("speaker")
        )
        assert result.id is not None, result
        to_id[result.id] = m["id"]

    def rank(query: str) -> list[str]:
        hits = mem.peek(query, agent=agent, k=len(to_id), preset=preset)
        return [to_id[h.record.id] for h in hits]

    return rank


def now_of(scenario: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(scenario["now"]) if "now" in scenario else T0 + timedelta(days=30)


def evaluate(systems: dict[str, Ranker], scenario: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for q in scenario["questions"]:
        for name, rank in systems.items():
            ranking = rank(q["text"])
            first = next((i for i, r in enumerate(ranking, 1) if r in q["gold"]), None)
            rows.append({
                "system": name, "language": scenario["language"], "shape": scenario["shape"],
                "scenario": scenario["scenario"],
                "split": q["split"], "hit@1": 1.0 if first == 1 else 0.0,
                "mrr": 0.0 if first is None else 1.0 / first, "question": q["text"],
                "top": ranking[0],
            })  # fmt: skip
    return rows


def table(rows: list[dict[str, Any]], by: str, metric: str) -> list[str]:
    systems = list(dict.fromkeys(r["system"] for r in rows))
    groups = list(dict.fromkeys(r[by] for r in rows))
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        cells[(r["system"], r[by])].append(r[metric])
        cells[(r["system"], "all")].append(r[metric])
    head = f"| system | {' | '.join(groups)} | all |"
    out = [head, "|---|" + "---:|" * (len(groups) + 1)]
    for s in systems:
        values = [np.mean(cells[(s, g)]) for g in [*groups, "all"]]
        out.append(f"| {s} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("onnx", "torch"), default="onnx")
    parser.add_argument("--name", default="multilingual")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    model = CachedEmbedder(backend=args.backend)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n, scenario in enumerate(data["scenarios"]):
            ids = [m["id"] for m in scenario["memories"]]
            texts = [m["text"] for m in scenario["memories"]]
            agent = f"{scenario['language']}-{scenario['scenario']}"
            now = now_of(scenario)
            with (
                Memory.open(Path(tmp) / f"d{n}.db", embedder=model, clock=SimClock(now)) as dense,
                Memory.open(Path(tmp) / f"w{n}.db", embedder=None, clock=SimClock(now)) as lexical,
                Memory.open(Path(tmp) / f"t{n}.db", embedder=model, clock=SimClock(now)) as untimed,
            ):  # fmt: skip
                systems = {
                    "chronomem default": chronomem_ranker(dense, agent, scenario),
                    "chronomem, embedder=None": chronomem_ranker(lexical, agent, scenario),
                    "chronomem default, no time cue": chronomem_ranker(
                        untimed, agent, scenario, preset=UNTIMED
                    ),
                    "word BM25": bm25_ranker(ids, [words(t) for t in texts], words),
                    "character-bigram BM25": bm25_ranker(ids, [bigrams(t) for t in texts], bigrams),
                    "cosine": cosine_ranker(ids, model.embed(texts), lambda q: model.embed([q])[0]),
                }
                rows += evaluate(systems, scenario)
    model.save()
    elapsed = time.perf_counter() - started
    lines = [
        "# Multilingual retrieval (bench/multilingual.py)",
        "",
        f"`python bench/multilingual.py --backend {args.backend}` — {machine()['date']}, revision "
        f"{machine()['revision']}; model: {model.backend}; {len(data['scenarios'])} scenarios, "
        f"{sum(len(s['questions']) for s in data['scenarios'])} questions, fifteen memories each; "
        f"{elapsed:.0f} s.",
        "",
        "## hit@1 by language",
        "",
        *table(rows, "language", "hit@1"),
        "",
        "## hit@1 by split (dev: used while choosing; test: kept out)",
        "",
        *table(rows, "split", "hit@1"),
        "",
        "## hit@1 by scenario",
        "",
        *table(rows, "scenario", "hit@1"),
        "",
        "## hit@1 by shape",
        "",
        *table(rows, "shape", "hit@1"),
        "",
        "## MRR by language",
        "",
        *table(rows, "language", "mrr"),
        "",
        "## Misses of chronomem default",
        "",
        *(
            f"- {r['language']} {r['split']}: {r['question']} → {r['top']}"
            for r in rows
            if r["system"] == "chronomem default" and r["hit@1"] < 1
        ),
    ]
    write_results(args.name, {"machine": machine(), "rows": rows}, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
