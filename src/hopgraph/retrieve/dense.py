"""Vector search: the ``dense`` method (exact or HNSW)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hopgraph.config import POSITIVE, option
from hopgraph.retrieve.base import Retriever, allowed_rows
from hopgraph.retrieve.operators import vector_search
from hopgraph.retrieve.ranking import Ranking


@dataclass(frozen=True)
class DenseParams:
    mode: str = option(
        "auto",
        "exact search, HNSW (the index's graph: built by default from dense.ann_min_passages "
        "passages), or auto = HNSW when the index has the graph",
        ("auto", "exact", "hnsw"),
    )
    ef_search: int = option(
        256, "HNSW candidates per query (efSearch), re-scored exactly", bounds=POSITIVE
    )


class DenseRetriever(Retriever):
    name = "dense"
    Params = DenseParams
    requires = ("dense",)
    uses_dense = True
    summary = "cosine similarity of sentence embeddings (exact or HNSW)"
    filters_natively = True

    def _search(self, query: str, k: int, qvec: np.ndarray | None) -> Ranking:
        p: DenseParams = self.params
        rows, sims = vector_search(
            self.index.part("dense"),
            qvec,
            k,
            mode=p.mode,
            ef_search=p.ef_search,
            allowed=allowed_rows(),
        )
        return self._ranking(
            query,
            rows,
            sims,
            lambda: [{"cosine": float(s), "dense_rank": i} for i, s in enumerate(sims.tolist(), 1)],
        )
