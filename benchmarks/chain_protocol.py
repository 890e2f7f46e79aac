"""The "set held out" protocol of issue 37's experiments, in parts a script composes.
No table of its own and not run by itself (no run time): ``realistic_pools.py``,
``chain_round.py``, ``scale_held_out.py`` and others import it.

The entity-titled training sets and their questions' first-round candidates (features taken once,
``chain=0``), a LightGBM ranker fitted as the shipped one is (``training.ranker.fit``, the training
questions in the recipe's order) on every set but the held-out one, and Recall@2/5/10 (and R@5 by
number of gold passages) of the default's two rounds on a held-out set's own pool and, for
MuSiQue and HotpotQA, on its grown pool (``realistic_pools.py``). ``hop_encoder.py`` keeps its own
copy of the loop (it predates this module and adds rows of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from default_ranker import SCALE_WORK, TRAINING, default_index, scale_corpora
from default_ranker import set_of as set_of  # the protocols call it protocol.set_of
from hop_encoder import summary
from realistic_pools import SIZES, grown_pool

from hopgraph.eval.metrics import compute_all
from hopgraph.retrieve.final_fusion import corpus_weights, final_order
from hopgraph.retrieve.hop_features import corpus_kind
from hopgraph.retrieve.multihop import (
    MultihopParams,
    chain_round,
    score_candidates,
)
from hopgraph.training.ranker import Candidates, fit

Item = tuple[str, int]  # (set, question number)


@dataclass
class FirstRound:
    """One training question: its first-round candidates (features, no scores), gold rows,
    text and query vector."""

    found: Any
    gold: list[int]
    text: str
    qvec: np.ndarray

    def labels(self) -> np.ndarray:
        return np.isin(self.found.rows, self.gold).astype(int)


def protocol_args(doc: str) -> argparse.ArgumentParser:
    """The options every script of this protocol takes: the sets held out in turn, where the
    data, the index cache and the grown pools are, and the JSON report."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--held-out", default="musique_train,hotpotqa_train")
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--work", default=str(Path.home() / ".cache/hopgraph/datasets/realistic"))
    ap.add_argument("--out", default=None, help="write the results here (JSON)")
    return ap


def each_held_out(args: argparse.Namespace, run: Callable[[str], dict]) -> dict[str, Any]:
    """``run(E)`` for each set ``E`` of ``--held-out`` in turn (pool → row label → figures),
    each row printed as it comes and the report (``args`` and every set's rows) rewritten to
    ``--out`` after each set."""
    report: dict[str, Any] = {"args": vars(args), "held_out": {}}
    for E in args.held_out.split(","):
        t0 = time.time()
        report["held_out"][E] = results = run(E)
        for pool, rows in results.items():
            for label, r in rows.items():
                print(E, pool, label, json.dumps(r), flush=True)
        print(f"{E}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return report


def scale_args(ap: argparse.ArgumentParser) -> None:
    """``--scale-work`` and ``--no-scale``: where the recipe's scale training sets are, or
    none (a protocol that trains as the shipped recipe does)."""
    ap.add_argument(
        "--scale-work",
        default=str(SCALE_WORK),
        help="the recipe's scale training corpora and indexes (made where missing)",
    )
    ap.add_argument("--no-scale", action="store_true", help="without the scale training sets")


def scale_work(args: argparse.Namespace) -> Path | None:
    """The folder of ``scale_args``' training sets, or None without them."""
    return None if args.no_scale else Path(args.scale_work)


def training_sets(
    data: Path, index_dir: Path | None, s: Any = None, scale_work: Path | None = None
) -> tuple[dict[str, Any], dict]:
    """The entity-titled training sets (name → TrainingCorpus) and every question's
    :class:`FirstRound`, in the recipe's order; ``s``: the feature settings (default: the
    method's; with ``vectors`` off, every dense signal absent). ``scale_work``: also the
    recipe's scale training sets (``default_ranker.SCALE``, their corpora and indexes there),
    last, as the recipe orders them."""
    sets = [default_index(n, f, data, index_dir, split) for n, split, f in TRAINING]
    sets += scale_corpora(data, scale_work) if scale_work else []
    C = {c.name: c for c in sets if corpus_kind(c.index) == "entity_titles"}
    one = replace(s or MultihopParams().settings(), chain=0)
    t0, rounds = time.time(), {}
    for n, c in C.items():
        for qi, (q, v, g) in enumerate(zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True)):
            v = v if one.vectors else None
            found = score_candidates(c.index, one, q.text, v, None)
            rounds[(n, qi)] = FirstRound(found, list(g), q.text, v)
    print(f"first rounds: {len(rounds)} questions, {time.time() - t0:.0f} s", file=sys.stderr)
    return C, rounds


def fit_ranker(
    rounds: dict, items: list[Item], X: Callable[[Item], np.ndarray], params: dict
) -> Any:
    """A LambdaRank booster (the shipped recipe's :func:`~hopgraph.training.ranker.fit`, its
    settings updated by ``params``) on ``items``' candidates, their features ``X(item)``."""
    data = Candidates(
        np.concatenate([X(it) for it in items]),
        np.concatenate([rounds[it].labels() for it in items]),
        np.asarray([len(rounds[it].found.rows) for it in items]),
    )
    return fit([data], params)


def pools(name: str, C: dict, data: Path, work: Path, index_dir: Path | None) -> dict[str, Any]:
    """The held-out set's pools: ``own`` and, for MuSiQue and HotpotQA, the grown one."""
    out = {"own": C[name]}
    if name in SIZES:
        folder, _ = grown_pool(name, data, work)
        out[str(SIZES[name])] = default_index(folder.name, name, folder.parent, index_dir, "test")
    return out


Runs = Callable[[Any, str, np.ndarray, Any], dict[str, Any]]
"""(pool, question text, query vector, first round) → {row label: the last round (scored)}."""


def evaluate(pool: Any, runs: Runs, s: Any = None) -> dict[str, dict]:
    """Every row of ``runs`` over the pool's questions: the default's final order
    (:func:`~hopgraph.retrieve.multihop.final_order`) scored against the gold passages;
    ``s``: the feature settings (default: the method's)."""
    s = s or MultihopParams().settings()
    one = replace(s, chain=0)
    weight = corpus_weights(pool.index, s.vectors)
    ids = pool.index.corpus.ids
    rows: dict[str, list] = {}
    for q, v in zip(pool.dataset.questions, pool.qvecs, strict=True):
        v = v if s.vectors else None
        first = score_candidates(pool.index, one, q.text, v, None)
        for label, found in runs(pool, q.text, v, first).items():
            order = found.rows[final_order(found, weight, s.k_rrf)[0]]
            m = compute_all([ids[r] for r in order], q.gold, [2, 5, 10])
            rows.setdefault(label, []).append((len(q.gold), m))
    return {label: summary(r) for label, r in rows.items()}


Score = Callable[[Any], np.ndarray]
"""A round's candidates (``Scored``) → the ranker's scores."""


def two_rounds(
    pool: Any, first: Any, score: Score, chain_score: Score | None = None, s: Any = None
) -> Any:
    """The default's rounds with ``score`` as the ranker: the first round scored, then the chain
    round (:func:`~hopgraph.retrieve.multihop.chain_round`), scored by ``chain_score`` where
    given (else ``score``); ``s``: the feature settings (default: the method's)."""
    s = s or MultihopParams().settings()
    r1 = replace(first, scores=score(first))
    r2 = chain_round(pool.index, s, r1, lambda X: np.zeros(len(X)))
    return replace(r2, scores=(chain_score or score)(r2))
