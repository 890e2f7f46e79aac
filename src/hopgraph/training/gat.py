"""Train GraphER's graph attention ranker (``hopgraph train-gat``).

Each training question gives one graph: the base retriever's top-n candidates, the GraphER
edges among them, node features [GCS score, query embedding, passage embedding] and labels
(gold or not). The loss is listwise: the softmax cross-entropy of the gold candidates against
all candidates of their graph. A share of the questions is held out for validation; the epoch
with the best validation PR@10 (then Recall@10, then loss) is kept, and training stops after
``patience`` epochs without improvement.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hopgraph.corpus import Dataset
from hopgraph.errors import ConfigError
from hopgraph.graph.cohesion import graph_cohesive_smoothing
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.grapher import GraphERParams, candidate_graph, gat_features


@dataclass
class GraphExample:
    """One question's candidate graph with node features and gold labels."""

    question: str
    x: np.ndarray  # (n, features) float32
    adj: np.ndarray  # (n, n) bool
    y: np.ndarray  # (n,) bool


@dataclass
class TrainConfig:
    epochs: int = 60
    lr: float = 1e-3
    weight_decay: float = 1e-4
    batch_size: int = 16
    val_fraction: float = 0.2
    patience: int = 8
    seed: int = 0
    hidden: int = 64
    heads: int = 4
    layers: int = 5
    fc_hidden: int = 32
    dropout: float = 0.1
    message_passing: bool = True
    residual: float = 0.0

    def validate(self) -> None:
        if not 0 < self.val_fraction < 1:
            raise ConfigError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        for name in ("epochs", "batch_size", "hidden", "heads", "layers", "fc_hidden"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.hidden % self.heads:
            raise ConfigError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.lr <= 0 or self.weight_decay < 0:
            raise ConfigError("lr must be > 0 and weight_decay >= 0")


@dataclass
class TrainResult:
    model: Any
    best_epoch: int
    history: list[dict[str, float]] = field(default_factory=list)
    n_train: int = 0
    n_val: int = 0
    skipped: int = 0
    gcs_validation: dict[str, float] = field(default_factory=dict)


def graph_examples(
    index: Index,
    dataset: Dataset,
    params: GraphERParams,
    *,
    progress: bool = True,
) -> tuple[list[GraphExample], int]:
    """Candidate graphs of ``dataset``'s questions over ``index``; questions whose gold is not
    among the candidates teach nothing and are skipped (their count is returned)."""
    base = get_retriever(index, params.base)
    dense = index.part("dense")
    vectors = dense.embeddings
    out: list[GraphExample] = []
    skipped = 0
    n = min(params.n, len(index.corpus))
    questions = dataset.questions
    qvecs = dense.encode_queries([q.text for q in questions])
    for q, qvec in tqdm(
        list(zip(questions, qvecs, strict=True)),
        desc=f"graphs {dataset.name}",
        disable=not progress,
    ):
        r = base._search(q.text, n, qvec if base.uses_dense else None)
        g = candidate_graph(index, params, r)
        gold = set(q.gold)
        y = np.array([index.corpus[int(row)].id in gold for row in g.rows])
        if not y.any():
            skipped += 1
            continue
        gcs = graph_cohesive_smoothing(
            g.adjacency, g.seed, params.alpha, params.eps, params.max_iter
        )
        out.append(GraphExample(q.id, gat_features(g, gcs[0], qvec, vectors), g.adjacency > 0, y))
    return out, skipped


def _batch(examples: Sequence[GraphExample]):  # noqa: ANN202 - torch tensors
    import torch

    b, n = len(examples), max(len(e.y) for e in examples)
    d = examples[0].x.shape[1]
    x = torch.zeros(b, n, d)
    adj = torch.zeros(b, n, n, dtype=torch.bool)
    y = torch.zeros(b, n, dtype=torch.bool)
    mask = torch.zeros(b, n, dtype=torch.bool)
    for i, e in enumerate(examples):
        m = len(e.y)
        x[i, :m] = torch.from_numpy(e.x)
        adj[i, :m, :m] = torch.from_numpy(e.adj)
        y[i, :m] = torch.from_numpy(e.y)
        mask[i, :m] = True
    return x, adj, y, mask


def _buckets(
    examples: list[GraphExample], size: int, rng: random.Random
) -> list[list[GraphExample]]:
    """Shuffled batches of graphs of similar size (padding a 5-table graph to 200 nodes would
    cost as much as a 200-node graph): shuffle, sort windows of 8 batches by size, cut."""
    order = examples[:]
    rng.shuffle(order)
    window = size * 8
    batches = []
    for i in range(0, len(order), window):
        chunk = sorted(order[i : i + window], key=lambda e: len(e.y))
        batches += [chunk[j : j + size] for j in range(0, len(chunk), size)]
    rng.shuffle(batches)
    return batches


def listwise_loss(scores, y, mask):  # noqa: ANN001, ANN201 - torch tensors
    """Mean over graphs of −(1/|gold|)·Σ_gold log softmax(scores)[gold]."""
    import torch

    s = scores.masked_fill(~mask, -1e9)
    logp = torch.log_softmax(s, dim=-1)
    per_graph = -(logp * y).sum(-1) / y.sum(-1).clamp(min=1)
    return per_graph.mean()


def _ranking_metrics(scores, y, mask, k: int = 10) -> tuple[float, float]:  # noqa: ANN001
    """(PR@k, Recall@k) summed over the batch's graphs."""
    import torch

    s = scores.masked_fill(~mask, -float("inf"))
    top = torch.topk(s, min(k, s.shape[-1]), dim=-1).indices
    hits = torch.gather(y, -1, top).sum(-1).float()
    n_gold = y.sum(-1).float()
    return float((hits == n_gold).float().sum()), float((hits / n_gold).sum())


def train_gat(
    examples: Sequence[GraphExample],
    config: TrainConfig,
    *,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train a :class:`~hopgraph.models.gat.GATRanker` on ``examples`` (see module docs)."""
    import torch

    from hopgraph.models.gat import GATRanker

    config.validate()
    if len(examples) < 5:
        raise ConfigError(f"need at least 5 training graphs, got {len(examples)}")
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)
    order = list(range(len(examples)))
    random.Random(config.seed).shuffle(order)
    n_val = max(1, math.ceil(config.val_fraction * len(examples)))
    val = [examples[i] for i in order[:n_val]]
    train = [examples[i] for i in order[n_val:]]
    model = GATRanker(
        examples[0].x.shape[1],
        hidden=config.hidden,
        heads=config.heads,
        layers=config.layers,
        fc_hidden=config.fc_hidden,
        message_passing=config.message_passing,
        dropout=config.dropout,
        residual=config.residual,
    )
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    val_sorted = sorted(val, key=lambda e: len(e.y))
    val_batches = [_batch(val_sorted[i : i + 32]) for i in range(0, len(val), 32)]
    # the yardstick: ranking the validation graphs by their GCS score alone (feature 0)
    gcs_pr = gcs_rec = 0.0
    for x, _, y, mask in val_batches:
        pr, rec = _ranking_metrics(x[..., 0], y, mask)
        gcs_pr, gcs_rec = gcs_pr + pr, gcs_rec + rec
    gcs_val = {"val_pr@10": gcs_pr / len(val), "val_recall@10": gcs_rec / len(val)}
    if log:
        log(f"GCS alone on validation: PR@10 {gcs_val['val_pr@10']:.4f}")
    best: tuple[float, float, float] | None = None
    best_state, best_epoch, history, stale = None, 0, [], 0
    bar = tqdm(range(1, config.epochs + 1), desc="train-gat", unit="epoch", disable=not progress)
    rng = random.Random(config.seed + 1)
    for epoch in bar:
        model.train()
        total = 0.0
        for batch in _buckets(train, config.batch_size, rng):
            x, adj, y, mask = _batch(batch)
            loss = listwise_loss(model(x, adj, mask), y, mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(y)
        model.eval()
        v_loss = v_pr = v_rec = 0.0
        with torch.no_grad():
            for x, adj, y, mask in val_batches:
                scores = model(x, adj, mask)
                v_loss += float(listwise_loss(scores, y, mask)) * len(y)
                pr, rec = _ranking_metrics(scores, y, mask)
                v_pr += pr
                v_rec += rec
        row = {
            "epoch": epoch,
            "train_loss": total / len(train),
            "val_loss": v_loss / len(val),
            "val_pr@10": v_pr / len(val),
            "val_recall@10": v_rec / len(val),
        }
        history.append(row)
        bar.set_postfix(val_pr10=f"{row['val_pr@10']:.3f}", val_loss=f"{row['val_loss']:.3f}")
        if log:
            log(
                ", ".join(
                    f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()
                )
            )
        key = (row["val_pr@10"], row["val_recall@10"], -row["val_loss"])
        if best is None or key > best:
            best, best_epoch, stale = key, epoch, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            stale += 1
            if stale >= config.patience:
                break
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    return TrainResult(model, best_epoch, history, len(train), len(val), gcs_validation=gcs_val)


def model_card(
    result: TrainResult, config: TrainConfig, params: GraphERParams, sources: list[dict[str, Any]]
) -> dict[str, Any]:
    """What ``config.json`` records besides the architecture: how and on what it was trained."""
    best = result.history[result.best_epoch - 1]
    return {
        "features": "gcs/max(gcs), query embedding, passage embedding",
        "grapher_params": asdict(params),
        "train_config": asdict(config),
        "training_data": sources,
        "n_train_graphs": result.n_train,
        "n_val_graphs": result.n_val,
        "best_epoch": result.best_epoch,
        "best_validation": {k: v for k, v in best.items() if k != "epoch"},
        "gcs_alone_validation": result.gcs_validation,
    }
