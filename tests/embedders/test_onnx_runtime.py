"""The ONNX Runtime backend of the real bundled all-MiniLM-L6-v2: exported from the bundled weights
into a temporary cache, compared with the torch backend text by text, and used on real stores.
Slow: loads torch for the export and the comparison."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronomem import EmbedderMismatchError, Memory
from chronomem.embedders import OnnxEmbedder, default_embedder
from chronomem.embedders.onnx_runtime import INT8_SUFFIX, _cache_key
from chronomem.embedders.sentence_transformers import DEFAULT_MODEL_ID
from chronomem.errors import ConfigError

# Short and long, chat and prose, empty, non-Latin, past the model's 256-token window.
TEXTS = [
    "hi",
    "",
    "Melanie: I signed up for a pottery class last week, it was so relaxing!",
    "What did the council decide about the grain tariffs after the flood?",
    "My doctor said I should not walk on my injured leg",
    "東京の天気は晴れです。 Ça va très bien, merci — naïve café №5 ✓",
    "3.14159 2.71828 1.41421 0.57721 ;;; ??? !!! --- ###",
    "Assistant: Here is a detailed plan. " + "First, review the budget and the schedule. " * 12,
    " ".join(f"token{i}" for i in range(600)),  # truncated at 256 tokens by both backends
    "The quarterly revenue of the shipping company grew by eight percent.\n\nNew paragraph.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_default(cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(cache_dir=cache, num_threads=1).prepare()


@pytest.fixture(scope="module")
def onnx_exact(cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(cache_dir=cache, num_threads=1, exact=True).prepare()


@pytest.fixture(scope="module")
def onnx_int8(cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(cache_dir=cache, num_threads=1, quantize=True).prepare()


@pytest.mark.slow
def test_the_default_mixed_model_agrees_with_torch_on_every_text(
    minilm, onnx_default: OnnxEmbedder
) -> None:  # type: ignore[no-untyped-def]
    # The mixed model runs where its integer products agree with torch on every probe; on a CPU
    # whose integer kernels do not (without VNNI, ORT's u8×s8 sums can saturate), the fp32 export.
    mixed = _mixed_manifest(onnx_default)
    if "probe_min_cosine" in mixed:  # else it could not be built here (its "reason" says why)
        assert mixed["cached"] is (mixed["probe_min_cosine"] >= 0.999)
    chosen = "model-mixed.onnx" if mixed["cached"] else "model.onnx"
    assert onnx_default.model_file.name == chosen
    expected = minilm.embed(TEXTS)
    got = onnx_default.embed(TEXTS)
    assert got.shape == (len(TEXTS), 384)
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)
    cosine = (expected * got).sum(axis=1)
    assert cosine.min() >= 0.999, dict(zip(TEXTS, cosine.tolist(), strict=True))
    # Order and batching do not change a vector: reversed, in batches of 3.
    small = OnnxEmbedder(cache_dir=onnx_default.cache_folder.parent.parent, batch_size=3)
    np.testing.assert_allclose(small.embed(TEXTS[::-1])[::-1], got, atol=1e-5)


def test_calls_from_several_threads_give_the_vectors_of_one_at_a_time(
    onnx_default: OnnxEmbedder,
) -> None:
    """The embedder says it is thread-safe (the engine then embeds before a handle's lock):
    calls from four threads at once give each text the vector it gets alone."""
    alone = [onnx_default.embed([t]) for t in TEXTS]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda t: onnx_default.embed([t]), TEXTS * 3))
    assert OnnxEmbedder.thread_safe is True
    for got, want in zip(together, alone * 3, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow
def test_exact_runs_the_fp32_export(minilm, onnx_exact: OnnxEmbedder) -> None:  # type: ignore[no-untyped-def]
    assert onnx_exact.model_file.name == "model.onnx"
    assert onnx_exact.model_id == DEFAULT_MODEL_ID
    cosine = (minilm.embed(TEXTS) * onnx_exact.embed(TEXTS)).sum(axis=1)
    assert cosine.min() >= 0.99999, dict(zip(TEXTS, cosine.tolist(), strict=True))


@pytest.mark.slow
def test_the_mixed_model_quantises_all_but_the_ffn_output(onnx_default: OnnxEmbedder) -> None:
    import onnx

    mixed = _mixed_manifest(onnx_default)
    if not mixed["cached"]:
        pytest.skip(
            f"the mixed model was not kept on this machine ({mixed}): the fp32 export runs, "
            "as the previous test checks"
        )
    assert mixed["probe_min_cosine"] >= 0.999
    graph = onnx.load(str(onnx_default.model_file), load_external_data=False).graph
    ops = Counter(node.op_type for node in graph.node)
    # Six layers: Q, K, V, attention output and FFN input in int8; the FFN output in fp32.
    assert ops["MatMulIntegerToFloat"] == 30 == mixed["int8_products"]
    assert ops["MatMul"] == 6 == mixed["fp32_products"]
    assert ops["MultiHeadAttention"] == 6
    fp32 = {n.name for n in graph.node if n.op_type == "MatMul"}
    assert all(name.endswith("/output/dense/MatMul") for name in fp32)
    assert not any("attention" in name for name in fp32)


def _mixed_manifest(embedder: OnnxEmbedder) -> dict[str, Any]:
    """What the export recorded of the mixed model (its probe agreement, whether it was kept)."""
    manifest = json.loads((embedder.cache_folder / "export.json").read_text())
    return manifest["fp32"]["mixed"]  # type: ignore[no-any-return]


@pytest.mark.slow
def test_a_mixed_model_that_cannot_be_built_leaves_the_fp32_export(
    minilm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from chronomem.embedders import onnx_mixed

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("a node this runtime does not name")

    monkeypatch.setattr(onnx_mixed, "mix_precision", broken)
    embedder = OnnxEmbedder(cache_dir=tmp_path, num_threads=1).prepare()
    assert embedder.model_file.name == "model.onnx"
    assert not (embedder.cache_folder / "model-mixed.onnx").exists()
    mixed = _mixed_manifest(embedder)
    assert mixed["cached"] is False
    assert "KeyError" in mixed["reason"]
    cosine = (minilm.embed(TEXTS) * embedder.embed(TEXTS)).sum(axis=1)
    assert cosine.min() >= 0.99999


def test_quantize_and_exact_exclude_each_other() -> None:
    with pytest.raises(ConfigError, match="exclude"):
        OnnxEmbedder(quantize=True, exact=True)


@pytest.mark.slow
def test_int8_is_close_but_recorded_as_another_model(minilm, onnx_int8: OnnxEmbedder) -> None:  # type: ignore[no-untyped-def]
    cosine = (minilm.embed(TEXTS) * onnx_int8.embed(TEXTS)).sum(axis=1)
    assert cosine.min() > 0.95
    assert onnx_int8.model_id == DEFAULT_MODEL_ID + INT8_SUFFIX
    assert onnx_int8.model_file.name == "model-int8.onnx"


@pytest.mark.slow
def test_stores_open_across_torch_mixed_and_exact_but_not_int8(  # type: ignore[no-untyped-def]
    minilm,
    onnx_default: OnnxEmbedder,
    onnx_exact: OnnxEmbedder,
    onnx_int8: OnnxEmbedder,
    tmp_path: Path,
) -> None:
    assert onnx_default.model_id == onnx_exact.model_id == minilm.model_id == DEFAULT_MODEL_ID
    torch_db, int8_db = tmp_path / "torch.db", tmp_path / "int8.db"
    with Memory.open(torch_db, embedder=minilm) as mem:
        leg = mem.remember("The physician told me to rest my leg for two weeks").id
        mem.remember("Tomatoes need six hours of direct sun every day")
    with Memory.open(torch_db, embedder=onnx_default) as mem:  # written by torch, read by ONNX
        hits = mem.peek("My doctor said I should not walk on my injured leg", k=1)
        assert hits[0].record.id == leg
        mem.remember("The quarterly revenue of the shipping company grew by eight percent")
    with Memory.open(torch_db, embedder=onnx_exact) as mem:
        assert len(mem.peek("my injured leg", k=3)) == 3
    with Memory.open(int8_db, embedder=onnx_int8) as mem:
        mem.remember("one")
    for embedder, db in (
        (onnx_int8, torch_db), (minilm, int8_db), (onnx_default, int8_db), (onnx_exact, int8_db)
    ):  # fmt: skip
        with pytest.raises(EmbedderMismatchError):
            Memory.open(db, embedder=embedder)


@pytest.mark.slow
def test_the_cache_is_reused_and_a_cached_model_runs_without_torch(
    onnx_default: OnnxEmbedder, cache: Path
) -> None:
    model = onnx_default.model_file
    before = model.stat().st_mtime_ns
    again = OnnxEmbedder(cache_dir=cache, num_threads=1).prepare()
    assert again.model_file == model
    assert model.stat().st_mtime_ns == before  # opened, not exported again
    assert (model.parent / "export.json").is_file()
    code = (
        "import sys; from chronomem.embedders import OnnxEmbedder;"
        f"e = OnnxEmbedder(cache_dir={str(cache)!r}, num_threads=1);"
        "v = e.embed(['hello world']);"
        "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.split() == ["(1,", "384)", "False", "False"]


def test_cache_key_follows_the_model_files(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"hidden_size": 384}')
    (folder / "model.safetensors").write_bytes(b"\1" * (3 << 20))
    first = _cache_key(folder)
    assert _cache_key(folder) == first
    (folder / "README.md").write_text("docs do not change the weights")
    assert _cache_key(folder) == first
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] = 2  # the last MiB is read
    (folder / "model.safetensors").write_bytes(bytes(weights))
    assert _cache_key(folder) != first


def test_backend_choice() -> None:
    with pytest.raises(ConfigError, match="onnx-int8"):
        default_embedder("tensorflow")
    assert isinstance(default_embedder("onnx"), OnnxEmbedder)
    assert default_embedder("onnx-int8").model_id == DEFAULT_MODEL_ID + INT8_SUFFIX
    assert type(default_embedder("torch")).__name__ == "SentenceTransformerEmbedder"
    assert isinstance(default_embedder("auto"), OnnxEmbedder)  # the onnx extra is installed here


def test_an_unusable_cache_is_a_config_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    with pytest.raises(ConfigError, match="not-a-folder"):
        OnnxEmbedder(cache_dir=blocker).embed(["hello"])


def test_length_batches_bound_padding_and_cover_every_text() -> None:
    from chronomem.embedders.onnx_session import length_batches

    # A long record with its short passages: the record runs alone, not padding them to 256.
    assert length_batches([256, 12, 30, 9, 128, 64, 40], 64) == [[0, 4], [5, 6], [2], [1, 3]]
    lengths = [(i * 37) % 257 + 1 for i in range(300)]
    runs = length_batches(lengths, 8)
    assert sorted(i for run in runs for i in run) == list(range(300))
    for run in runs:
        assert 1 <= len(run) <= 8
        widest = lengths[run[0]]
        assert all(2 * lengths[i] >= widest and lengths[i] <= widest for i in run)


@pytest.mark.slow
def test_a_record_with_its_passages_gets_the_vectors_it_gets_alone(
    onnx_default: OnnxEmbedder,
) -> None:
    texts = [TEXTS[7], *TEXTS[7].split(". ")]
    together = onnx_default.embed(texts)
    alone = np.stack([onnx_default.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@pytest.mark.slow
def test_both_backends_say_where_the_model_stops_reading(  # type: ignore[no-untyped-def]
    minilm, onnx_default: OnnxEmbedder
) -> None:
    long = TEXTS[8]  # 600 tokens: read up to the 254th
    for model in (minilm, onnx_default):
        read = model.read_lengths(TEXTS)
        assert read == [*(len(t) for t in TEXTS[:8]), read[8], len(TEXTS[9])]
        assert 0 < read[8] < len(long)
        whole, cut, shorter = model.embed([long, long[: read[8]], long[: read[8] - 3]])
        assert float(whole @ cut) == pytest.approx(1.0, abs=1e-5)  # the rest is never read
        assert float(whole @ shorter) < 0.9999  # and the last token read counts
