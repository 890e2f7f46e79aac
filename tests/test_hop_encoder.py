"""``multihop``'s hop encoder switch: training pairs, the two features, a trained folder end to
end, the comparison gate, and the packaged encoder."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from hopgraph.defaults import default_build
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.models.hop_encoder import (
    BUNDLED_HOP_ENCODER,
    HOP_ENCODER_FEATURES,
    hop_columns,
    hop_text,
    load_hop_encoder,
)
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.hop_features import COL, FEATURES
from hopgraph.retrieve.multihop import MultihopParams, score_candidates
from hopgraph.training.hop_encoder import NEGATIVES, chain_pairs, train_hop_encoder

pytest.importorskip("sentence_transformers")

COMPARISON = "Was The Lantern Keeper or SS Orrendale made first?"


def _candidates(index, dataset):
    """Each demo question's first-round candidates (features only), gold rows and text."""
    s = MultihopParams(chain=0).settings()
    dense, pos = index.part("dense"), index.corpus.position
    out = []
    for q in dataset.questions:
        v = dense.encode_queries([q.text])[0]
        out.append((score_candidates(index, s, q.text, v, None), [pos(g) for g in q.gold], q.text))
    return out


def test_chain_pairs_are_every_ordered_gold_pair_with_non_gold_negatives(
    demo_dataset, default_index
):
    found, gold, text = _candidates(default_index, demo_dataset)[0]
    pairs = chain_pairs(default_index, text, gold, found.rows)
    assert len(pairs) == len(gold) * (len(gold) - 1)
    for p in pairs:
        assert p.target in gold and len(p.negatives) == NEGATIVES
        assert not set(p.negatives) & set(gold)
        assert p.text.startswith(text + " [SEP] ")
    assert [p.text for p in pairs][0] == hop_text(default_index.corpus, text, gold[0])
    assert chain_pairs(default_index, text, gold, gold) == []  # too few negatives: none


def test_hop_columns_match_a_direct_computation(default_index):
    dense = default_index.part("dense")
    rows = np.arange(12)
    anchors = [3, 7]
    rng = np.random.default_rng(0)
    hops = [v / np.linalg.norm(v) for v in rng.normal(size=(2, dense.vectors(0).shape[0]))]
    X = np.zeros((len(rows), len(FEATURES)))
    X[:, COL["cosine"]] = rng.uniform(size=len(rows))
    cols = hop_columns(dense, rows, anchors, hops, X)
    for i, r in enumerate(rows.tolist()):
        best = max(float(dense.vectors(r) @ h) if r != a else -1.0
                   for a, h in zip(anchors, hops, strict=True))  # fmt: skip
        assert cols[i, 0] == pytest.approx(best, abs=1e-6)
        assert cols[i, 1] == pytest.approx(best - X[i, COL["cosine"]], abs=1e-6)
    assert hop_columns(dense, rows, [], [], X).shape == (12, 2)


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory, demo_dataset, default_index):
    """A hop encoder trained on the demo's chains (a few steps: the mechanics, not quality),
    with a ranker fitted on its features, written as a folder."""
    import lightgbm as lgb

    from hopgraph.models.embedder import DEFAULT_EMBEDDER, resolve_model
    from hopgraph.training.hop_encoder import save_hop_encoder
    from hopgraph.training.ranker import LGB_PARAMS

    cands = _candidates(default_index, demo_dataset)
    pairs = [p for f, g, t in cands for p in chain_pairs(default_index, t, g, f.rows)]
    kw = {"model": resolve_model(DEFAULT_EMBEDDER), "epochs": 1, "max_len": 48, "progress": False}
    st = train_hop_encoder(pairs, **kw)
    again = train_hop_encoder(pairs, **kw)  # the same pairs and seed: the same weights
    a, b = st[0].auto_model.state_dict(), again[0].auto_model.state_dict()
    assert all(bool((a[k] == b[k]).all()) for k in a)
    X, y = [], []
    for f, g, t in cands:
        V = st.encode([hop_text(default_index.corpus, t, r) for r in f.anchors[:3]],
                      normalize_embeddings=True)  # fmt: skip
        extra = hop_columns(default_index.part("dense"), f.rows, f.anchors[:3], list(V), f.feats.X)
        X.append(np.column_stack([f.feats.X, extra]))
        y.append(np.isin(f.rows, g).astype(int))
    ranker = lgb.LGBMRanker(**{**LGB_PARAMS, "min_child_samples": 2, "n_estimators": 10})
    ranker.fit(np.concatenate(X), np.concatenate(y), group=[len(x) for x in X])
    card = {"config": {"teacher": DEFAULT_EMBEDDER, "layers": list(range(6)),
                       "max_seq_length": 48}}  # fmt: skip
    folder = tmp_path_factory.mktemp("hop") / "enc"
    return save_hop_encoder(folder, st, ranker.booster_, card, {"trained_on": "demo"})


