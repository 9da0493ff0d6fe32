"""Keyword importance in Korean, Japanese and Chinese: what the rules' CJK words add.

``bench/data/importance_cjk.jsonl`` holds 60 memories (20 per language) labelled 1..10 on the
Generative Agents poignancy scale with the same rubric as the English labels (docs/reflection.md),
split once into halves. The rules' Korean, Japanese and Chinese words were translated from the
English rule words, not taken from these memories; they were written by the same hand, so the
figures say the translation works, not that it generalises as far as the English rules were
measured to. Scored by ``HeuristicImportance()`` and by ``HeuristicImportance(cjk=False)`` (the
English words only: what such a text got before issue 27, and what an English model's anchor
scorer falls back to for a language it does not read). No model is loaded.

    python bench/importance_languages.py

Writes ``bench/results/importance_languages.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine, write_results
from chronomem import HeuristicImportance
from importance import kendall_tau_b, spearman

LABELS = Path(__file__).resolve().parent / "data" / "importance_cjk.jsonl"


def main() -> int:
    # no options: --help describes the run instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    rows = [json.loads(line) for line in LABELS.read_text("utf-8").splitlines() if line.strip()]
    labels = np.array([r["importance"] for r in rows], np.float64)
    scorers = {
        "rules with CJK words": HeuristicImportance(),
        "English words only": HeuristicImportance(cjk=False),
    }
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, scorer in scorers.items():
        scores = np.array(scorer.score([r["text"] for r in rows]), np.float64)
        table[name] = {}
        for part in ("held_out", "all"):
            for language in ("ko", "ja", "zh", "all"):
                mask = np.array(
                    [
                        (part == "all" or r["split"] == part)
                        and (language == "all" or r["language"] == language)
                        for r in rows
                    ]
                )
                table[name][f"{part} {language}"] = {
                    "spearman": spearman(scores[mask], labels[mask]),
                    "kendall_tau_b": kendall_tau_b(scores[mask], labels[mask]),
                    "mae": float(np.mean(np.abs(scores[mask] - labels[mask]))),
                    "distinct": float(len(set(scores[mask].tolist()))),
                    "n": float(mask.sum()),
                }
    info = machine()
    lines = [
        "# Keyword importance in Korean, Japanese and Chinese",
        "",
        f"`python bench/importance_languages.py` — revision {info['revision']}, {info['date']}. "
        f"{len(rows)} memories (`bench/data/importance_cjk.jsonl`), 20 per language, half held "
        "out; Spearman rho (0 when a scorer gives one value to all), Kendall tau-b, mean absolute "
        "error, distinct values.",
        "",
        "| scorer | memories | n | Spearman | Kendall tau-b | MAE | distinct |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, parts in table.items():
        for part, m in parts.items():
            lines.append(
                f"| {name} | {part.replace('_', '-')} | {m['n']:.0f} | {m['spearman']:.3f} | "
                f"{m['kendall_tau_b']:.3f} | {m['mae']:.2f} | {m['distinct']:.0f} |"
            )
    write_results(
        "importance_languages",
        {"command": "python bench/importance_languages.py", "machine": info, "table": table},
        lines,
    )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
