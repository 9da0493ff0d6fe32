"""Exporting a sentence-transformers model to ONNX, once, offline, from its local weights.

Needs torch and transformers (the ``embeddings`` extra) and ``onnx`` (the ``onnx`` extra); the
export runs only when the cache holds no model for these weights, so a process that finds one
never imports torch. Every export is checked before it enters the cache: ONNX Runtime's vectors
for a set of probe texts must agree with torch's (cosine >= :data:`MIN_AGREEMENT` for fp32);
files are written to a temporary name and renamed, so concurrent processes never see half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.embedders.onnx_session import HINT, INPUTS, mean_pool, open_session
from chronomem.errors import ConfigError, EmbedderError

__all__ = ["MIN_AGREEMENT", "PROBES", "export_onnx", "quantize_onnx", "write_manifest"]

MIN_AGREEMENT = 0.999


# Short and long, plain and odd: the export is refused unless every one agrees with torch.
PROBES = (
    "hello world",
    "The physician told me to rest my leg for two weeks.",
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful!",
    "",
    "¿Dónde está la biblioteca? 東京 — naïve café, 3.14159 and :-) ?!",
    " ".join(["The council debated the grain tariffs until dawn, then voted."] * 40),
)


@contextlib.contextmanager
def _atomic(target: Path) -> Iterator[Path]:
    """A temporary path beside ``target``, renamed onto it when the block succeeds."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _torch_vectors(model: Any, encoded: dict[str, Any]) -> npt.NDArray[np.float32]:
    import torch

    with torch.no_grad():
        hidden = model(**encoded).last_hidden_state
    return mean_pool(hidden.numpy(), encoded["attention_mask"].numpy())


def export_onnx(
    source: Path,
    target: Path,
    *,
    max_seq_length: int,
    num_threads: int | None = None,
    mixed: Path | None = None,
) -> dict[str, Any]:
    """Export the transformer of the model folder ``source`` to ``target`` (fp32), and with
    ``mixed`` the mixed-precision model there, each after checking it against torch on
    :data:`PROBES`. Returns what was checked (for ``export.json``).

    Raises:
        ConfigError: torch, transformers or onnx is not installed.
        EmbedderError: the export failed, or its vectors disagree with torch's.
    """
    try:
        import onnx  # noqa: F401  (the exporter needs it)
        import torch
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise ConfigError(f"exporting the model to ONNX needs {exc.name}; {HINT}") from exc
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        # Eager attention exports the classic graph that ONNX Runtime fuses into its Attention op.
        bert = AutoModel.from_pretrained(
            str(source), local_files_only=True, attn_implementation="eager"
        ).eval()
    except Exception as exc:  # transformers raises many types; translate once here
        raise EmbedderError(f"cannot load {source} for the ONNX export: {exc}") from exc

    class Encoder(torch.nn.Module):  # positional inputs, one output: what the exporter wants
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    def encode(texts: Sequence[str]) -> dict[str, Any]:
        return dict(
            tokenizer(
                list(texts), padding=True, truncation=True, max_length=max_seq_length,
                return_tensors="pt",
            )
        )  # fmt: skip

    sample = encode(PROBES[:2])
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    probes = encode(PROBES)
    inputs = {name: probes[name].numpy() for name in INPUTS}
    expected = _torch_vectors(bert, probes)
    manifest: dict[str, Any] = {"source": str(source), "torch": torch.__version__, "opset": 17}
    with _atomic(target) as tmp:
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notes
                torch.onnx.export(
                    Encoder().eval(), tuple(sample[name] for name in INPUTS), str(tmp),
                    input_names=list(INPUTS), output_names=["last_hidden_state"],
                    dynamic_axes=axes, opset_version=17, dynamo=False,
                )  # fmt: skip
            if mixed is not None:
                manifest["mixed"] = _build_mixed(
                    tmp, mixed, bert.config, expected, inputs, num_threads
                )
            manifest["fused"] = _fuse(tmp, tmp, bert.config, multi_head=False)
        except Exception as exc:
            if mixed is not None:
                mixed.unlink(missing_ok=True)  # never a mixed model without its fp32 export
            if isinstance(exc, EmbedderError):
                raise
            raise EmbedderError(f"the ONNX export of {source} failed: {exc}") from exc
        agreement = _agreement(expected, tmp, inputs, num_threads)
        if agreement < MIN_AGREEMENT:
            if mixed is not None:
                mixed.unlink(missing_ok=True)  # never a mixed model without its fp32 export
            raise EmbedderError(
                f"the ONNX export of {source} disagrees with torch (cosine "
                f"{agreement:.6f} < {MIN_AGREEMENT}); it was not cached"
            )
    return {**manifest, "probe_min_cosine": agreement}


