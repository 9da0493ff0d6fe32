"""ONNX Runtime primitives shared by the export check and the embedder: a one-model session on the
CPU, the tokenizer of a sentence-transformers folder, and mean pooling. No torch here."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.errors import ConfigError, EmbedderError

__all__ = ["INPUTS", "length_batches", "load_tokenizer", "mean_pool", "open_session"]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
HINT = "install the onnx extra: pip install torch==2.13.0 'chronomem[onnx]'"


def open_session(path: Path, num_threads: int | None) -> Any:
    """An ONNX Runtime CPU session for the model file ``path``, with every graph optimisation and
    ``num_threads`` threads within an operator (``None``: the runtime's default)."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        raise ConfigError(f"onnxruntime is not installed; {HINT}") from exc
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only: the optimiser's notes are not the user's
    if num_threads is not None:
        options.intra_op_num_threads = num_threads
        options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own types; translate once here
        raise EmbedderError(f"cannot load the ONNX model {path}: {exc}") from exc


def load_tokenizer(folder: Path) -> tuple[Any, int]:
    """The fast tokenizer of a sentence-transformers folder (``tokenizer.json``), truncating at the
    model's ``max_seq_length`` like sentence-transformers does; returns it and that length."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ConfigError(f"the tokenizers package is not installed; {HINT}") from exc
    config = folder / "sentence_bert_config.json"
    max_length = (
        int(json.loads(config.read_text()).get("max_seq_length", 512))
        if (config.is_file())
        else 512
    )
    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(f"{folder} has no tokenizer.json; the ONNX backend needs one")
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # batches are padded by the caller, to their own longest text
    return tokenizer, max_length


def mean_pool(hidden: npt.NDArray[Any], mask: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """Mean of the token vectors under ``mask``, unit-normalised (sentence-transformers'
    Pooling(mean) + Normalize)."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden.astype(np.float32) * weights).sum(axis=1)
    vectors = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.clip(norms, 1e-12, None), dtype=np.float32)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """The positions of texts of these token ``lengths``, grouped into runs: longest first (as
    sentence-transformers does), at most ``batch_size`` per run, and a new run as soon as a text
    is under half the run's longest, so padding never more than doubles a run's tokens. A record
    of 256 tokens embedded with its 20 one-line passages would otherwise pad them all to 256 (a
    remember of a long turn: 1.36 s instead of 0.23 s, bench/serve.py); the vectors are the same,
    padding is masked."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    runs: list[list[int]] = []
    for i in order:
        if runs and len(runs[-1]) < batch_size and 2 * lengths[i] >= lengths[runs[-1][0]]:
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs
