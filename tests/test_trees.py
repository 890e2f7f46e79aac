"""The rankers' trees scored in numpy (hopgraph.models.trees) give lightgbm's scores and SHAP
values, on the shipped models with real feature matrices and on models with every kind of split
(missing NaN, zero as missing, categorical); a search never imports lightgbm (issue 62)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

import lightgbm as lgb
import numpy as np
import pytest

from hopgraph.models.ranker import HopRanker, RankerSet, load_ranker
from hopgraph.models.trees import TreeEnsemble


class Recorder:
    """A real TreeEnsemble that keeps every matrix it scores."""

    def __init__(self, model: TreeEnsemble):
        self.model, self.seen = model, []

    def predict(self, X: np.ndarray, **_: object) -> np.ndarray:
        self.seen.append(np.array(X))
        return self.model.predict(X)


def _shipped_models() -> dict[str, str]:
    root = resources.files("hopgraph.models")
    data = json.loads(root.joinpath("multihop-ranker.json").read_text("utf-8"))
    out = {f"multihop/{k}": v for k, v in data["models"].items()}
    out["no-vectors-rerank"] = json.loads(
        root.joinpath("no-vectors-rerank.json").read_text("utf-8")
    )["model"]
    hop = root.joinpath("hop-encoder").joinpath("ranker.json").read_text("utf-8")
    out["hop-encoder"] = json.loads(hop)["model"]
    return out


@pytest.fixture(scope="module")
def real_features(default_index, demo_dataset) -> np.ndarray:
    """The feature matrices the default scores for the demo questions (both rounds)."""
    from hopgraph.retrieve import get_retriever

    retriever = get_retriever(default_index, "default")
    recorder = Recorder(retriever.ranker.model)
    retriever.ranker = HopRanker(retriever.ranker.features, recorder, {})
    for q in demo_dataset.questions:
        retriever.search(q.text, k=10)
    return np.concatenate(recorder.seen)


def _hard_rows(model: TreeEnsemble, X: np.ndarray, seed: int) -> np.ndarray:
    """``X`` with NaNs, zeros, values within 1e-35 of 0 and values equal to split thresholds."""
    rng = np.random.default_rng(seed)
    Y = X.copy()
    Y[rng.random(Y.shape) < 0.08] = np.nan
    Y[rng.random(Y.shape) < 0.05] = 0.0
    Y[rng.random(Y.shape) < 0.02] = 5e-36
    nodes = rng.integers(0, model.n_internal, size=len(Y))
    Y[np.arange(len(Y)), model.feature[nodes]] = model.threshold[nodes]  # x == threshold: left
    return np.concatenate([X, Y])


def test_shipped_models_score_as_lightgbm(real_features):
    assert len(real_features) > 100 and real_features.shape[1] == 20
    for name, text in _shipped_models().items():
        ours, booster = TreeEnsemble(text), lgb.Booster(model_str=text)
        F = ours.num_feature()
        assert F == booster.num_feature() and ours.num_trees() == booster.num_trees()
        X = real_features
        if F != X.shape[1]:  # other features: real columns where they share the first ones
            X = np.random.default_rng(1).uniform(-1.0, 2.0, (len(X), F))
            X[:, : min(F, 20)] = real_features[:, : min(F, 20)]
        X = _hard_rows(ours, X, seed=F)
        want = booster.predict(X, num_threads=1)
        np.testing.assert_allclose(ours.predict(X), want, rtol=0, atol=1e-12, err_msg=name)
        assert np.array_equal(ours.predict(X), want), name  # summed in lightgbm's order
        rows = X[:: max(1, len(X) // 60)]
        got = ours.contributions(rows)
        want_c = booster.predict(rows, pred_contrib=True, num_threads=1)
        np.testing.assert_allclose(got, want_c, rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(got.sum(axis=1), ours.predict(rows), rtol=0, atol=1e-12)


def _fit(X: np.ndarray, y: np.ndarray, **params) -> str:
    base = {"objective": "regression", "num_leaves": 15, "n_estimators": 30, "verbosity": -1,
            "min_child_samples": 5, "num_threads": 1, "seed": 0}  # fmt: skip
    model = lgb.LGBMRegressor(**{**base, **params})
    model.fit(X, y, categorical_feature=params.pop("_cat", "auto"))
    return model.booster_.model_to_string()


@pytest.mark.parametrize("kind", ["nan", "zero", "categorical"])
def test_every_kind_of_split_scores_as_lightgbm(kind):
    rng = np.random.default_rng(7)
    n = 3000
    X = rng.normal(size=(n, 5))
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=n)
    params: dict = {}
    if kind == "nan":  # NaN in training: splits of missing type NaN, defaults both ways
        X[rng.random(X.shape) < 0.2] = np.nan
        y = np.where(np.isnan(X[:, 0]), 5.0, y)
    elif kind == "zero":
        X[rng.random(X.shape) < 0.3] = 0.0
        params["zero_as_missing"] = True
    else:
        X[:, 2] = rng.integers(0, 40, size=n)
        y = y + np.where(np.isin(X[:, 2], [3, 7, 11, 33, 38]), 3.0, 0.0)
        params["_cat"] = [2]
    text = _fit(X, y, **params)
    ours, booster = TreeEnsemble(text), lgb.Booster(model_str=text)
    if kind == "categorical":
        assert ours.categorical.any()
    else:
        assert (ours.missing[: ours.n_internal] == (2 if kind == "nan" else 1)).any()
    T = rng.normal(size=(400, 5))
    T[rng.random(T.shape) < 0.2] = np.nan
    T[rng.random(T.shape) < 0.2] = 0.0
    T[:50, 2] = [-3, -0.5, 1e10, 2.0**31, np.inf, -np.inf, 3.7, 7.0, 39.9, 64.0] * 5
    if kind == "categorical":
        T[50:, 2] = rng.integers(-2, 45, size=350)
    assert np.array_equal(ours.predict(T), booster.predict(T, num_threads=1))
    got = ours.contributions(T[:80])
    want = booster.predict(T[:80], pred_contrib=True, num_threads=1)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_default_rankings_are_lightgbms(default_index, demo_dataset):
    """The default pipeline ranks every demo question as with lightgbm's Booster, scores and
    explanations (SHAP) included."""
    from hopgraph.retrieve import get_retriever

    ours = get_retriever(default_index, "default")
    theirs = get_retriever(default_index, "default")
    model = ours.ranker.model
    assert isinstance(model, TreeEnsemble)
    theirs.ranker = HopRanker(ours.ranker.features, lgb.Booster(model_str=model._text), {})
    for q in demo_dataset.questions:
        a, b = ours.search(q.text, k=10), theirs.search(q.text, k=10)
        assert a.ids == b.ids and np.allclose(a.scores, b.scores, rtol=0, atol=1e-12)
        assert [w.get("lifted_by") for w in a.explanations] == [
            w.get("lifted_by") for w in b.explanations
        ]


def test_bad_models_are_refused():
    for text in ("", "nonsense", "tree\nversion=v4\n"):
        with pytest.raises(ValueError):
            TreeEnsemble(text)
    good = _shipped_models()["hop-encoder"]
    with pytest.raises(ValueError, match="objective"):
        TreeEnsemble(good.replace("objective=lambdarank", "objective=binary sigmoid:1"))
    with pytest.raises(ValueError, match="linear"):
        TreeEnsemble(good.replace("is_linear=0", "is_linear=1", 1))
    with pytest.raises(ValueError):
        TreeEnsemble(good.replace("left_child=", "left_child=0 ", 1))


def test_ranker_set_loads_without_lightgbm():
    rs = load_ranker()
    assert isinstance(rs, RankerSet)
    assert all(isinstance(r.model, TreeEnsemble) for r in rs.rankers.values())


SEARCH = """
import sys
from hopgraph.cli import cli
sys.argv = ["hopgraph", "search", sys.argv[1], "Who founded the shipyard?", "-k", "3"]
try:
    cli.main(standalone_mode=False)
