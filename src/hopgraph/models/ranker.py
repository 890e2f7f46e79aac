"""The ``multihop`` method's learned ranker: LightGBM LambdaRank models in one JSON file.

A model scores candidate passages from named features (:mod:`hopgraph.retrieve.hop_features`).
The file names them, so a model and the code that computes them cannot drift apart silently.
It holds one model per corpus kind (:data:`CORPUS_KINDS`): ``entity_titles`` for corpora whose
titles are entity names (title aliases detected on: Wikipedia-like pages, where the second-hop
signals live), ``plain_titles`` for the rest (papers, documents). A single model for both let
SciFact's 809 one-hop questions pull the 2Wiki transfer from 0.91 to 0.83 Recall@5
(docs/benchmarks.md). Models are fitted by :mod:`hopgraph.training.ranker`;
``benchmarks/default_ranker.py`` reproduces the shipped file. The models are scored by
:class:`~hopgraph.models.trees.TreeEnsemble` (their trees as numpy arrays, LightGBM's scores),
so a search never imports lightgbm; training needs it (the ``train`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.trees import TreeEnsemble

BUNDLED = "multihop-ranker.json"
KIND = "lightgbm-lambdarank"
CORPUS_KINDS = ("entity_titles", "plain_titles")
NO_VECTORS = "_no_vectors"
"""Suffix of the models for an index without passage vectors (sparse and entity parts only,
or a staged build whose vectors are still being encoded): fitted on the same questions with
every dense signal absent."""


def ranker_kind(corpus_kind: str, vectors: bool = True) -> str:
    """The model a corpus of ``corpus_kind`` is ranked by, with or without passage vectors."""
    return corpus_kind if vectors else corpus_kind + NO_VECTORS


@dataclass
class HopRanker:
    features: tuple[str, ...]
    model: Any  # a TreeEnsemble (or anything with lightgbm.Booster's predict)
    meta: dict[str, Any]

    def score(self, X: np.ndarray) -> np.ndarray:
        """The model's score for each row of ``X`` (columns in ``features`` order)."""
        if len(X) == 0:
            return np.zeros(0)
        if isinstance(self.model, TreeEnsemble):
            return self.model.predict(X)
        return np.asarray(self.model.predict(X, num_threads=1), np.float64)

    def contributions(self, X: np.ndarray) -> np.ndarray:
        """Each feature's share of each row's score (SHAP values, one column per feature; the
        last column is the expected score)."""
        if len(X) == 0:
            return np.zeros((0, len(self.features) + 1))
        if isinstance(self.model, TreeEnsemble):
            return self.model.contributions(X)
        return np.asarray(self.model.predict(X, pred_contrib=True, num_threads=1), np.float64)

    def check_features(self, expected: Sequence[str]) -> None:
        if tuple(self.features) != tuple(expected):
            raise ConfigError(
                f"ranker model expects features {list(self.features)}, this hopgraph computes "
                f"{list(expected)}: retrain it (benchmarks/default_ranker.py)"
            )


@dataclass
class RankerSet:
    """One :class:`HopRanker` per corpus kind, saved together in one file."""

    features: tuple[str, ...]
    rankers: dict[str, HopRanker]
    meta: dict[str, Any]

    def for_kind(self, kind: str) -> HopRanker:
        if kind not in self.rankers:
            if kind.endswith(NO_VECTORS):
                raise ConfigError(
                    f"ranker file has no model for an index without passage vectors "
                    f"({kind!r}; benchmarks/default_ranker.py fits one): add the dense part "
                    "(hopgraph add-parts INDEX_DIR --parts dense) or use a ranker file with it"
                )
            raise ConfigError(f"ranker file has no model for {kind!r} corpora")
        return self.rankers[kind]

    def check_features(self, expected: Sequence[str]) -> None:
        for r in self.rankers.values():
            r.check_features(expected)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "features": list(self.features),
            "models": {k: r.model.model_to_string() for k, r in self.rankers.items()},
            "meta": self.meta,
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path


def ranker_from_json(data: Any, where: str = "ranker") -> RankerSet:
    """The rankers from the parsed JSON of a ranker file (``where`` names it in errors)."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        kind = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise ConfigError(f"{where}: not a {KIND} ranker (kind={kind!r})")
    try:
        feats = tuple(str(f) for f in data["features"])
        models = {str(k): TreeEnsemble(str(v)) for k, v in data["models"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{where}: malformed ranker file ({exc})") from None
    missing = [k for k in CORPUS_KINDS if k not in models]
    if missing:
        raise ConfigError(f"{where}: no model for {', '.join(missing)} corpora")
    for kind, model in models.items():
        if model.num_feature() != len(feats):
            raise ConfigError(
                f"{where}: the {kind} model has {model.num_feature()} features, the file names "
                f"{len(feats)}"
            )
    meta = dict(data.get("meta") or {})
    return RankerSet(feats, {k: HopRanker(feats, m, meta) for k, m in models.items()}, meta)


def load_ranker(path: str | Path | None = None) -> RankerSet:
    """The rankers at ``path``, or the ones shipped with hopgraph when ``path`` is None."""
    if path is None:
        text = resources.files("hopgraph.models").joinpath(BUNDLED).read_text(encoding="utf-8")
        return ranker_from_json(json.loads(text), f"bundled {BUNDLED}")
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"ranker model {str(p)!r} not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"ranker model {str(p)!r} unreadable: {exc}") from None
    return ranker_from_json(data, str(p))
