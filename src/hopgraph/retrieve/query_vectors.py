"""Vectors at query time for an index without them: the top candidates reranked by their cosine.

An index whose passage vectors are still being encoded (a staged build's first stage) is
searched by ``multihop`` without any dense signal, and loses recall where questions paraphrase
their passages (MuSiQue: 4.3 points of R@5, docs/benchmarks.md). Here the question and the
no-vector order's top ``n`` passages are encoded when the search runs, and a LambdaRank model
reorders those ``n`` from what the vectors say (the question's cosine with each, its gap to the
best and its rank among them, the hop cosine through the best-ranked others,
``normalise(q + v_anchor)``) beside the no-vector score, place and a few own features. It costs
the encoding of ``n`` passages a search (hundreds of ms on two cores; docs/benchmarks.md), so
it runs only where an index has no vectors, and ``multihop.query_vectors`` sets ``n``.

The model is fitted on the entity-titled training sets' tops, each ranked by a no-vector ranker
fitted without that set (``benchmarks/no_vector_rerank.py --ship``), and applies to corpora whose
titles are entity names (``entity_titles``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.atomic import write_synced
from hopgraph.errors import ConfigError
from hopgraph.models.ranker import KIND, HopRanker
from hopgraph.retrieve.hop_features import FEATURES

BUNDLED = "no-vectors-rerank.json"
TOP = 40  # passages reranked: the train sets' choice among 20-60 (docs/benchmarks.md, issue 38)
ANCHORS = 3  # the best-ranked passages the hop cosine goes through
ENCODE_BATCH = 4
"""Passages a forward pass at query time: batches of 4 (length-sorted) pad little; a search
that encodes 20 takes ~0.32 s with bf16 on 2 cores against ~0.55 s with one batch of 20, one
that encodes 40 about twice the first (docs/benchmarks.md)."""
OWN = ("bm25", "ppr", "bm25_rank", "ppr_rank", "title_in_query", "title_overlap",
       "query_entities", "bridge", "backlink", "anchor_shared", "bm25_hop")  # fmt: skip
RERANK_FEATURES: tuple[str, ...] = (
    "score_gap",  # the no-vector order's score − its best
    "place",  # 0-based place in the no-vector order
    "cosine",  # the question's cosine with the passage
    "cosine_gap",  # cosine − the best cosine among the top
    "cosine_rank",  # −log(1 + rank of the cosine among the top), 0-based
    "hop_cosine",  # max over the first ANCHORS others of cos(passage, normalise(q + v_anchor))
    "hop_gain",  # hop_cosine − cosine
    *OWN,
)
_COL = [FEATURES.index(f) for f in OWN]


def rerank_features(
    scores: np.ndarray, V: np.ndarray, qvec: np.ndarray, own: np.ndarray
) -> np.ndarray:
    """The :data:`RERANK_FEATURES` of the top passages (in the no-vector order): their final
    ``scores``, unit vectors ``V``, the question's unit vector and their :data:`FEATURES` rows."""
    n = len(scores)
    V = np.asarray(V, np.float64)
    q = np.asarray(qvec, np.float64)
    cos = V @ q
    H = V[:ANCHORS] + q[None, :]
    H /= np.maximum(np.linalg.norm(H, axis=1, keepdims=True), 1e-9)
    hop = V @ H.T  # (n, min(ANCHORS, n)): no passage is its own anchor
    a = np.arange(min(ANCHORS, n))
    hop[a, a] = -1.0
    best = hop.max(axis=1) if n > 1 else np.zeros(n)
    rank = np.empty(n)
    rank[np.argsort(-cos, kind="stable")] = np.arange(n)
    return np.column_stack([
        scores - scores[0], np.arange(n, dtype=np.float64), cos, cos - cos.max(),
        -np.log1p(rank), best, best - cos, np.asarray(own, np.float64)[:, _COL],
    ])  # fmt: skip


def reranked(model: HopRanker, X: np.ndarray) -> np.ndarray:
    """The top's new order (positions in it): by the model's score, ties in the old order."""
    return np.lexsort((np.arange(len(X)), -model.score(X)))


@dataclass
class Encoders:
    """The question's and the passages' encoders of the dense part the index will have."""

    query: Any
    passages: Any

    @classmethod
    def of(cls, options: dict[str, Any] | None) -> Encoders:
        """From the pending dense part's options (a staged build records them), else the
        default dense options; passages in bf16 where the CPU has it, as a build does."""
        from hopgraph.config import make_options
        from hopgraph.index.dense_options import DenseOptions
        from hopgraph.models.embedder import cpu_has_bf16, load_embedder

        o = make_options(DenseOptions, options, what="part 'dense'")
        query = load_embedder(o.model, precision=o.precision, max_seq_length=o.max_seq_length,
                              backend=o.backend)  # fmt: skip
        use_bf16 = o.backend != "static" and cpu_has_bf16()
        return cls(query, o.embedder_for("torch-bf16") if use_bf16 else query)


def query_vector_model(path: str | None = None) -> HopRanker:
    """The reranker: the file at ``path``, or the one shipped with hopgraph."""
    from hopgraph.models.trees import TreeEnsemble

    where = path or f"bundled {BUNDLED}"
    try:
        if path is None:
            text = resources.files("hopgraph.models").joinpath(BUNDLED).read_text("utf-8")
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        data = json.loads(text)
        if data.get("kind") != KIND:
            raise ValueError(f"kind={data.get('kind')!r}, not {KIND}")
        model = TreeEnsemble(str(data["model"]))
        ranker = HopRanker(tuple(data["features"]), model, dict(data.get("meta") or {}))
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: not a query-vector reranker ({exc})") from None
    if tuple(ranker.features) != RERANK_FEATURES:
        raise ConfigError(f"{where}: its features are not this hopgraph's; retrain it "
                          "(benchmarks/no_vector_rerank.py --ship)")  # fmt: skip
    return ranker


def save_model(booster: Any, meta: dict[str, Any], path: str | Path) -> None:
    """Write a fitted reranker as :func:`query_vector_model` reads it (to a temporary file,
    then renamed into place)."""
    data = {"kind": KIND, "features": list(RERANK_FEATURES),
            "model": booster.model_to_string(), "meta": meta}  # fmt: skip
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    write_synced(tmp, json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


class QueryVectors:
    """The reranking step ``multihop`` runs on an index without passage vectors."""

    def __init__(self, index: Any, n: int, model: str = ""):
        self.index, self.n = index, n
        self.model = query_vector_model(model or None)
        pending = getattr(index, "pending", None) or {}
        self.encoders = Encoders.of((pending.get("options") or {}).get("dense"))

    def apply(
        self, query: str, rows: np.ndarray, scores: np.ndarray, feats: np.ndarray
    ) -> np.ndarray:
        """The new order of the top (positions among the first ``n`` of ``rows``, the final
        order), given their final ``scores`` and :data:`FEATURES` rows ``feats``."""
        n = min(self.n, len(rows))
        if n < 2:
            return np.arange(n)
        corpus = self.index.corpus
        texts = [corpus[int(r)].content for r in rows[:n]]
        V = self.encoders.passages.encode(texts, batch_size=ENCODE_BATCH)
        q = self.encoders.query.encode_query(query)
        return reranked(self.model, rerank_features(scores[:n], V, q, feats[:n]))