finally:
    heavy = ("lightgbm", "sklearn", "pandas", "numba", "torch", "hopgraph.eval",
             "hopgraph.cli.evaluation", "hopgraph.cli.train", "hopgraph.cli.serve")
    print("LOADED", sorted(m for m in heavy if m in sys.modules))
"""


def test_search_command_imports_only_what_it_uses(default_index, tmp_path):
    """A fresh `hopgraph search`: no lightgbm (nor scikit-learn, pandas), no numba (no kernel
    is compiled or loaded on a small index), no torch, no evaluation, training or serving, and
    nothing on stderr about its own start-up."""
    folder = tmp_path / "ix"
    default_index.save(folder)
    r = subprocess.run([sys.executable, "-c", SEARCH, str(folder)], capture_output=True,
                       text=True, check=True)  # fmt: skip
    assert "LOADED []" in r.stdout, r.stdout[-500:]
    assert "1. [" in r.stdout
    assert r.stderr == ""


def test_training_without_lightgbm_names_the_extra():
    script = """
import sys
sys.modules["lightgbm"] = None
from hopgraph.errors import ConfigError
from hopgraph.training.ranker import fit
try:
    fit([])
except ConfigError as exc:
    print("ERROR", exc)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "ERROR training a ranker needs lightgbm" in r.stdout, r.stdout + r.stderr
    assert "hopgraph[train]" in r.stdout
