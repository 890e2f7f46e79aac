"""The ``corpus_graph`` part: an undirected passage–passage graph for graph search (FastInsight,
GAR), from edges given with the data or derived without an LLM.

Edge sources, each a switch (the graph is their union, symmetric and unweighted):

* ``links``: the ``links`` part, i.e. links given with the data (``metadata["links"]``:
  hyperlinks, citations, foreign keys) and mentions of another passage's title;
* ``knn``: each passage's ``knn`` most similar passages by the ``dense`` embeddings (cosine);
* ``shared_entities``: passages naming the same entity (``entities`` part), for entities named
  by at most ``entity_max_df`` passages (a common entity would join everything to everything);
* ``edges_file``: a file of edges, one ``ID<TAB>ID`` pair a line (or JSON lines
  ``{"source": ID, "target": ID}``); unknown ids are counted and skipped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from hopgraph.config import option
from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError, CorpusError
from hopgraph.graph.paths import degree
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart


@dataclass(frozen=True)
class CorpusGraphOptions:
    links: bool = option(True, "edges of the links part (data links, title mentions)")
    knn: int = option(5, "edges to each passage's k nearest neighbours by embedding (0: none)")
    shared_entities: bool = option(False, "edges between passages naming a rare shared entity")
    entity_max_df: int = option(10, "shared_entities: only entities named by <= this many")
    edges_file: str = option("", "a file of edges given with the data (ID<TAB>ID per line)")

    def validate(self) -> None:
        if self.knn < 0 or self.entity_max_df < 2:
            raise ConfigError("knn must be >= 0 and entity_max_df >= 2")
        if not (self.links or self.knn or self.shared_entities or self.edges_file):
            raise ConfigError("the corpus graph needs at least one edge source")
        if self.edges_file and not Path(self.edges_file).expanduser().is_file():
            raise ConfigError(f"edges_file {self.edges_file!r} is not a file")


class CorpusGraphPart(IndexPart):
    name = "corpus_graph"
    Options = CorpusGraphOptions

    def __init__(self, options: CorpusGraphOptions, adjacency: sp.csr_matrix, info: dict[str, int]):
        super().__init__(options)
        self.adjacency = adjacency  # symmetric 0/1 CSR, no self-loops
        self.degree = degree(adjacency)
        self.info = info
        self._costs: sp.csr_matrix | None = None

    @classmethod
    def requires_for(cls, options: CorpusGraphOptions) -> tuple[str, ...]:
        need = []
        if options.links:
            need.append("links")
        if options.knn:
            need.append("dense")
        if options.shared_entities:
            need.append("entities")
        return tuple(need)

    @classmethod
    def build(cls, corpus: Corpus, options: Any, *, progress: bool = True) -> CorpusGraphPart:
        if cls.requires_for(options):
            raise ConfigError(
                f"the corpus graph is built from the {list(cls.requires_for(options))} parts: "
                "build it through Index.build / add_parts"
            )
        return cls.build_from(corpus, options, {}, progress=progress)

    @classmethod
    def build_from(
        cls,
        corpus: Corpus,
        options: CorpusGraphOptions,
        parts: dict[str, IndexPart],
        *,
        progress: bool = True,
    ) -> CorpusGraphPart:
        n = len(corpus)
        pieces: list[sp.csr_matrix] = []
        info: dict[str, int] = {}
        if options.links:
            links = parts["links"].links  # type: ignore[attr-defined]
            pieces.append(sp.csr_matrix(links))
            info["link_edges"] = int(links.nnz)
        if options.knn:
            g = knn_graph(parts["dense"].embeddings, options.knn, progress)  # type: ignore
            pieces.append(g)
            info["knn_edges"] = int(g.nnz)
        if options.shared_entities:
            mentions = parts["entities"].mentions  # type: ignore[attr-defined]
            g = shared_entity_graph(mentions, options.entity_max_df)
            pieces.append(g)
            info["entity_edges"] = int(g.nnz) // 2
        if options.edges_file:
            g, unknown = read_edges(Path(options.edges_file).expanduser(), corpus)
            pieces.append(g)
            info["file_edges"], info["file_unknown_ids"] = int(g.nnz), unknown
        return cls(options, symmetric_union(pieces, n), info)

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> CorpusGraphPart:
        """Recomputed from the updated parts it is built from (no model runs: links, vectors
        and mentions are already updated); the kNN edges are an exact blockwise search."""
        return type(self).build_from(change.new, self.options, parts, progress=progress)

    def save(self, folder: Path) -> None:
        save_array(folder / "indptr.npy", self.adjacency.indptr)
        save_array(folder / "indices.npy", self.adjacency.indices)
        (folder / "info.json").write_text(json.dumps(self.info))

    @classmethod
    def load(
        cls, folder: Path, options: CorpusGraphOptions, *, mmap: bool = True
    ) -> CorpusGraphPart:
        indptr = np.load(folder / "indptr.npy")
        indices = np.load(folder / "indices.npy")
        n = len(indptr) - 1
        adj = sp.csr_matrix((np.ones(len(indices), np.float32), indices, indptr), shape=(n, n))
        return cls(options, adj, json.loads((folder / "info.json").read_text()))

    def stats(self) -> dict[str, Any]:
        return {
            "edges": int(self.adjacency.nnz) // 2,
            "isolated": int(np.count_nonzero(self.degree == 0)),
            "mean_degree": round(float(self.degree.mean()), 2) if len(self.degree) else 0.0,
            **self.info,
        }

    def neighbours(self, row: int) -> np.ndarray:
        """The rows adjacent to ``row``."""
        return self.adjacency.indices[self.adjacency.indptr[row] : self.adjacency.indptr[row + 1]]

    def subgraph(self, rows: np.ndarray) -> np.ndarray:
        """Dense 0/1 adjacency among ``rows`` (in that order)."""
        return self.adjacency[rows][:, rows].toarray()

    @property
    def costs(self) -> sp.csr_matrix:
        """Log-degree path costs for Topological Recall (computed once)."""
        if self._costs is None:
            from hopgraph.graph.paths import log_degree_costs

            self._costs = log_degree_costs(self.adjacency)
        return self._costs


def knn_graph(vectors: np.ndarray, k: int, progress: bool = False) -> sp.csr_matrix:
    """Directed k-nearest-neighbour edges by inner product of unit vectors (exact, in blocks)."""
    v = np.asarray(vectors, dtype=np.float32)
    n = len(v)
    k = min(k, n - 1)
    if k <= 0:
        return sp.csr_matrix((n, n), dtype=np.float32)
    cols = np.empty((n, k), np.int64)
    block = 1024
    for lo in tqdm(range(0, n, block), desc="knn graph", disable=not progress or n <= block):
        sims = v[lo : lo + block] @ v.T
        sims[np.arange(len(sims)), np.arange(lo, lo + len(sims))] = -np.inf
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        # ties broken by row number, so the graph does not depend on argpartition's order
        part = np.take_along_axis(sims, top, axis=1)
        order = np.lexsort((top, -part), axis=1)
        cols[lo : lo + len(sims)] = np.take_along_axis(top, order, axis=1)
    rows = np.repeat(np.arange(n), k)
    return sp.csr_matrix((np.ones(n * k, np.float32), (rows, cols.ravel())), shape=(n, n))


def shared_entity_graph(mentions: sp.csr_matrix, max_df: int) -> sp.csr_matrix:
    """Passages joined when they name a common entity named by 2..max_df passages."""
    # a copy: with float32 mentions the conversion shares the entities part's count array,
    # and setting it to 1 turned every stored mention count into 1 (SPRIG's TF-IDF edge
    # weights then differed from a fresh build's: issue 19's "graph top-10 after updates")
    m = sp.csr_matrix(mentions, dtype=np.float32, copy=True)
    m.data[:] = 1.0
    df = np.asarray(m.sum(axis=0)).ravel()
    keep = sp.diags(((df >= 2) & (df <= max_df)).astype(np.float32))
    g = sp.csr_matrix(m @ keep @ m.T)
    g.setdiag(0)
    g.eliminate_zeros()
    g.data[:] = 1.0
    return g


def read_edges(path: Path, corpus: Corpus) -> tuple[sp.csr_matrix, int]:
    """Edges of an edges file (see the module docstring) and the number of unknown ids."""
    src: list[int] = []
    dst: list[int] = []
    unknown = 0
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("{"):
                try:
                    rec = json.loads(line)
                    a, b = str(rec["source"]), str(rec["target"])
                except (ValueError, KeyError, TypeError):
                    raise CorpusError(
                        f"{path}:{line_no}: expected {{'source', 'target'}}"
                    ) from None
            else:
                fields = line.split("\t")
                if len(fields) < 2:
                    raise CorpusError(f"{path}:{line_no}: expected two tab-separated ids")
                a, b = fields[0], fields[1]
            if a not in corpus._pos or b not in corpus._pos:
                unknown += 1
                continue
            src.append(corpus._pos[a])
            dst.append(corpus._pos[b])
    n = len(corpus)
    g = sp.csr_matrix((np.ones(len(src), np.float32), (src, dst)), shape=(n, n))
    return g, unknown


def symmetric_union(pieces: list[sp.csr_matrix], n: int) -> sp.csr_matrix:
    """The 0/1 undirected union of directed edge sets, without self-loops."""
    g = sp.csr_matrix((n, n), dtype=np.float32)
    for p in pieces:
        g = g + p + p.T
    g = sp.csr_matrix(g)
    g.setdiag(0)
    g.eliminate_zeros()
    g.data[:] = 1.0
    g.sort_indices()
    return g
