"""GAT training: the listwise loss, size buckets, and a run that must learn a simple signal."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hopgraph.errors import ConfigError  # noqa: E402
from hopgraph.training.gat import (  # noqa: E402
    GraphExample,
    TrainConfig,
    _buckets,
    listwise_loss,
    train_gat,
)


def test_listwise_loss_by_hand():
    scores = torch.tensor([[2.0, 0.0, 1.0, 5.0]])
    y = torch.tensor([[True, False, True, False]])
    mask = torch.tensor([[True, True, True, False]])  # the last node is padding
    logz = math.log(math.exp(2) + math.exp(0) + math.exp(1))
    want = -((2 - logz) + (1 - logz)) / 2
    assert float(listwise_loss(scores, y, mask)) == pytest.approx(want, rel=1e-6)


def _examples(n_graphs: int, seed: int = 0) -> list[GraphExample]:
    rng = np.random.default_rng(seed)
    out = []
    for g in range(n_graphs):
        n = int(rng.integers(5, 40))
        x = rng.normal(size=(n, 6)).astype(np.float32)
        y = np.zeros(n, bool)
        y[rng.choice(n, 2, replace=False)] = True
        x[:, 0] = np.where(y, 1.0, rng.uniform(-1, 0.6, n))  # the signal: feature 0
        adj = rng.random((n, n)) < 0.1
        out.append(GraphExample(f"q{g}", x, adj | adj.T, y))
    return out


def test_buckets_cover_every_graph_once_with_similar_sizes():
    ex = _examples(100)
    batches = _buckets(ex, 8, random.Random(0))
    assert sorted(e.question for b in batches for e in b) == sorted(e.question for e in ex)
    spread = np.mean([max(len(e.y) for e in b) - min(len(e.y) for e in b) for b in batches])
    assert spread < 15  # sizes range 5-39; unbucketed batches would spread ~30


def test_training_learns_the_signal_and_keeps_the_best_epoch():
    torch.set_num_threads(1)
    ex = _examples(60)
    cfg = TrainConfig(epochs=25, lr=3e-3, hidden=16, heads=2, layers=2, fc_hidden=8, patience=25)
    res = train_gat(ex, cfg, progress=False)
    assert res.n_val == math.ceil(0.2 * 60) and res.n_train == 60 - res.n_val
    best = res.history[res.best_epoch - 1]
    assert best["val_pr@10"] == max(h["val_pr@10"] for h in res.history)
    assert best["val_pr@10"] > 0.9
    assert res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    with pytest.raises(ConfigError):
        train_gat(ex[:3], cfg, progress=False)
    with pytest.raises(ConfigError):
        train_gat(ex, TrainConfig(hidden=10, heads=4), progress=False)
