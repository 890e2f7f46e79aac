"""Fast encoders: int8 ONNX close to fp32, cached once, recorded in the index; static backend."""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.index.dense import DenseOptions
from hopgraph.models import Embedder, load_embedder, onnx_backend
from hopgraph.models.embedder import cpu_has_bf16
from hopgraph.models.packaged_encoder import weights_as_fp32

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
    # the shipped export is read-only where hopgraph is installed: its int8 copy is cached
    assert int8._onnx.folder.parent == onnx_backend.onnx_cache_root()


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
    # smaller than the float32 graph (the shipped export stores float16 weights: half of it)
    fp32_graph = weights_as_fp32(onnx.load(str(export / "model.onnx")))
    assert (folder / "model.onnx").stat().st_size < fp32_graph.ByteSize()
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


needs_bf16 = pytest.mark.skipif(
    not cpu_has_bf16(), reason="the CPU has no native bf16 (avx512_bf16 / AMX)"
)


def test_passage_encoder_choice_follows_size_cpu_and_options(monkeypatch):
    import hopgraph.index.dense_options as dense_mod

    # without a passage student for the query encoder (tests/test_student.py: with one)
    o = make_options(DenseOptions, {"fast_encode_min_passages": 100, "student": "none"})
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: True)
    assert o.passage_encoder_for(99) == "same"  # small builds keep the query encoder
    assert o.passage_encoder_for(100) == "torch-bf16"
    for explicit in ({"precision": "int8"}, {"backend": "torch"}):  # the user chose an encoder
        opts = make_options(DenseOptions, {"fast_encode_min_passages": 100, "student": "none",
                                           **explicit})  # fmt: skip
        assert opts.passage_encoder_for(10**6) == "same"
    forced = make_options(DenseOptions, {"passage_encoder": "torch-bf16"})
    assert forced.passage_encoder_for(1) == "torch-bf16"
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: False)
    assert o.passage_encoder_for(10**6) == "same"  # never assumed: detected
    assert make_options(DenseOptions, {"passage_encoder": "same"}).passage_encoder_for(10**6) == (
        "same"
    )
    with pytest.raises(ConfigError, match="torch-bf16 needs a transformer"):
        make_options(DenseOptions, {"passage_encoder": "torch-bf16", "backend": "static"})


@needs_bf16
def test_torch_bf16_passages_match_onnx_fp32_queries(fp32, demo_dataset):
    pytest.importorskip("torch")
    bf16 = load_embedder(backend="torch", precision="bf16")
    texts = [p.content for p in demo_dataset.corpus]
    a, b = fp32.encode(texts, batch_size=16), bf16.encode(texts, batch_size=16)
    assert b.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    cos = np.sum(a * b, axis=1)
    assert cos.min() >= 0.999, cos.min()
    assert not np.array_equal(a, b)  # bf16 really ran


@needs_bf16
def test_streamed_build_encodes_passages_with_torch_bf16_and_records_it(tmp_path, fp32):
    pytest.importorskip("torch")
    from hopgraph import build_index
    from hopgraph.corpus import load_corpus
    from hopgraph.data import demo_dataset_path
    from hopgraph.retrieve import get_retriever

    path = demo_dataset_path()
    settings = {"dense": {"passage_encoder": "torch-bf16"}}
    ix = build_index(path, tmp_path / "ix", ["dense"], settings, batch_size=7, progress=False)
    dense = ix.part("dense")
    assert (
        dense.passage_encoder == "torch-bf16" and dense.stats()["passage_encoder"] == "torch-bf16"
    )
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["parts"]["dense"]["stats"]["passage_encoder"] == "torch-bf16"
    texts = [p.content for p in load_corpus(path)]
    ref = fp32.encode(texts, batch_size=16)
    cos = np.sum(np.asarray(dense.embeddings) * ref, axis=1)
    assert 0.999 <= cos.min() and not np.array_equal(np.asarray(dense.embeddings), ref)
    assert dense.embedder.backend == "onnx"  # queries: the ONNX encoder
    # an update encodes the added passages the way the kept ones were
    extra = load_corpus(path)[:2]
    added = [type(p)(id=p.id + "-copy", title=p.title, text=p.text) for p in extra]
    ix.add(added)
    assert ix.part("dense").passage_encoder == "torch-bf16"
    new = np.asarray(ix.part("dense").embeddings[-2:])
    np.testing.assert_allclose(new, np.asarray(dense.embeddings[:2]), atol=1e-6)
    hits = get_retriever(ix, "dense").search(texts[3], k=1)
    assert hits.ids[0] == load_corpus(path)[3].id


def test_segments_from_different_passage_encoders_are_refused(tmp_path, demo_dataset):
    from hopgraph.index.dense import ENCODER_FILE, DensePart

    o = make_options(DenseOptions, {})
    folders = []
    for i, encoder in enumerate(("same", "torch-bf16")):
        f = tmp_path / str(i)
        f.mkdir()
        np.save(f / "embeddings.npy", np.eye(2, 384, dtype=np.float32))
        (f / ENCODER_FILE).write_text(encoder)
        folders.append(f)
    with pytest.raises(ConfigError, match="different passage encoders"):
        DensePart.from_segments(demo_dataset.corpus, o, folders, {})
