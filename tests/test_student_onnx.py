"""Student-format folders (the passage student, the hop encoder) run in ONNX Runtime from an
export composed without PyTorch from the teacher's: the same vectors as PyTorch's float32."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from hopgraph.errors import ConfigError
from hopgraph.models import load_embedder
from hopgraph.models.hop_encoder import BUNDLED_HOP_ENCODER, hop_text, load_hop_encoder
from hopgraph.models.resolve import PACKAGED_ENCODER
from hopgraph.models.student import BUNDLED_STUDENT, WEIGHTS
from hopgraph.models.student_onnx import ensure_student_export, read_bf16_layers


def test_the_bf16_reader_gives_safetensors_own_values():
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file

    mine = read_bf16_layers(BUNDLED_STUDENT / WEIGHTS)
    ref = load_file(str(BUNDLED_STUDENT / WEIGHTS))
    assert mine.keys() == ref.keys() and len(mine) == 3 * 16
    for name, t in ref.items():
        assert t.dtype == torch.bfloat16
        np.testing.assert_array_equal(mine[name], t.float().numpy(), err_msg=name)


@pytest.mark.parametrize("folder", [BUNDLED_STUDENT, BUNDLED_HOP_ENCODER], ids=lambda f: f.name)
def test_the_composed_export_gives_pytorchs_float32_vectors(folder, demo_dataset):
    pytest.importorskip("sentence_transformers")
    from hopgraph.models.embedder import Embedder

    card = json.loads((folder / "meta.json").read_text())["config"]
    export = ensure_student_export(folder, PACKAGED_ENCODER)
    meta = json.loads((export / "meta.json").read_text())
    assert meta["student"]["layers"] == len(card["layers"])
    assert meta["max_seq_length"] == card["max_seq_length"]
    assert ensure_student_export(folder, PACKAGED_ENCODER) == export  # made once
    texts = [p.content for p in demo_dataset.corpus][:24]
    onnx = Embedder(backend="onnx", precision="fp32", student=str(folder),
                    max_seq_length=card["max_seq_length"])  # fmt: skip
    torch = Embedder(backend="torch", precision="fp32", student=str(folder),
                     max_seq_length=card["max_seq_length"])  # fmt: skip
    a, b = onnx.encode(texts, batch_size=8), torch.encode(texts, batch_size=8)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.99999, cos.min()  # the teacher's embeddings: stored float16 here
    teacher = load_embedder().encode(texts)
    assert np.sum(a * teacher, axis=1).mean() < 0.995  # the student's layers, not the teacher's


def test_the_hop_encoder_runs_in_onnx_runtime_in_fp32_and_int8(default_index):
    fp32, int8 = load_hop_encoder(precision="fp32"), load_hop_encoder(precision="int8")
    assert fp32.embedder.backend == int8.embedder.backend == "onnx"
    assert "int8" in int8.embedder._onnx.folder.name
    q = "In which town was the director of The Lantern Keeper born?"
    texts = [hop_text(default_index.corpus, q, r) for r in range(6)]
    cos = np.sum(fp32.embedder.encode(texts) * int8.embedder.encode(texts), axis=1)
    assert cos.min() > 0.98 and cos.max() < 1.0  # quantised: close, not the same arithmetic
    with pytest.raises(ConfigError, match="hop encoder runs in"):
        load_hop_encoder(precision="fp16")


def test_a_folder_that_does_not_fit_the_teacher_is_refused(tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(BUNDLED_STUDENT, bad)
    meta = json.loads((bad / "meta.json").read_text())
    meta["config"]["layers"] = [0, 1]  # the card says 2 layers, the weights hold 3
    (bad / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="its card says otherwise"):
        ensure_student_export(bad, PACKAGED_ENCODER)
    (bad / WEIGHTS).write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError, match="not a safetensors file"):
        ensure_student_export(bad, PACKAGED_ENCODER)
    with pytest.raises(ConfigError, match="not 'static'"):
        load_embedder(backend="static", student=str(BUNDLED_STUDENT))


def test_without_pytorch_the_student_and_the_hop_encoder_take_onnx_runtime(monkeypatch, tmp_path):
    import hopgraph.index.dense_options as dense_mod
    import hopgraph.models.embedder as emb_mod
    from hopgraph.config import make_options

    monkeypatch.setattr(dense_mod, "has_torch", lambda: False)
    monkeypatch.setattr(emb_mod, "has_torch", lambda: False)
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: True)
    assert dense_mod.student_backend() == ("onnx", "fp32")
    assert load_hop_encoder().embedder.backend == "onnx"  # auto: fp32 in ONNX Runtime
    large = {"fast_encode_min_passages": 100}
    assert make_options(dense_mod.DenseOptions, large).passage_encoder_for(100) == "student"
    other = make_options(dense_mod.DenseOptions, {**large, "student": str(tmp_path)})
    assert other.passage_encoder_for(100) == "same"  # no student for it, no torch-bf16 either
    monkeypatch.setattr(dense_mod, "has_torch", lambda: True)
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: True)
    assert dense_mod.student_backend() == ("torch", "bf16")
    monkeypatch.setattr(dense_mod, "cpu_has_bf16", lambda: False)
    assert dense_mod.student_backend() == ("onnx", "fp32")
