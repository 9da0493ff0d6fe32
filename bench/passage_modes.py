"""Passage modes (issue 18): how each way of making a record's passage vectors scores on the quality
benchmarks, ``chronomem default`` only, on the same MiniLM vectors.

Modes (record vector / passage vectors):

- ``sentences``: the whole text / each sentence embedded on its own (today);
- ``none``: the whole text / no passages;
- ``derived``: the normalised mean of its sentences' vectors / each sentence on its own;
- ``late``: the whole text / late chunking: the model run once over the whole record (256-token
  windows), its token vectors pooled over each sentence;
- ``late-prefix``: the same, each sentence's tokens pooled with the speaker prefix's;
- ``late-first``: late chunking of the first window only (sentences past it: no passage);
- ``late-tail``: late chunking for the sentences wholly in the first window, the others
  embedded on their own;
- ``long:N``: only the sentences of at least N words embedded on their own;
- ``MODE+long:N``: MODE, its passages of fewer than N words dropped;
- ``derived-first-w``: ``derived-first`` with each sentence weighted by its length in characters;
- ``derived-first``: ``derived`` over the sentences that start in the first 254 tokens only (the
  whole text's window), the others without a passage.

Record vectors and sentence vectors come from bench/_quality.py's cache (torch); late chunking
from bench/_late.py (ONNX fp32, cosine 0.9999998 to torch on whole texts).

    python bench/passage_modes.py --bench locomo|longmemeval --modes sentences,none,late
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo
import longmemeval
from _late import LateChunker
from _quality import CachedEmbedder, mean, metrics
from chronomem import Memory, SimClock
from chronomem.text import passage_spans, passages

MODES = ("sentences", "none", "derived", "derived-first", "late", "late-prefix", "late-first",
         "late-tail")  # fmt: skip


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


class ModeEmbedder:
    """The cached embedder, but a record's own vector and its passages' vectors as ``mode``
    makes them, for the record ``texts``: the engine (with ``passages="sentences"``, whatever
    its default) asks for a record and its passages (``passages(text)``) in one call, or for
    its passages alone when the record is written with its vector."""

    def __init__(
        self, inner: CachedEmbedder, late: LateChunker | None, mode: str, records: set[str]
    ) -> None:
        self.inner, self.late, self.mode, self.records = inner, late, mode, records
        self.owner: dict[tuple[str, ...], str] = {}
        self.tokenizer: Any = None

    def first(self, text: str) -> np.ndarray:
        """Which passages start in the first window of the whole text's tokens."""
        if self.tokenizer is None:
            from tokenizers import Tokenizer

            from chronomem.embedders.sentence_transformers import bundled_model_path

            self.tokenizer = Tokenizer.from_file(str(bundled_model_path() / "tokenizer.json"))
            self.tokenizer.no_truncation()
        offsets = self.tokenizer.encode(text).offsets[1:-1]
        limit = offsets[254][0] if len(offsets) > 254 else len(text)
        return np.asarray([s < limit for s, _ in passage_spans(text)], bool)

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def save(self) -> None:
        self.inner.save()

    def record(self, text: str) -> np.ndarray:
        split = passages(text)
        self.owner.setdefault(tuple(split), text)
        if "+" in self.mode:
            return ModeEmbedder(
                self.inner, self.late, self.mode.split("+")[0], self.records
            ).record(text)
        if self.mode == "derived" and split:
            return _unit(self.inner.embed(split).mean(axis=0))
        if self.mode == "derived-first" and split:
            return _unit(self.inner.embed(split)[self.first(text)].mean(axis=0))
        if self.mode == "derived-first-w" and split:
            kept = self.first(text)
            weights = np.asarray([e - s for s, e in passage_spans(text)], float)[kept]
            return _unit(weights @ self.inner.embed(split)[kept])
        return self.inner.embed([text])[0]

    def parts(self, text: str) -> np.ndarray:
        split = passages(text)
        whole = self.inner.embed([text])[0]
        mode = self.mode
        if "+long:" in mode:
            base, n = mode.split("+long:")
            inner = ModeEmbedder(self.inner, self.late, base, self.records)
            own, record = inner.parts(text), inner.record(text)
            words = [len(text[s:e].split()) for s, e in passage_spans(text)]
            return np.stack([v if w >= int(n) else record for v, w in zip(own, words, strict=True)])
        if mode in ("sentences", "derived"):
            return self.inner.embed(split)
        if mode in ("derived-first", "derived-first-w"):
            own = self.inner.embed(split)
            return np.where(self.first(text)[:, None], own, self.record(text)[None])
        if mode == "none":
            return np.repeat(whole[None], len(split), axis=0)
        if mode.startswith("long:"):
            n = int(mode.split(":")[1])
            own = self.inner.embed(split)
            words = [len(text[s:e].split()) for s, e in passage_spans(text)]
            return np.stack([v if w >= n else whole for v, w in zip(own, words, strict=True)])
        assert self.late is not None
        late = self.late[text]
        if mode == "late":
            return late["late"]
        if mode == "late-prefix":
            return late["late_prefix"]
        if mode == "late-first":
            first = late["late_first"]
            return np.where(np.isnan(first[:, :1]), whole[None], first).astype(np.float32)
        if mode == "late-tail":
            own = self.inner.embed(split)
            return np.where(late["inside"][:, None], late["late_first"], own).astype(np.float32)
        raise SystemExit(f"unknown mode {mode!r}")

    def embed(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if len(texts) > 1 and texts[0] in self.records and texts[1:] == passages(texts[0]):
            return np.concatenate([self.record(texts[0])[None], self.parts(texts[0])])
        if texts and all(t in self.records for t in texts):
            return np.stack([self.record(t) for t in texts])
        owner = self.owner.get(tuple(texts)) if texts else None
        if owner is not None:
            return self.parts(owner)
        return self.inner.embed(texts, progress=progress)


def run_locomo(embedder: ModeEmbedder, tmp: Path) -> dict[str, float]:
    rows = []
    for conv in locomo.load(locomo.DATA):
        clock = SimClock(conv.turns[0].at)
        mem = Memory.open(
            tmp / f"{conv.sample_id}.db", embedder=embedder, clock=clock, synchronous="NORMAL",
            passages="sentences",
        )  # fmt: skip
        vectors = embedder.embed([t.text for t in conv.turns])
        id_of = {}
        for turn, vector in zip(conv.turns, vectors, strict=True):
            clock.set(turn.at)
            rid = mem.remember(turn.text, agent="memory", importance=5, embedding=vector).id
            id_of[rid] = turn.dia_id
        clock.set(conv.last + locomo.timedelta(days=1))
        qvecs = embedder.inner.embed([q["question"] for q in conv.qa])
        for q, qv in zip(conv.qa, qvecs, strict=True):
            if q["category"] not in (1, 2, 3, 4):
                continue
            hits = mem.peek(
                q["question"], agent="memory", k=20, preset="default", query_embedding=qv
            )
            rows.append(
                {
                    "held_out": conv.sample_id not in locomo.TUNING,
                    **metrics([id_of[h.record.id] for h in hits], set(q["evidence"])),
                }
            )
        mem.close()
    strip = [{k: v for k, v in r.items() if k != "held_out"} for r in rows]
    held = [s for s, r in zip(strip, rows, strict=True) if r["held_out"]]
    return {
        "locomo R@10 all ten": mean(strip)["recall@10"],
        "locomo R@10 held-out five": mean(held)["recall@10"],
        "locomo MRR all ten": mean(strip)["mrr"],
    }


def run_longmemeval(embedder: ModeEmbedder, tmp: Path) -> dict[str, float]:
    longmemeval.SYSTEMS = ("chronomem default",)
    questions = json.loads(longmemeval.DATA.read_text())
    # the modes make the vectors: the engine asks for a record's and all its passages'
    rows = longmemeval.run(questions, embedder, tmp, passages_mode="sentences")  # type: ignore[arg-type]
    s = longmemeval.summarise(rows)["chronomem default"]
    return {
        "lme KU newest first": s["knowledge-update"]["ku_newest_first"],
        "lme KU MRR": s["knowledge-update"]["ku_newest_mrr"],
        "lme ssa turn R@5": s["single-session-assistant"]["turn_recall@5"],
        "lme turn R@5 all": s["all"]["turn_recall@5"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", choices=("locomo", "longmemeval"), required=True)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--out", type=Path, help="append the rows (JSON lines) here")
    parser.add_argument(
        "--extra", type=Path,
        help="an npz (keys: sha1 of the text, vectors) of vectors made elsewhere (the ONNX fp32 "
        "backend), read before embedding; the cache is then not saved",
    )  # fmt: skip
    args = parser.parse_args()
    if args.bench == "locomo":
        texts = [t.text for c in locomo.load(locomo.DATA) for t in c.turns]
    else:
        questions = json.loads(longmemeval.DATA.read_text())
        texts = [
            f"{t['role']}: {t['content']}"
            for q in questions
            for s in q["haystack_sessions"]
            for t in s
        ]
    inner = CachedEmbedder()
    if args.extra:
        data = np.load(args.extra)
        for key, vector in zip(data["keys"].tolist(), data["vectors"], strict=True):
            inner._vectors.setdefault(key, vector)
        inner.save = lambda: None  # type: ignore[method-assign]
    inner.embed(texts, progress=True)
    inner.embed([p for t in texts for p in passages(t)], progress=True)
    inner.save()
    modes = args.modes.split(",")
    late = None
    if any(m.startswith("late") for m in modes):
        late = LateChunker()
        late.get(texts, progress=True)
        late.save()
    for mode in modes:
        embedder = ModeEmbedder(inner, late, mode, set(texts))
        with tempfile.TemporaryDirectory(prefix="chronomem-modes-") as tmp:
            run = run_locomo if args.bench == "locomo" else run_longmemeval
            result = {"bench": args.bench, "mode": mode, **run(embedder, Path(tmp))}
        print(json.dumps(result), flush=True)
        if args.out:
            with args.out.open("a") as handle:
                handle.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