def _build_mixed(
    raw: Path,
    target: Path,
    config: Any,
    expected: npt.NDArray[np.float32],
    inputs: dict[str, npt.NDArray[Any]],
    num_threads: int | None,
) -> dict[str, Any]:
    """The mixed-precision model (:mod:`chronomem.embedders.onnx_mixed`) from the exported graph
    ``raw``, calibrated on the probes, cached at ``target`` only if every probe agrees with torch
    to :data:`MIN_AGREEMENT` (else the fp32 model stays the default; the record says why)."""
    if getattr(config, "model_type", None) != "bert":
        return {"cached": False, "reason": "not a BERT graph"}
    from chronomem.embedders.onnx_mixed import mix_precision

    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=".mixed."))
    try:
        fused, candidate = scratch / "fused.onnx", scratch / "mixed.onnx"
        _fuse(raw, fused, config, multi_head=True)
        counts = mix_precision(fused, candidate, calibration=[inputs])
        agreement = _agreement(expected, candidate, inputs, num_threads)
        cached = agreement >= MIN_AGREEMENT
        if cached:
            os.replace(candidate, target)
    except Exception as exc:  # an optional model: its failure must not cost the fp32 export
        return {"cached": False, "reason": f"{type(exc).__name__}: {exc}"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"cached": cached, "probe_min_cosine": agreement, **counts}


def _agreement(
    expected: npt.NDArray[np.float32],
    path: Path,
    inputs: dict[str, npt.NDArray[Any]],
    num_threads: int | None,
) -> float:
    """The lowest cosine between ``expected`` and the vectors of the model at ``path``."""
    return float((expected * _session_vectors(path, inputs, num_threads)).sum(axis=1).min())


def _fuse(path: Path, target: Path, config: Any, *, multi_head: bool) -> dict[str, int]:
    """Fuse a BERT graph's attention, layer norms and GELU into ONNX Runtime's own operators,
    written to ``target`` (other architectures are copied as exported). ``multi_head``: attention
    as ``MultiHeadAttention`` after separate Q/K/V products (what the mixed model quantises), else
    ``Attention`` with its packed projection. Returns the fused operators' counts."""
    if getattr(config, "model_type", None) != "bert":
        if target != path:
            shutil.copyfile(path, target)
        return {}
    from onnxruntime.transformers.fusion_options import FusionOptions
    from onnxruntime.transformers.optimizer import optimize_model

    options = FusionOptions("bert")
    options.use_multi_head_attention = multi_head
    model = optimize_model(
        str(path), model_type="bert", num_heads=int(config.num_attention_heads),
        hidden_size=int(config.hidden_size), opt_level=1, use_gpu=False,
        optimization_options=options,
    )  # fmt: skip
    model.save_model_to_file(str(target))
    return {k: int(v) for k, v in model.get_fused_operator_statistics().items() if v}


def quantize_onnx(
    fp32: Path, target: Path, *, probes: dict[str, npt.NDArray[Any]], num_threads: int | None
) -> dict[str, Any]:
    """Dynamic int8 quantisation of ``fp32``'s matrix products and attention (weights per
    channel), written to ``target``. Its vectors differ from fp32's (about 0.98–0.99 cosine),
    which is why it records a model id of its own. Returns the probes' agreement with fp32."""
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError(f"int8 quantisation needs {exc.name}; {HINT}") from exc
    with _atomic(target) as tmp:
        try:
            quantize_dynamic(
                str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                op_types_to_quantize=["MatMul", "Attention"],
                extra_options={"DefaultTensorType": 1},  # FLOAT, for the fused operators
            )  # fmt: skip
        except Exception as exc:
            raise EmbedderError(f"int8 quantisation of {fp32} failed: {exc}") from exc
        agreement = (
            _session_vectors(fp32, probes, num_threads) * _session_vectors(tmp, probes, num_threads)
        ).sum(axis=1)
    return {"probe_min_cosine_to_fp32": float(agreement.min())}


def _session_vectors(
    path: Path, inputs: dict[str, npt.NDArray[Any]], num_threads: int | None
) -> npt.NDArray[np.float32]:
    hidden = open_session(path, num_threads).run(None, inputs)[0]
    return mean_pool(hidden, inputs["attention_mask"])


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """``export.json`` beside the models: what was exported, from what, and how it agreed."""
    with _atomic(path) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
