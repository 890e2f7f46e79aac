"""Fitting the ``multihop`` ranker: LightGBM LambdaRank over each question's candidates.

Labels are the gold passages among the candidates; every question is one LambdaRank group.
One model per corpus kind (:data:`~hopgraph.models.ranker.CORPUS_KINDS`): ``entity_titles`` is
fitted on the corpora of that kind only, ``plain_titles`` on every corpus (the multi-hop sets
teach it the second hop), the table sets and pseudo-query sets (:mod:`hopgraph.training.pseudo`)
included; a corpus can name the models it trains (``TrainingCorpus.trains``).
Everything is deterministic (LightGBM ``deterministic=True``, one thread, fixed seed), so the
same questions and settings give the same model file byte for byte. Leave-one-family-out
evaluation refits without every corpus of one family (a dev set and its train set together)
and measures on that family's dev questions: the transfer to a corpus the ranker never saw.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from tqdm import tqdm

from hopgraph.corpus import Dataset
from hopgraph.eval.metrics import compute_all
from hopgraph.index import Index
from hopgraph.models.ranker import CORPUS_KINDS, HopRanker, RankerSet, ranker_kind
from hopgraph.retrieve.final_fusion import corpus_weights, final_order
from hopgraph.retrieve.hop_features import FEATURES, HopSettings, corpus_kind
from hopgraph.retrieve.multihop import score_candidates
from hopgraph.training import import_lightgbm

LGB_PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "n_estimators": 100,
    "learning_rate": 0.05,
    "num_leaves": 15,
    "min_child_samples": 20,
    "lambdarank_truncation_level": 20,
    "deterministic": True,
    "force_row_wise": True,
    "n_jobs": 1,
    "random_state": 0,
    "verbose": -1,
}


@dataclass
class TrainingCorpus:
    """One corpus's index and questions, with its query vectors and gold rows; corpora of one
    ``family`` (a dev set and its train set) are held out together."""

    name: str
    family: str
    index: Index
    dataset: Dataset
    qvecs: np.ndarray = field(repr=False)
    gold_rows: list[list[int]] = field(repr=False)
    trains: tuple[str, ...] = ()
    """The corpus kinds whose model it trains; empty: by its own kind (an entity-titled corpus
    trains both models, a plain-titled one the ``plain_titles`` model)."""
    source: str = ""
    """The corpus it was drawn from (pseudo-queries), held out with it; empty: ``name``."""

    @classmethod
    def of(
        cls, name: str, family: str, index: Index, dataset: Dataset, **kw: Any
    ) -> TrainingCorpus:
        qs = dataset.questions
        qvecs = np.asarray(index.part("dense").encode_queries([q.text for q in qs]))
        pos = index.corpus.position
        gold = [[pos(g) for g in q.gold if g in index.corpus] for q in qs]
        return cls(name, family, index, dataset, qvecs, gold, **kw)

    def models(self) -> tuple[str, ...]:
        """The corpus kinds whose model this corpus's questions train."""
        if self.trains:
            return self.trains
        if corpus_kind(self.index) == "entity_titles":
            return CORPUS_KINDS
        return ("plain_titles",)


@dataclass
class Candidates:
    """Every question's candidate features, labels and group sizes, for one corpus."""

    X: np.ndarray
    y: np.ndarray
    groups: np.ndarray


def collect(c: TrainingCorpus, s: HopSettings, progress: bool = False) -> Candidates:
    """The candidates of every question of ``c`` and which of them are gold."""
    Xs, ys, gs = [], [], []
    items = list(zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True))
    for q, v, gold in tqdm(items, desc=f"features {c.name}", unit="q", disable=not progress):
        found = score_candidates(c.index, s, q.text, v, None)
        Xs.append(found.feats.X)
        ys.append(np.isin(found.rows, gold).astype(np.int32))
        gs.append(len(found.rows))
    return Candidates(np.concatenate(Xs), np.concatenate(ys), np.asarray(gs))


