"""hopgraph as a PyTerrier transformer (``pip install 'hopgraph[pyterrier]'``).

A retriever for PyTerrier pipelines and experiments::

    import pyterrier as pt
    from hopgraph.integrations.pyterrier import HopgraphRetriever

    default = HopgraphRetriever("ix/", k=10)
    bm25 = HopgraphRetriever(default.index, method="bm25")
    pt.Experiment([default, bm25], topics, qrels, eval_metrics=["recall_5", "ndcg_cut_10"])

Nothing here starts Java or needs Terrier's jars: the transformer is pure Python, and
``pt.Experiment`` evaluates with ir_measures (no ``pt.init()`` / ``pt.java.init()``).
"""

from __future__ import annotations

from typing import Any

from hopgraph.integrations._common import IndexLike, Searcher, missing_extra

try:
    import pandas as pd
    import pyterrier as pt
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("pyterrier", "pyterrier", "python-terrier") from exc

_RESULT_COLUMNS = ["docno", "score", "rank"]
_TEXT_COLUMNS = ["title", "text"]


class HopgraphRetriever(pt.Transformer):
    """A PyTerrier retriever over ``hopgraph.get_retriever(index, method, **params)``.

    ``index`` is a :class:`hopgraph.Index` or the folder of a saved one (loaded once);
    ``method`` None is the default method; ``k`` and ``filter`` (hopgraph's metadata filter,
    e.g. ``{"year": {"$gte": 2020}}``) apply to every query and, being attributes, may be set
    by ``pt.GridSearch``; ``max_per_doc`` caps the hits of one document (None: hopgraph's
    default, 0: no limit); ``text=False`` leaves out the ``title`` and ``text`` columns; every
    other keyword is a parameter of the method.

    Input: a query frame (``qid``, ``query``, any other query columns). Output: per query row,
    its columns and ``docno`` (the passage id), ``score`` and ``rank`` (0-based, PyTerrier's
    convention), ``title`` and ``text`` (title and text as one string, what hopgraph indexes:
    what a PyTerrier re-ranker such as monoT5 reads), best first; the queries are searched as
    one batch.
    """

    def __init__(
        self,
        index: IndexLike,
        method: str | None = None,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
        text: bool = True,
        **params: Any,
    ) -> None:
        self._searcher = Searcher(index, method, k, filter, params, max_per_doc)
        self.text = bool(text)
        self.index = self._searcher.index
        self.method = self._searcher.method
        self.k = self._searcher.k
        self.filter = self._searcher.filter

    @property
    def retriever(self) -> Any:
        """The hopgraph retriever this wraps."""
        return self._searcher.retriever

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """The ``k`` best passages for every query of ``inp``."""
        pt.validate.query_frame(inp, extra_columns=["query"], context=self)
        columns = list(inp.columns)
        queries = [str(q) for q in inp["query"]]
        rankings = self._searcher.rankings(queries, k=self.k, filter=self.filter)
        rows: list[dict[str, Any]] = []
        corpus = self.index.corpus
        for record, ranking in zip(inp.to_dict(orient="records"), rankings, strict=True):
            for rank, (pid, score) in enumerate(zip(ranking.ids, ranking.scores, strict=True)):
                row = {**record, "docno": pid, "score": score, "rank": rank}
                if self.text:
                    p = corpus.get(pid)
                    row.update(title=p.title, text=p.content)
                rows.append(row)
        result = [*_RESULT_COLUMNS, *(_TEXT_COLUMNS if self.text else [])]
        out = pd.DataFrame(rows, columns=[*columns, *result])
        return out.astype({"docno": str, "score": "float64", "rank": "int64"})

    def __repr__(self) -> str:
        return f"HopgraphRetriever({self._searcher.describe()})"
