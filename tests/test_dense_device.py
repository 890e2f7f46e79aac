"""``dense.device``: passages encoded on a CUDA GPU where asked (and seen), the CPU otherwise.

This machine has no GPU: the CUDA choice is checked with ``torch.cuda.is_available`` patched
(nothing is ever run on CUDA then), and the real GPU build only where torch sees one.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.index.dense import (
    CUDA_BATCH_SIZE,
    ENCODER_FILE,
    DenseOptions,
    DensePart,
    passage_encoder_note,
)
from hopgraph.models.embedder import Embedder, check_cuda, cuda_available

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

REAL_IS_AVAILABLE = torch.cuda.is_available
no_cuda = pytest.mark.skipif(cuda_available(), reason="torch sees a CUDA device here")
needs_cuda = pytest.mark.skipif(not cuda_available(), reason="torch sees no CUDA device")


def opts(**values) -> DenseOptions:
    return make_options(DenseOptions, values)


def test_device_option_is_checked():
    assert opts().device == "cpu"  # the default: nothing changes for anyone who sets nothing
    with pytest.raises(ConfigError, match=r"'device' must be one of \['cpu', 'cuda', 'auto'\]"):
        opts(device="gpu")
    with pytest.raises(ConfigError, match="backend=static"):
        opts(device="cuda", backend="static")
    for explicit in ("same", "torch-bf16"):  # a CPU encoder named beside the GPU
        with pytest.raises(ConfigError, match=f"passage_encoder={explicit} asks for"):
            opts(device="cuda", passage_encoder=explicit)
    # valid wherever the index is loaded: the GPU is only needed to encode passages
    assert opts(device="cuda").device == "cuda"
    assert opts(device="auto", passage_encoder="same").device == "auto"


@pytest.mark.parametrize("bf16", [True, False])
@no_cuda
def test_auto_without_cuda_chooses_as_the_cpu_does(monkeypatch, bf16):
    import hopgraph.index.dense_options as dense_mod

    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: bf16)
    for extra in ({}, {"backend": "torch"}, {"precision": "int8"}, {"passage_encoder": "same"}):
        cpu = opts(fast_encode_min_passages=100, **extra)
        auto = opts(fast_encode_min_passages=100, device="auto", **extra)
        for n in (1, 99, 100, 10**6):
            assert auto.passage_encoder_for(n) == cpu.passage_encoder_for(n), (extra, n)
            assert auto.batch_size_for(auto.passage_encoder_for(n)) == cpu.batch_size
    # and the CPU's choice really is made here (not "same" whatever the options): the student,
    # or without one for the query encoder, bf16 where the CPU has it
    assert opts(fast_encode_min_passages=100, device="auto").passage_encoder_for(100) == "student"
    alone = opts(fast_encode_min_passages=100, device="auto", student="no-such-student")
    assert alone.passage_encoder_for(100) == ("torch-bf16" if bf16 else "same")


def test_cuda_choice_when_torch_sees_a_device(monkeypatch):
    """The labels with ``torch.cuda.is_available`` patched to True (no CUDA code runs)."""
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "is_available", lambda: True)
        m.setattr(torch.cuda, "get_device_name", lambda *a: "Fake GPU 80GB")
        for device in ("cuda", "auto"):
            o = opts(device=device)
            assert [o.passage_encoder_for(n) for n in (1, 10**6)] == ["torch-cuda"] * 2
            assert o.batch_size_for("torch-cuda") == CUDA_BATCH_SIZE
            assert opts(device=device, batch_size=512).batch_size_for("torch-cuda") == 512
            note = passage_encoder_note(o, 10)
            assert note is not None and "Fake GPU 80GB" in note and f"device={device}" in note
        # auto leaves what it cannot run on a GPU, or what the user named, on the CPU
        assert opts(device="auto", backend="static").passage_encoder_for(10**6) == "same"
        assert opts(device="auto", passage_encoder="same").passage_encoder_for(10**6) == "same"
        forced = opts(device="auto", passage_encoder="torch-bf16")
        assert forced.passage_encoder_for(1) == "torch-bf16"
        assert opts().passage_encoder_for(10**6) == "student"  # cpu: never cuda
        check_cuda("anything")  # no error while torch "sees" one
    # the patch is gone after the block: nothing leaks into later tests
    assert torch.cuda.is_available is REAL_IS_AVAILABLE
    if not REAL_IS_AVAILABLE():
        assert opts(device="auto").passage_encoder_for(1) == "same"
        assert passage_encoder_note(opts(device="auto"), 1) is None


@no_cuda
def test_cuda_without_a_device_is_a_clear_error(tmp_path, demo_dataset):
    o = opts(device="cuda")
    with pytest.raises(ConfigError) as err:
        o.passage_encoder_for(10)
    msg = str(err.value)
    assert "dense.device=cuda asks for a CUDA GPU" in msg
    assert f"torch {torch.__version__}" in msg and "auto" in msg and "CPU elsewhere" in msg
    with pytest.raises(ConfigError, match="dense.device=cuda asks for a CUDA GPU"):
        Index.build(demo_dataset.corpus, ["dense"], {"dense": {"device": "cuda"}}, progress=False)
    from hopgraph import build_index
    from hopgraph.data import demo_dataset_path

    out = tmp_path / "ix"
    with pytest.raises(ConfigError, match="dense.device=cuda asks for a CUDA GPU"):
        build_index(
            demo_dataset_path(), out, ["dense"], {"dense": {"device": "cuda"}}, progress=False
        )
    assert not (out / "manifest.json").exists()
    # the embedder itself says so too, instead of a model-loading error
    with pytest.raises(ConfigError, match="device='cuda' asks for a CUDA GPU"):
        Embedder(backend="torch", device="cuda")


@no_cuda
def test_what_torch_reports_is_in_the_message(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(torch.version, "cuda", "12.4")
        with pytest.raises(ConfigError, match=r"sees no CUDA device \(built for CUDA 12.4"):
            check_cuda("dense.device=cuda")
    with monkeypatch.context() as m:
        m.setattr(torch.version, "cuda", None)
        with pytest.raises(ConfigError, match="is a CPU-only build"):
            check_cuda("dense.device=cuda")
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "torch", None)  # import torch fails: not installed
        assert not cuda_available()
        with pytest.raises(ConfigError, match="PyTorch is not installed"):
            check_cuda("dense.device=cuda")
        assert opts(device="auto").passage_encoder_for(1) == "same"


@no_cuda
def test_auto_builds_the_cpu_vectors_and_manifest(tmp_path, demo_dataset):
    from hopgraph import build_index
    from hopgraph.data import demo_dataset_path

    built = {}
    for device in ("cpu", "auto"):
        sets = {"dense": {"device": device}}
        ix = Index.build(demo_dataset.corpus, ["dense"], sets, progress=False)
        streamed = build_index(
            demo_dataset_path(), tmp_path / device, ["dense"], sets, batch_size=20, progress=False
        )
        built[device] = (ix.part("dense"), streamed.part("dense"))
        manifest = json.loads((tmp_path / device / "manifest.json").read_text())
        dense = manifest["parts"]["dense"]
        assert dense["options"]["device"] == device
        assert dense["stats"]["passage_encoder"] == "same"
        built[device] += (dense["stats"],)
        assert sorted(p.name for p in (tmp_path / device / "parts" / "dense").iterdir()) == sorted(
            p.name for p in (tmp_path / "cpu" / "parts" / "dense").iterdir()
        )
    cpu, auto = built["cpu"], built["auto"]
    for a, b in zip(cpu[:2], auto[:2], strict=True):
        assert a.passage_encoder == b.passage_encoder == "same"
        assert np.array_equal(np.asarray(a.embeddings), np.asarray(b.embeddings))
    assert cpu[2] == auto[2]
    # the streamed build (segments) and the in-memory one agree as well
    np.testing.assert_allclose(
        np.asarray(cpu[0].embeddings), np.asarray(cpu[1].embeddings), atol=1e-6
    )


def test_mixed_gpu_and_cpu_segments_are_refused_with_the_way_out(tmp_path, demo_dataset):
    folders = []
    for i, encoder in enumerate(("torch-cuda", "same")):
        f = tmp_path / str(i)
        f.mkdir()
        np.save(f / "embeddings.npy", np.eye(2, 384, dtype=np.float32))
        (f / ENCODER_FILE).write_text(encoder)
        folders.append(f)
    with pytest.raises(ConfigError) as err:
        DensePart.from_segments(demo_dataset.corpus, opts(device="auto"), folders, {})
    msg = str(err.value)
    assert "different passage encoders" in msg and "torch-cuda (PyTorch fp32 on a CUDA GPU)" in msg
    assert "part on the CPU" in msg and "dense.device=cpu" in msg
    if not cuda_available():
        assert "where torch sees no CUDA device" in msg
    # all from the GPU: merged as they are, and recorded
    for f in folders:
        (f / ENCODER_FILE).write_text("torch-cuda")
    part = DensePart.from_segments(demo_dataset.corpus, opts(device="auto"), folders, {})
    assert part.passage_encoder == "torch-cuda" and part.stats()["passage_encoder"] == "torch-cuda"


@no_cuda
@pytest.mark.parametrize("extra", [{}, {"precision": "int8"}])
def test_gpu_built_index_takes_added_passages_on_the_cpu(demo_dataset, extra):
    """An index whose passages a GPU encoded is updated where there is none: the added
    passages in fp32 on the CPU (the query encoder when it runs fp32), not refused."""
    from hopgraph.models import load_embedder

    o = opts(device="cuda", **extra)  # as loaded from such an index's manifest
    texts = [p.content for p in demo_dataset.corpus][:6]
    fp32 = load_embedder(backend="onnx", precision="fp32")
    part = DensePart(o, fp32.encode(texts[:3]))
    part.passage_encoder = "torch-cuda"
    new = part.encode_passages(texts[3:])
    ref = fp32.encode(texts[3:])
    if not extra:  # the ONNX fp32 query encoder: the same vectors
        assert part._embedder is not None and part._embedder.backend == "onnx"
        np.testing.assert_array_equal(new, ref)
    else:  # int8 queries: the passages are still fp32 (PyTorch on the CPU), not int8
        assert part._embedder is None
        cos = np.sum(new * ref, axis=1)
        assert cos.min() >= 0.9999, cos
        int8 = load_embedder(backend="onnx", precision="int8").encode(texts[3:])
        assert not np.allclose(new, int8, atol=1e-4)


@needs_cuda
def test_cuda_passages_match_cpu_fp32(tmp_path, demo_dataset):
    """Where torch sees a GPU: the build encodes there, and its vectors are the CPU's."""
    from hopgraph import build_index
    from hopgraph.data import demo_dataset_path
    from hopgraph.models import load_embedder

    sets = {"dense": {"device": "cuda"}}
    ix = build_index(
        demo_dataset_path(), tmp_path / "ix", ["dense"], sets, batch_size=20, progress=False
    )
    dense = ix.part("dense")
    assert dense.passage_encoder == "torch-cuda"
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["parts"]["dense"]["stats"]["passage_encoder"] == "torch-cuda"
    ref = load_embedder(backend="onnx", precision="fp32").encode(
        [p.content for p in demo_dataset.corpus]
    )
    vecs = np.asarray(dense.embeddings, np.float32)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.sum(vecs * ref, axis=1).min() >= 0.999
    assert dense.embedder.device == "cpu"  # queries stay on the CPU
    gpu = Index.build(demo_dataset.corpus, ["dense"], sets, progress=False).part("dense")
    assert gpu.passage_encoder == "torch-cuda"
    assert np.sum(np.asarray(gpu.embeddings) * ref, axis=1).min() >= 0.999
