"""Experiment (issue 37): a hop *projector* over the index's own vectors, set held out.

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/hop_projector.py \
        --data-dir ../shared/data \
        --held-out musique_train,hotpotqa_train,musique,hotpotqa,2wikimultihopqa [--seeds 5] \
        [--out FILE.json]

The hop encoder (``benchmarks/hop_encoder.py``) reads ``question [SEP] anchor text`` with
MiniLM at query time: 65-110 ms a search. A projector reads only vectors the search already
has: the question's query vector ``q`` and the anchor's passage vector ``p`` from the index, and
gives the next hop's vector ``normalize(q + MLP([q, p, q*p, q-p]))`` (the MLP's last layer starts
at zero, so an untrained projector is the question itself). It costs a matrix product a round.
Trained exactly where the hop encoder is (every ordered pair of a question's gold passages:
(q, p_a) → p_b against the first round's first ``--negatives`` non-gold candidates, InfoNCE at
temperature 0.05), an ensemble of ``--seeds`` draws averaged; the two features, the ranker's
cross-fitting in two halves and the rows are those of ``hop_encoder.py`` (set held out; the
held-out set's own pool and, for MuSiQue and HotpotQA, the grown pool).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
from chain_protocol import (
    each_held_out,
    evaluate,
    fit_ranker,
    pools,
    protocol_args,
    training_sets,
    two_rounds,
)  # noqa: E402

from hopgraph.models.hop_encoder import ANCHORS, hop_columns  # noqa: E402
from hopgraph.text.questions import is_comparison  # noqa: E402

TAU = 0.05


def projector(d: int, hidden: int, dropout: float) -> Any:
    import torch

    class Projector(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(4 * d, hidden),
                torch.nn.GELU(),
                torch.nn.Dropout(dropout),
                torch.nn.Linear(hidden, d),
            )
            torch.nn.init.zeros_(self.net[-1].weight)
            torch.nn.init.zeros_(self.net[-1].bias)

        def forward(self, q: Any, p: Any) -> Any:
            x = torch.cat([q, p, q * p, q - p], dim=-1)
            return torch.nn.functional.normalize(q + self.net(x), dim=-1)

    return Projector()


def train(Q, P, T, N, args, seed: int) -> Any:
    """One projector: (Q[i], P[i]) → T[i] against N[i] (negatives), InfoNCE."""
    import torch

    torch.manual_seed(seed)
    m = projector(Q.shape[1], args.hidden, args.dropout)
    opt = torch.optim.AdamW(m.parameters(), lr=args.lr, weight_decay=args.wd)
    Qt, Pt = torch.from_numpy(Q), torch.from_numpy(P)
    C = torch.from_numpy(np.concatenate([T[:, None, :], N], axis=1))
    rng = np.random.default_rng(seed)
    for _ in range(args.epochs):
        m.train()
        order = rng.permutation(len(Q))
        for lo in range(0, len(order), args.batch):
            b = torch.from_numpy(order[lo : lo + args.batch])
            h = m(Qt[b], Pt[b])
            logits = torch.einsum("bd,bkd->bk", h, C[b]) / TAU
            loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(b), dtype=torch.long))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return m.eval()


class Ensemble:
    def __init__(self, models: list):
        self.models = models

    def __call__(self, q: np.ndarray, P: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            qt = torch.from_numpy(np.repeat(q[None, :], len(P), 0).astype(np.float32))
            pt = torch.from_numpy(P.astype(np.float32))
            H = sum(m(qt, pt) for m in self.models)
            return torch.nn.functional.normalize(H, dim=-1).numpy()


def columns(proj: Ensemble, index: Any, qvec: np.ndarray, found: Any) -> np.ndarray:
    """The hop encoder's two features of a round's candidates, the projector's hop vectors of
    the round's top :data:`ANCHORS` anchors in place of the encoder's."""
    dense = index.part("dense")
    A = [int(a) for a in found.anchors[:ANCHORS]]
    if not A:
        return np.zeros((len(found.rows), 2))
    H = proj(qvec, dense.vectors(np.asarray(A, np.int64)))
    return hop_columns(dense, found.rows, A, list(H), found.feats.X)


def main() -> None:
    ap = protocol_args(__doc__)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--negatives", type=int, default=16)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(2)
    C, rounds = training_sets(Path(args.data_dir), args.index_dir)
    each_held_out(args, lambda E: held_out(E, C, rounds, args))


def pairs_of(C: dict, rounds: dict, items: list, negatives: int) -> tuple:
    """Every ordered pair (a, b) of each question's gold rows: (q, p_a) → p_b, with the first
    ``negatives`` non-gold candidates' vectors (questions with fewer are left out)."""
    Q, P, T, N = [], [], [], []
    for it in items:
        r = rounds[it]
        dense = C[it[0]].index.part("dense")
        negs = [int(x) for x in r.found.rows if int(x) not in set(r.gold)][:negatives]
        if len(negs) < negatives:
            continue
        NV = dense.vectors(np.asarray(negs, np.int64))
        for a in r.gold:
            for b in r.gold:
                if a != b:
                    Q.append(r.qvec)
                    P.append(dense.vectors(np.asarray([a]))[0])
                    T.append(dense.vectors(np.asarray([b]))[0])
                    N.append(NV)
    f = np.float32
    return np.asarray(Q, f), np.asarray(P, f), np.asarray(T, f), np.asarray(N, f)


