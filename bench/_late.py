"""Late chunking for the passage-mode experiments (issue 18): run all-MiniLM-L6-v2 (ONNX fp32, one
thread) once over each whole record, in 256-token windows when it is longer, and pool its token
vectors over each passage's token span. Cached on disk by text (``bench/.cache/late.pkl``)."""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.embedders.onnx_runtime import OnnxEmbedder
from chronomem.embedders.onnx_session import length_batches
from chronomem.text import passage_spans

CACHE = Path(__file__).resolve().parent / ".cache" / "late.pkl"
WIDTH = 256  # the model's max_seq_length: [CLS] + 254 tokens + [SEP]


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


class LateChunker:
    """Per record text: ``record`` (mean pool of the first window: today's record vector),
    ``record_all`` (mean over every window's tokens), and per passage ``late`` (its tokens'
    mean over all windows), ``late_first`` (over the first window's tokens only; NaN when it
    has none there), ``late_prefix`` (its tokens and the speaker prefix's), ``inside`` (it lies
    wholly in the first window)."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        self.model = OnnxEmbedder(num_threads=1).prepare()
        self.tokenizer = Tokenizer.from_file(str(self.model._path / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.cache: dict[str, dict[str, Any]] = {}
        if CACHE.exists():
            self.cache = pickle.loads(CACHE.read_bytes())
        self.dirty = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def get(self, texts: Sequence[str], *, chunk: int = 64, progress: bool = False) -> None:
        todo = list(dict.fromkeys(t for t in texts if self.key(t) not in self.cache))
        for start in range(0, len(todo), chunk):
            self._compute(todo[start : start + chunk])
            if progress and start % (chunk * 20) == 0:
                print(f"  late: {start + chunk}/{len(todo)}", flush=True)
        self.dirty |= bool(todo)

    def save(self) -> None:
        if self.dirty:
            if CACHE.exists():
                for k, v in pickle.loads(CACHE.read_bytes()).items():
                    self.cache.setdefault(k, v)
            partial = CACHE.with_suffix(".tmp")
            partial.write_bytes(pickle.dumps(self.cache))
            partial.replace(CACHE)
            self.dirty = False

    def __getitem__(self, text: str) -> dict[str, Any]:
        return self.cache[self.key(text)]

    def _compute(self, texts: list[str]) -> None:
        encodings = self.tokenizer.encode_batch(texts)
        cls, sep = encodings[0].ids[0], encodings[0].ids[-1]
        windows: list[tuple[int, int, list[int]]] = []  # (text, window, ids)
        for i, e in enumerate(encodings):
            content = e.ids[1:-1]
            step = WIDTH - 2
            for w, s in enumerate(range(0, max(len(content), 1), step)):
                windows.append((i, w, [cls, *content[s : s + step], sep]))
        hidden: dict[tuple[int, int], np.ndarray] = {}
        for rows in length_batches([len(w[2]) for w in windows], 64):
            width = max(len(windows[r][2]) for r in rows)
            ids = np.zeros((len(rows), width), np.int64)
            mask = np.zeros_like(ids)
            for j, r in enumerate(rows):
                ids[j, : len(windows[r][2])] = windows[r][2]
                mask[j, : len(windows[r][2])] = 1
            out = self.model._session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            for j, r in enumerate(rows):
                hidden[windows[r][:2]] = out[j, : len(windows[r][2])].astype(np.float32)
        for i, (text, e) in enumerate(zip(texts, encodings, strict=True)):
            parts = [hidden[(i, w)] for w in range(len([x for x in windows if x[0] == i]))]
            record = _unit(parts[0].mean(axis=0))
            content = np.concatenate([p[1:-1] for p in parts])
            offsets = e.offsets[1:-1]
            starts = np.asarray([a for a, _ in offsets])
            ends = np.asarray([b for _, b in offsets])
            spans = passage_spans(text)
            body = spans[0][0] if spans else 0
            prefix = ends <= body
            late, first, with_prefix, inside = [], [], [], []
            for s, t in spans:
                tokens = (starts < t) & (ends > s)
                idx = np.flatnonzero(tokens)
                if not idx.size:  # no token of its own: it is the record
                    idx = np.arange(min(len(content), WIDTH - 2))
                late.append(_unit(content[idx].mean(axis=0)))
                head = idx[idx < WIDTH - 2]
                first.append(
                    _unit(content[head].mean(axis=0)) if head.size else np.full(384, np.nan)
                )
                with_prefix.append(_unit(content[np.flatnonzero(tokens | prefix)].mean(axis=0)))
                inside.append(bool(idx.size) and int(idx.max()) < WIDTH - 2)
            self.cache[self.key(text)] = {
                "record": record,
                "record_all": _unit(content.mean(axis=0)) if content.size else record,
                "late": np.asarray(late, np.float32),
                "late_first": np.asarray(first, np.float32),
                "late_prefix": np.asarray(with_prefix, np.float32),
                "inside": np.asarray(inside, bool),
                "tokens": len(e.ids),
            }