def test_a_trained_folder_ranks_chains_and_leaves_comparisons_to_the_default(
    trained_folder, demo_dataset, default_index
):
    enc = load_hop_encoder(trained_folder)
    assert enc.ranker.features == (*FEATURES, *HOP_ENCODER_FEATURES)
    assert (trained_folder / "layers.safetensors").stat().st_size < 25_000_000  # layers only
    plain = get_retriever(default_index)
    hop = get_retriever(default_index, hop_encoder=True, hop_encoder_model=str(trained_folder))
    changed = 0
    for q in demo_dataset.questions:
        a, b = plain.search(q.text, k=10), hop.search(q.text, k=10)
        assert "hop_encoder" not in a.info and len(set(b.ids)) == 10
        if q.metadata.get("type") == "comparison":  # the gate: the default's ranking
            assert b.info["hop_encoder"].startswith("comparison question")
            assert (a.ids, a.scores) == (b.ids, b.scores)
            continue
        assert b.info["hop_encoder"] == "on"
        why = b.explanations[0]
        assert "hop_encoder" in why["signals"] and "hop_encoder" not in a.explanations[0]["signals"]
        changed += a.scores != b.scores
    assert changed  # its features reach the ranking
    a, b = plain.search(COMPARISON, k=10), hop.search(COMPARISON, k=10)
    assert b.info["hop_encoder"].startswith("comparison question")
    assert (a.ids, a.scores) == (b.ids, b.scores)
    assert set(json.loads((trained_folder / "meta.json").read_text())) >= {"kind", "config"}


def test_in_the_chain_round_only_the_first_round_is_the_defaults_and_one_round_is_encoded(
    trained_folder, demo_dataset, default_index, monkeypatch
):
    enc = load_hop_encoder(trained_folder)
    encoded: list[int] = []
    real = enc.embedder.encode

    def counting(texts, **kw):
        encoded.append(len(texts))
        return real(texts, **kw)

    monkeypatch.setattr(enc.embedder, "encode", counting)
    plain = get_retriever(default_index)
    chain = get_retriever(default_index, hop_encoder=True, hop_encoder_model=str(trained_folder),
                          hop_encoder_rounds="chain")  # fmt: skip
    s = plain.settings
    dense = default_index.part("dense")
    changed = 0
    for q in demo_dataset.questions:
        if q.metadata.get("type") == "comparison":
            continue
        encoded.clear()
        a, b = plain.search(q.text, k=10), chain.search(q.text, k=10)
        assert b.info["hop_encoder"] == "on: chain round"
        assert encoded == [3]  # the chain round's three anchors, in one batch; nothing before
        assert "hop_encoder" in b.explanations[0]["signals"]
        changed += a.scores != b.scores
        # the same by hand: the first round is the default ranker's on the default's features
        v = dense.encode_queries([q.text])[0]
        cols = enc.columns(default_index, q.text)
        last = score_candidates(default_index, s, q.text, v, plain.ranker.score, None, None,
                                (enc.ranker.score, cols))  # fmt: skip
        ref = score_candidates(default_index, replace(s, chain=0), q.text, v, plain.ranker.score)
        np.testing.assert_array_equal(last.before.scores, ref.scores)
        assert last.feats.X.shape[1] == len(FEATURES) + 2 == ref.feats.X.shape[1] + 2
    assert changed
    off = get_retriever(default_index, hop_encoder=True, hop_encoder_model=str(trained_folder),
                        hop_encoder_rounds="chain", chain=0)  # fmt: skip
    why = off.search(demo_dataset.questions[0].text, k=3).info["hop_encoder"]
    assert why.startswith("hop_encoder_rounds=chain and chain=0")