def fit(data: Sequence[Candidates], params: dict[str, Any] | None = None) -> Any:
    """A LambdaRank booster on the questions of ``data`` (needs lightgbm: the ``train``
    extra)."""
    lgb = import_lightgbm()

    model = lgb.LGBMRanker(**{**LGB_PARAMS, **(params or {})})
    model.fit(
        np.concatenate([d.X for d in data]),
        np.concatenate([d.y for d in data]),
        group=np.concatenate([d.groups for d in data]),
    )
    return model.booster_


def train(
    corpora: Sequence[TrainingCorpus],
    s: HopSettings,
    *,
    exclude: str | None = None,
    progress: bool = True,
    cache: dict[str, Candidates] | None = None,
) -> RankerSet:
    """The rankers fitted on ``corpora`` (without the family ``exclude``): ``entity_titles`` on
    the corpora of that kind (all of them when there is none), ``plain_titles`` on all.
    ``cache`` keeps each corpus's candidates between calls with the same settings."""
    cache = {} if cache is None else cache
    use = [c for c in corpora if c.family != exclude]
    for c in use:
        if c.name not in cache:
            cache[c.name] = collect(c, s, progress)
    named = [c for c in use if "entity_titles" in c.models()] or use
    fitted_on = {"entity_titles": named, "plain_titles": [c for c in use if "plain_titles" in
                 c.models()] or use}  # fmt: skip
    meta = {
        "trained_on": {
            kind: {c.name: len(c.dataset.questions) for c in cs} for kind, cs in fitted_on.items()
        },
        # the settings the features were collected with (the chain round is search-time only)
        "settings": {k: v for k, v in s.__dict__.items() if k not in ("drop", "vectors", "chain")},
        "lightgbm": {"version": _lgb_version(), **LGB_PARAMS},
        "python": platform.python_version(),
    }
    rankers = {
        ranker_kind(kind, s.vectors): HopRanker(FEATURES, fit([cache[c.name] for c in cs]), meta)
        for kind, cs in fitted_on.items()
    }
    return RankerSet(FEATURES, rankers, meta)


def train_both(
    corpora: Sequence[TrainingCorpus],
    s: HopSettings,
    *,
    exclude: str | None = None,
    progress: bool = True,
    cache: dict[str, Any] | None = None,
) -> RankerSet:
    """:func:`train` with the passage vectors and without them (``s.vectors`` off: the models
    for an index without its dense part), in one set: what the shipped file holds. ``cache``
    keeps the candidates of both between calls."""
    cache = {} if cache is None else cache
    full = train(corpora, replace(s, vectors=True), exclude=exclude, progress=progress,
                 cache=cache.setdefault("vectors", {}))  # fmt: skip
    bare = train(corpora, replace(s, vectors=False), exclude=exclude, progress=progress,
                 cache=cache.setdefault("no_vectors", {}))  # fmt: skip
    return RankerSet(FEATURES, {**full.rankers, **bare.rankers}, full.meta)


def _lgb_version() -> str:
    return str(import_lightgbm().__version__)


def evaluate_ranker(
    c: TrainingCorpus, rankers: RankerSet, s: HopSettings, ks: Sequence[int] = (2, 5, 10)
) -> dict[str, float]:
    """Mean Recall@k, nDCG@10 and MRR on ``c``'s questions of the ranker for ``c``'s kind,
    fused with BM25 where the corpus profile says so (as ``multihop`` does), over the
    candidates (for k ≤ 10 the candidates always fill the list, so this is the method's own
    ranking)."""
    ids = c.index.corpus.ids
    ranker = rankers.for_kind(ranker_kind(corpus_kind(c.index), s.vectors))
    weight = corpus_weights(c.index, s.vectors)  # as multihop sets it
    rows: list[dict[str, float]] = []
    for q, v in zip(c.dataset.questions, c.qvecs, strict=True):
        found = score_candidates(c.index, s, q.text, v, ranker.score)
        order = found.rows[final_order(found, weight, s.k_rrf)[0]]
        rows.append(compute_all([ids[r] for r in order], q.gold, [*ks, 10]))
    keys = [f"recall@{k}" for k in ks] + ["ndcg@10", "mrr"]
    return {k: float(np.mean([m[k] for m in rows])) for k in keys}