def held_out(E: str, C: dict, rounds: dict, args: argparse.Namespace) -> dict[str, Any]:
    """Set ``E`` held out: projectors cross-fitted on the other sets' chains (in two halves, as
    ``hop_encoder.py`` fits its encoders), the rankers, and the rows on ``E``'s pools."""

    def ensemble(items: list) -> Ensemble:
        Q, P, T, N = pairs_of(C, rounds, items, args.negatives)
        return Ensemble([train(Q, P, T, N, args, seed) for seed in range(args.seeds)])

    train_items = [it for it in rounds if it[0] != E]  # the recipe's order
    shuffled = list(train_items)
    random.Random(0).shuffle(shuffled)
    folds = [shuffled[0::2], shuffled[1::2]]
    X_extra = {}
    for k in range(2):
        proj = ensemble(folds[1 - k])
        for it in folds[k]:
            X_extra[it] = columns(proj, C[it[0]].index, rounds[it].qvec, rounds[it].found)
    full = ensemble(train_items)  # the evaluated questions' projector: every training chain

    def base(it: tuple) -> np.ndarray:
        return rounds[it].found.feats.X

    def wide(it: tuple) -> np.ndarray:
        return np.column_stack([base(it), X_extra[it]])

    chains = [it for it in train_items if not is_comparison(rounds[it].text)]
    boosters = {"default": (fit_ranker(rounds, train_items, base, {}), False),
                "proj": (fit_ranker(rounds, train_items, wide, {}), True),
                "proj (chains)": (fit_ranker(rounds, chains, wide, {}), True)}  # fmt: skip

    def runs(pool: Any, text: str, v: np.ndarray, first: Any) -> dict[str, Any]:
        def score(label: str) -> Any:
            booster, extra = boosters[label]

            def f(found: Any) -> np.ndarray:
                X = found.feats.X
                if extra:
                    X = np.column_stack([X, columns(full, pool.index, v, found)])
                return booster.predict(X, num_threads=1)

            return f

        out = {f"{label}, chain": two_rounds(pool, first, score(label)) for label in boosters}
        gate = is_comparison(text)
        for label in ("proj", "proj (chains)"):
            out[f"{label}, chain, gated"] = out["default, chain" if gate else f"{label}, chain"]
        out["proj (chains), chain round only, gated"] = (
            out["default, chain"] if gate
            else two_rounds(pool, first, score("default"), score("proj (chains)"))
        )  # fmt: skip
        return out

    where = pools(E, C, Path(args.data_dir), Path(args.work), args.index_dir)
    return {name: evaluate(pool, runs) for name, pool in where.items()}


if __name__ == "__main__":
    main()
