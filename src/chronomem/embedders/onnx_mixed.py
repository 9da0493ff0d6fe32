"""The default ONNX model's precision: int8 where it is safe, fp32 where it is not.

A rewrite of a fused BERT graph (``MultiHeadAttention``, separate Q/K/V products): the query, key
and value projections, the attention output and the FFN input projection run as u8 x s8 integer
products (``MatMulIntegerToFloat``, VNNI on x86), with

- weights quantised per output channel (symmetric int8),
- activations quantised per token at run time (a scale for each row, not one for the batch), and
- SmoothQuant factors ``s_k = max|x_k|^a / max|w_k|^(1-a)`` per input channel, calibrated on a few
  texts when the model is built, that move the activations' outlier channels into the weights.

The FFN output projection (its input is GELU's long-tailed output) stays fp32: quantised, it
alone costs more agreement with fp32 than the rest together. Measured on the bundled
all-MiniLM-L6-v2 (bench/results/embedding.md): cosine to torch >= 0.999 on every text, where
dynamic per-tensor int8 of the same products reaches only 0.98-0.99. Measured on AVX-512 VNNI
only: on x86 CPUs without VNNI, ONNX Runtime's u8 x s8 kernels add pairs of products in 16 bits,
which can saturate; the probe check when the model is built is what guards them (the fp32 model
runs if it fails).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ALPHA", "mix_precision"]

ALPHA = 0.5  # SmoothQuant's migration strength: 0 leaves activations alone, 1 moves it all
_FP32_KEEP = ("output/dense",)  # the FFN output projection (attention/output/dense is quantised)


def _quantised(name: str) -> bool:
    return "attention/output/dense" in name or not any(k in name for k in _FP32_KEEP)


def mix_precision(
    source: Path, target: Path, *, calibration: Iterable[dict[str, npt.NDArray[Any]]]
) -> dict[str, int]:
    """Rewrite the fused fp32 model ``source`` into ``target`` (see the module docstring), with
    smoothing factors from running ``source`` on the ``calibration`` batches. Returns how many
    matrix products became int8 and how many stayed fp32."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    targets = [
        node
        for node in graph.node
        if node.op_type == "MatMul" and node.input[1] in weights and _quantised(node.name)
    ]
    ranges = _activation_ranges(source, sorted({n.input[0] for n in targets}), calibration)
    _constants(graph)
    chosen = {id(node): i for i, node in enumerate(targets)}
    nodes: list[Any] = []
    for node in graph.node:
        if id(node) not in chosen:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        x = node.input[0]
        nodes += _int8_product(graph, f"mixed{chosen[id(node)]}", x, node.output[0], w, ranges[x])
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    keep = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    onnx.save(model, str(target))
    return {"int8_products": len(targets), "fp32_products": _count_products(graph)}


def _count_products(graph: Any) -> int:
    return sum(node.op_type == "MatMul" for node in graph.node)


def _activation_ranges(
    source: Path, names: list[str], calibration: Iterable[dict[str, npt.NDArray[Any]]]
) -> dict[str, npt.NDArray[np.float32]]:
    """max |x_k| over the calibration batches' real tokens, per input channel of each tensor."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    model = onnx.load(str(source))
    model.graph.output.extend(
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in names
    )
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])
    ranges: dict[str, npt.NDArray[np.float32]] = {}
    for inputs in calibration:
        real = inputs["attention_mask"].astype(bool)
        for name, value in zip(names, session.run(names, inputs), strict=True):
            peak = np.abs(value[real]).max(axis=0)
            ranges[name] = np.maximum(ranges[name], peak) if name in ranges else peak
    return ranges


def _constants(graph: Any) -> None:
    from onnx import numpy_helper

    for name, value in (
        ("mixed_one", np.array(1.0, np.float32)),
        ("mixed_zero_point", np.array(128, np.uint8)),
        ("mixed_inv127", np.array(1 / 127, np.float32)),
        ("mixed_eps", np.array(1e-8, np.float32)),
        ("mixed_axis1", np.array([1], np.int64)),
    ):
        graph.initializer.append(numpy_helper.from_array(value, name))


def _int8_product(
    graph: Any,
    p: str,
    x: str,
    output: str,
    w: npt.NDArray[np.float32],
    x_range: npt.NDArray[np.float32],
) -> list[Any]:
    """The nodes computing ``output = x @ w`` as above."""
    from onnx import helper, numpy_helper

    k, n = w.shape
    smooth = np.maximum(x_range, 1e-5) ** ALPHA / np.maximum(np.abs(w).max(axis=1), 1e-5) ** (
        1 - ALPHA
    )
    w = w * smooth[:, None]
    w_scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
    w_int8 = np.clip(np.round(w / w_scale), -127, 127).astype(np.int8)
    for suffix, value in (
        ("w", w_int8),
        ("w_scale", w_scale.astype(np.float32)),
        ("inv_smooth", (1.0 / smooth).astype(np.float32)),
        ("rows", np.array([-1, k], np.int64)),
        ("cols", np.array([n], np.int64)),
    ):
        graph.initializer.append(numpy_helper.from_array(value, f"{p}_{suffix}"))
    node = helper.make_node
    return [
        node("Reshape", [x, f"{p}_rows"], [f"{p}_x2"]),
        node("Mul", [f"{p}_x2", f"{p}_inv_smooth"], [f"{p}_xs"]),
        node("Abs", [f"{p}_xs"], [f"{p}_abs"]),
        node("ReduceMax", [f"{p}_abs"], [f"{p}_amax"], axes=[1], keepdims=0),
        node("Max", [f"{p}_amax", "mixed_eps"], [f"{p}_amax2"]),
        node("Mul", [f"{p}_amax2", "mixed_inv127"], [f"{p}_scale"]),  # one scale per token
        node("Shape", [f"{p}_scale"], [f"{p}_tokens"]),
        node("Expand", ["mixed_zero_point", f"{p}_tokens"], [f"{p}_zp"]),
        node("QuantizeLinear", [f"{p}_xs", f"{p}_scale", f"{p}_zp"], [f"{p}_xq"], axis=0),
        node(
            "MatMulIntegerToFloat",
            [f"{p}_xq", f"{p}_w", "mixed_one", f"{p}_w_scale", "mixed_zero_point"],
            [f"{p}_y0"],
            domain="com.microsoft",
        ),
        node("Unsqueeze", [f"{p}_scale", "mixed_axis1"], [f"{p}_scale2"]),
        node("Mul", [f"{p}_y0", f"{p}_scale2"], [f"{p}_y1"]),
        node("Shape", [x], [f"{p}_lead"], end=-1),
        node("Concat", [f"{p}_lead", f"{p}_cols"], [f"{p}_shape"], axis=0),
        node("Reshape", [f"{p}_y1", f"{p}_shape"], [output]),
    ]
