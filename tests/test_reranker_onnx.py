"""The ONNX cross-encoder: an export scores as torch does (fp32 within 1e-3, int8 by rank),
its split head is exact, loading picks it by its folder, and the packaged default reranker
is there, small, and ranks demo gold passages above the rest."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.errors import ConfigError

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

QUERY = "Which shipyard built SS Orrendale?"
PASSAGES = [
    "SS Orrendale was built by Rookwell Shipyards in 1911.",
    "Rookwell Shipyards was founded by Tobias Grennick on the Velmora estuary.",
    "tiny",
    "A passage long enough to be padded against the others " * 12,
    "The Orrendale was a coastal cargo ship.",
]


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory):
    """A one-layer MiniLM cross-encoder with a seeded random head, saved as train-reranker
    saves its models."""
    from hopgraph.training.reranker import RerankerConfig, load_base_model, save_reranker

    torch.manual_seed(0)
    model, tok = load_base_model(RerankerConfig(layers=1))
    folder = tmp_path_factory.mktemp("ce") / "model"
    save_reranker(model.eval(), tok, folder, {"max_length": 64})
    return folder


@pytest.fixture(scope="module")
def exports(hf_model, tmp_path_factory):
    from hopgraph.models.reranker_onnx import export_cross_encoder

    root = tmp_path_factory.mktemp("onnx")
    return {
        "fp32": export_cross_encoder(hf_model, root / "fp32", int8=False),
        "int8": export_cross_encoder(hf_model, root / "int8", int8=True),
    }


def _torch_scores(folder) -> np.ndarray:
    from hopgraph.models.cross_encoder import CrossEncoder

    return CrossEncoder(str(folder), precision="fp32").score(QUERY, PASSAGES)


def test_fp32_export_scores_as_torch(hf_model, exports):
    from hopgraph.models.reranker_onnx import OnnxCrossEncoder

    onnx = OnnxCrossEncoder(exports["fp32"])
    assert onnx.max_length == 64 and onnx.card == {"max_length": 64}
    np.testing.assert_allclose(onnx.score(QUERY, PASSAGES), _torch_scores(hf_model), atol=1e-3)
    # the split is exact: represent + head is score, and one pair scores as in a batch
    h = onnx.represent(QUERY, PASSAGES)
    assert h.shape == (len(PASSAGES), 384)
    np.testing.assert_array_equal(onnx.head(h), onnx.score(QUERY, PASSAGES))
    one = onnx.score(QUERY, PASSAGES[1:2])
    np.testing.assert_allclose(one, onnx.score(QUERY, PASSAGES)[1:2], atol=1e-5)
    assert onnx.score(QUERY, []).shape == (0,) and onnx.represent(QUERY, []).shape == (0, 384)


def test_int8_export_is_smaller_and_close(exports):
    """The int8 copy is under half the size and its pair vectors stay close to fp32's (a
    random head's scores are near ties, so the vectors are compared; the trained reranker's
    recall with int8 is in docs/benchmarks.md)."""
    from hopgraph.models.reranker_onnx import OnnxCrossEncoder

    def size(folder) -> int:
        return sum(f.stat().st_size for f in folder.iterdir())

    assert size(exports["int8"]) < 0.5 * size(exports["fp32"])
    a = OnnxCrossEncoder(exports["int8"]).represent(QUERY, PASSAGES)
    b = OnnxCrossEncoder(exports["fp32"]).represent(QUERY, PASSAGES)
    cos = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cos.min() >= 0.98


def test_loading_picks_the_onnx_form(exports, hf_model):
    from hopgraph.models.cross_encoder import CrossEncoder
    from hopgraph.models.reranker_onnx import OnnxCrossEncoder
    from hopgraph.models.rerankers import load_cross_encoder

    assert isinstance(load_cross_encoder(str(exports["int8"])), OnnxCrossEncoder)
    assert isinstance(load_cross_encoder(str(hf_model)), CrossEncoder)


def test_export_refuses_what_it_cannot_write(exports, hf_model, tmp_path):
    from hopgraph.models.reranker_onnx import OnnxCrossEncoder, export_cross_encoder

    with pytest.raises(ConfigError, match="exists"):
        export_cross_encoder(hf_model, exports["fp32"])
    (tmp_path / "meta.json").write_text('{"format": "something else"}')
    np.savez(tmp_path / "head.npz", x=np.zeros(1))
    with pytest.raises(ConfigError, match="not a hopgraph-onnx-cross-encoder"):
        OnnxCrossEncoder(tmp_path)


def test_the_packaged_reranker_is_small_and_trained(demo_dataset):
    """≤ 25 MB, no torch needed, and on the demo questions (never trained on) it puts each
    question's gold passages above most others of the corpus."""
    from hopgraph.models.rerankers import DEFAULT_RERANKER, load_cross_encoder

    size = sum(f.stat().st_size for f in DEFAULT_RERANKER.iterdir())
    assert size <= 25e6
    ce = load_cross_encoder()
    texts = [p.content for p in demo_dataset.corpus]
    pos = demo_dataset.corpus.position
    auc = []
    for q in demo_dataset.questions[:10]:
        s = ce.score(q.text, texts)
        gold = [pos(g) for g in q.gold]
        others = np.delete(s, gold)
        auc += [float(np.mean(s[g] > others)) for g in gold]
    assert np.mean(auc) >= 0.85
