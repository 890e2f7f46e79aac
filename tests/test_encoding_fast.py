"""Fast encoders: int8 ONNX close to fp32, cached once, recorded in the index; static backend."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.index.dense import DenseOptions
from hopgraph.models import Embedder, load_embedder, onnx_backend

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

QUESTIONS = [
    "What government position was held by the woman who portrayed Corliss Archer?",
    "Who was born first, the director of Kiss and Tell or the star of Bright Eyes?",
    "short",
]


@pytest.fixture(scope="module")
def fp32() -> Embedder:
    return load_embedder(backend="onnx", precision="fp32")


@pytest.fixture(scope="module")
def int8() -> Embedder:
    return load_embedder(backend="onnx", precision="int8")


def test_int8_vectors_are_close_to_fp32(fp32, int8, demo_dataset):
    texts = [p.content for p in demo_dataset.corpus]
    a, b = fp32.encode(texts, batch_size=16), int8.encode(texts, batch_size=16)
    assert b.dtype == np.float32 and b.shape == a.shape
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = np.sum(a * b, axis=1)
    assert cos.min() >= 0.99, cos.min()
    assert not np.array_equal(a, b)  # really another model, not the fp32 one
    questions = [q.text for q in demo_dataset.questions] + QUESTIONS
    cos = np.array([float(fp32.encode_query(q) @ int8.encode_query(q)) for q in questions])
    # A one-word text has few activations to set the quantisation range: ~0.98 at worst.
    assert cos.mean() >= 0.99 and cos.min() >= 0.97, (cos.mean(), cos.min())
    assert int8._onnx.folder.name.endswith(f"-int8-q{onnx_backend.QUANT_VERSION}")
    assert int8._onnx.folder.parent == fp32._onnx.folder.parent  # cached beside the export


@pytest.mark.data
def test_int8_close_to_fp32_on_2wiki_passages(fp32, int8, data_dir):
    path = data_dir / "2wikimultihopqa" / "corpus.jsonl"
    if not path.is_file():
        pytest.skip("2wikimultihopqa not in the data folder")
    texts = []
    with path.open() as fh:
        for line in fh:
            row = json.loads(line)
            texts.append(f"{row['title']}\n{row['text']}")
            if len(texts) == 64:
                break
    cos = np.sum(fp32.encode(texts) * int8.encode(texts), axis=1)
    assert cos.min() >= 0.99 and cos.mean() >= 0.995, (cos.min(), cos.mean())


def test_quantized_copy_is_cached_and_reused(fp32, tmp_path, monkeypatch):
    export = tmp_path / fp32._onnx.folder.name
    shutil.copytree(fp32._onnx.folder, export)
    folder = onnx_backend.ensure_quantized(export)
    assert folder == onnx_backend.quantized_dir(export) and folder.parent == tmp_path
    assert {p.name for p in folder.iterdir()} == {"meta.json", "model.onnx", "tokenizer.json"}
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["quantization"]["weight_type"] == "QInt8" and meta["quantization"]["fp32_nodes"]
    assert (folder / "model.onnx").stat().st_size < (export / "model.onnx").stat().st_size
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]
    mtime = (folder / "model.onnx").stat().st_mtime_ns

    import onnxruntime.quantization as q

    def no_quantize(*args, **kwargs):
        raise AssertionError("quantised again although the copy is cached")

    monkeypatch.setattr(q, "quantize_dynamic", no_quantize)
    assert onnx_backend.ensure_quantized(export) == folder
    assert (folder / "model.onnx").stat().st_mtime_ns == mtime
    enc = onnx_backend.OnnxEncoder(folder, max_seq_length=256)
    ref = onnx_backend.OnnxEncoder(export, max_seq_length=256)
    assert np.sum(enc.encode(QUESTIONS) * ref.encode(QUESTIONS), axis=1).min() >= 0.99


def test_bad_precision_combinations_are_clear_errors():
    with pytest.raises(ConfigError, match="int8 needs backend=onnx"):
        Embedder(backend="torch", precision="int8")
    with pytest.raises(ConfigError, match="int8 needs backend=onnx"):
        make_options(DenseOptions, {"backend": "torch", "precision": "int8"})
    with pytest.raises(ConfigError, match="int8 needs backend=onnx"):
        make_options(DenseOptions, {"backend": "static", "precision": "int8"})
    with pytest.raises(ConfigError, match="bf16 needs backend=torch"):
        make_options(DenseOptions, {"backend": "static", "precision": "bf16"})
    with pytest.raises(ConfigError, match="must be one of"):
        make_options(DenseOptions, {"precision": "int4"})
    with pytest.raises(ConfigError, match="precision must be one of"):
        Embedder(precision="fp16")
    ok = make_options(DenseOptions, {"precision": "int8"})
    assert (ok.backend, ok.precision) == ("onnx", "int8")
    assert DenseOptions().precision == "auto" and DenseOptions().backend == "onnx"  # unchanged


def test_index_built_with_int8_records_it_and_queries_use_it(demo_dataset, int8, fp32, tmp_path):
    index = Index.build(
        demo_dataset.corpus, ["dense"], {"dense": {"precision": "int8"}}, progress=False
    )
    folder = index.save(tmp_path / "index")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert json.dumps(manifest).count('"precision": "int8"') == 1
    loaded = Index.load(folder)
    dense = loaded.part("dense")
    assert dense.options.precision == "int8"
    texts = [p.content for p in demo_dataset.corpus]
    np.testing.assert_allclose(dense.embeddings, int8.encode(texts, batch_size=16), atol=1e-5)
    q = QUESTIONS[0]
    np.testing.assert_allclose(dense.encode_queries([q])[0], int8.encode_query(q), atol=1e-6)
    assert dense.embedder is int8  # the process-wide int8 encoder, not the fp32 one
    assert float(dense.encode_queries([q])[0] @ fp32.encode_query(q)) < 0.99999


def test_static_backend_runs_a_model2vec_folder(tmp_path):
    pytest.importorskip("model2vec")
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from hopgraph.models.onnx_backend import ensure_exported
    from hopgraph.models.static import is_static_model

    # A tiny real static model: the MiniLM tokenizer and a random (seeded) token table.
    tok = Tokenizer.from_file(str(ensure_exported(Embedder().path) / "tokenizer.json"))
    vectors = np.random.default_rng(0).normal(size=(tok.get_vocab_size(), 8)).astype(np.float32)
    StaticModel(vectors, tok, config={"model_type": "model2vec"}, normalize=True).save_pretrained(
        str(tmp_path / "m2v")
    )
    assert is_static_model(tmp_path / "m2v") and not is_static_model(tmp_path)
    emb = Embedder(str(tmp_path / "m2v"), backend="static")
    out = emb.encode(QUESTIONS)
    assert out.shape == (3, 8) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(emb.encode_query(QUESTIONS[1]), out[1], atol=1e-6)
    with pytest.raises(ConfigError, match="no token embeddings"):
        emb.encode_tokens(QUESTIONS)
    with pytest.raises(ConfigError, match="neither"):
        Embedder(str(tmp_path / "missing"), backend="static")