def test_the_switch_says_where_it_does_not_apply(demo_dataset, trained_folder):
    from hopgraph.corpus import Corpus, Passage

    docs = Corpus([Passage(f"p{i}", f"A long report title about plant growth number {i}",
                           p.text) for i, p in enumerate(demo_dataset.corpus)])  # fmt: skip
    parts, options, detected = default_build(docs)
    plain = Index.build(docs, parts, options, progress=False)
    plain.detected = detected
    r = get_retriever(plain, hop_encoder=True, hop_encoder_model=str(trained_folder))
    assert r.search("plant growth", k=3).info["hop_encoder"] == "corpus titles are not entity names"


def test_bad_folders_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_hop_encoder(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a passage student folder"):
        load_hop_encoder(tmp_path)
    from hopgraph.models.student import BUNDLED_STUDENT

    with pytest.raises(ConfigError, match="not a hop encoder folder"):
        load_hop_encoder(BUNDLED_STUDENT)


def test_the_packaged_encoder_loads_and_searches(default_index):
    enc = load_hop_encoder()
    assert enc is load_hop_encoder(BUNDLED_HOP_ENCODER)  # loaded once
    assert enc.meta["kind"] == "hopgraph hop encoder"
    assert enc.ranker.features == (*FEATURES, *HOP_ENCODER_FEATURES)
    q = "In which town was the director of The Lantern Keeper born?"
    ranking = get_retriever(default_index, hop_encoder=True).search(q, k=5)
    assert ranking.info["hop_encoder"] == "on" and len(ranking.ids) == 5


def test_bf16_gives_the_fp32_hop_vectors_within_rounding(default_index):
    from hopgraph.models.embedder import cpu_has_bf16

    fp32, bf16 = load_hop_encoder(precision="fp32"), load_hop_encoder(precision="bf16")
    assert not fp32.embedder.bf16 and bf16.embedder.bf16
    assert load_hop_encoder().embedder.bf16 == cpu_has_bf16()  # auto
    texts = [hop_text(default_index.corpus, COMPARISON, r) for r in range(4)]
    a, b = fp32.embedder.encode(texts), bf16.embedder.encode(texts)
    cos = np.sum(a * b, axis=1)
    assert cos.min() > 0.999 and np.abs(a - b).max() > 0  # rounded, not the same arithmetic
    q = "In which town was the director of The Lantern Keeper born?"
    one = get_retriever(default_index, hop_encoder=True, hop_encoder_precision="fp32")
    two = get_retriever(default_index, hop_encoder=True, hop_encoder_precision="bf16")
    assert one.search(q, k=5).ids[:2] == two.search(q, k=5).ids[:2]
    with pytest.raises(ConfigError, match="hop encoder runs in"):
        load_hop_encoder(precision="fp16")
    with pytest.raises(ConfigError, match="hop_encoder_precision"):
        get_retriever(default_index, hop_encoder=True, hop_encoder_precision="fp16")


def test_bf16_pads_hop_texts_to_few_shapes_with_the_same_vectors(default_index):
    from hopgraph.models.embedder import Embedder
    from hopgraph.models.hop_encoder import PAD_TO

    enc = load_hop_encoder(precision="bf16")
    module = enc.embedder._model[0]
    if not hasattr(module, "processing_kwargs"):
        pytest.skip("this sentence-transformers has no per-module tokenizer options")
    texts = [hop_text(default_index.corpus, COMPARISON, r) for r in range(3)] + ["short"]
    assert module.preprocess(texts)["input_ids"].shape[1] % PAD_TO == 0
    assert module.preprocess(["short"])["input_ids"].shape[1] == PAD_TO
    assert load_hop_encoder(precision="fp32").embedder.backend == "onnx"  # fp32: not padded
    cfg = enc.meta["config"]
    plain = Embedder(cfg["teacher"], backend="torch", precision="bf16",
                     max_seq_length=int(cfg["max_seq_length"]),
                     student=str(BUNDLED_HOP_ENCODER))  # fmt: skip
    a, b = enc.embedder.encode(texts), plain.encode(texts)
    assert np.sum(a * b, axis=1).min() > 0.9999  # the padding is masked
    assert not Embedder(backend="onnx").pad_batches(PAD_TO)  # torch only
