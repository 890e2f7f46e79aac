"""The ``dense`` part: one unit-length embedding per passage, exact and approximate search.

Embeddings are a plain ``embeddings.npy`` (memory-mapped on load); exact search is a
matrix–vector product, fast enough up to ~10^5 passages. From ``ann_min_passages`` passages on
(``ann=auto``) the part also builds an HNSW graph with usearch (int8 copy of the vectors, mmapped:
see :mod:`hopgraph.index.ann`), which the dense, fusion and default methods then search instead of
scanning every vector. ``vectors=float16`` halves the vectors' disk and page-cache cost, but a
full scan over float16 rows is ~10x slower in numpy (the widening dominates), so the default keeps
float32; cosines are always computed in float32. ``hnsw=true`` builds the older hnswlib graph
(kept for indexes that have one).

The encoder is chosen by ``model``, ``backend`` and ``precision`` (default: the bundled MiniLM,
ONNX Runtime, fp32); faster approximate encoders are ``precision=int8`` (onnx) and
``backend=static`` (model2vec). These options are saved in the manifest, so queries are encoded
by the same encoder as the passages. From ``fast_encode_min_passages`` passages on, the passages
themselves are encoded by the passage student of the query encoder (``passage_encoder=student``,
:mod:`hopgraph.models.student`: 3 of MiniLM's 6 layers trained to give its passage vectors, ~1.9x
PyTorch bf16), or where there is no student for the query encoder and the CPU has bf16, by
PyTorch with bf16 weights (``torch-bf16``: ~1.7x the ONNX fp32 rate, cosine ~0.9999 to it).
``device=cuda`` (or ``auto`` where torch sees a CUDA device) encodes the passages instead by
PyTorch in fp32 on the GPU (``torch-cuda``: the CPU's fp32 vectors up to float rounding); queries
stay on the CPU encoder.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError
from hopgraph.index.ann import FILE as ANN_FILE
from hopgraph.index.ann import AnnIndex
from hopgraph.index.dense_options import (  # noqa: F401 - the part's options, re-exported
    CUDA_BATCH_SIZE,
    ENCODER_FILE,
    ENCODERS,
    DenseOptions,
    passage_encoder_note,
)
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart, ReplayStep
from hopgraph.index.stacked_rows import StackedRows
from hopgraph.models.embedder import Embedder, cpu_has_bf16, cuda_available, load_embedder


def _segment_encoder(folder: Path) -> str:
    """What encoded the passages of a segment or part folder (older folders: the query encoder)."""
    path = folder / ENCODER_FILE
    return path.read_text().strip() if path.exists() else "same"


class DensePart(IndexPart):
    name = "dense"
    Options = DenseOptions

    def __init__(
        self,
        options: DenseOptions,
        embeddings: np.ndarray | StackedRows,
        hnsw: Any | None = None,
        ann: AnnIndex | None = None,
    ):
        super().__init__(options)
        # the vectors, row i for passage i: after live updates, the stored matrix's kept rows
        # plus the rows added since (not copied into one array: see stacked_rows)
        rows = embeddings if isinstance(embeddings, StackedRows) else StackedRows.of(embeddings)
        self.rows = rows
        self._embeddings: np.ndarray | None = None
        # what encoded the passages (a key of ENCODERS), when this process built them
        self.passage_encoder: str | None = None
        self.hnsw = hnsw
        self.ann = ann
        # Live updates keep the graph (rebuilding it costs ~30 s at 100k passages): its key j
        # is row ann_rows[j] now (-1: deleted), and the rows added since it was built (a tail
        # from row ann_live on) are scanned exactly. None: key j is row j, no tail.
        self.ann_rows: np.ndarray | None = None
        self._embedder: Embedder | None = None

    @functools.cached_property
    def ann_live(self) -> int:
        """The rows the graph covers: rows 0 .. ann_live-1 (later rows arrived after it);
        counted once (``ann_rows`` is fixed when the part is made), not on every search."""
        if self.ann_rows is None:
            return self.rows.shape[0]
        return int(np.count_nonzero(self.ann_rows >= 0))

    @property
    def embeddings(self) -> np.ndarray:
        """All vectors as one array: the stored matrix itself, or, after live updates, a copy
        made on first use (search and the default method read rows through :meth:`vectors`
        and :meth:`scores` without it)."""
        if self._embeddings is None:
            self._embeddings = self.rows.materialized()
        return self._embeddings

    def vectors(self, rows: np.ndarray | int) -> np.ndarray:
        """The float32 vectors of ``rows`` (an int: one vector)."""
        return self.rows.take(rows)

    @property
    def embedder(self) -> Embedder:
        """The query encoder (loaded on first use, shared across the process)."""
        if self._embedder is None:
            o = self.options
            self._embedder = o.query_embedder()
            if self._embedder.dim != self.rows.shape[1]:
                raise ConfigError(
                    f"model {o.model!r} gives {self._embedder.dim}-d vectors but the index holds "
                    f"{self.rows.shape[1]}-d ones"
                )
        return self._embedder

    @classmethod
    def build(cls, corpus: Corpus, options: DenseOptions, *, progress: bool = True) -> DensePart:
        encoder = options.passage_encoder_for(len(corpus), corpus)
        emb = options.embedder_for(encoder)
        texts = [p.content for p in corpus]
        vectors = emb.encode(texts, batch_size=options.batch_size_for(encoder), progress=progress)
        part = cls.from_vectors(options, vectors, progress=progress)
        part.passage_encoder = encoder
        if encoder == "same":
            part._embedder = emb
        return part

    @classmethod
    def from_vectors(
        cls, options: DenseOptions, vectors: np.ndarray, *, progress: bool = False
    ) -> DensePart:
        """The part over ``vectors`` (float32 unit rows): stored in the dtype the options give,
        with the graphs they ask for (built from the stored vectors, as a reload sees them)."""
        n = vectors.shape[0]
        stored = np.ascontiguousarray(vectors, dtype=options.stored_dtype(n))
        hnsw = _build_hnsw(stored, options) if options.hnsw else None
        ann = None
        if options.uses_ann(n):
            ann = AnnIndex.build(
                stored,
                dtype=options.ann_dtype,
                connectivity=options.ann_connectivity,
                expansion_add=options.ann_expansion_add,
                progress=progress,
            )
        return cls(options, stored, hnsw, ann)

    segmentable = True

    @classmethod
    def segment_context(cls, corpus: Corpus, options: DenseOptions) -> str:
        """The passage encoder, chosen once for the whole corpus (its size, and whether the
        passage student agrees with the query encoder on it)."""
        return options.passage_encoder_for(len(corpus), corpus)

    @classmethod
    def write_segment(
        cls,
        passages: Corpus,
        options: DenseOptions,
        folder: Path,
        context: Any = None,
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        """The unit vectors of ``passages`` (the encoder is the per-passage work), and which
        encoder made them; ``on_progress`` hears of every encoder batch."""
        encoder = context or "same"
        emb = options.embedder_for(encoder)
        vectors = emb.encode(
            [p.content for p in passages],
            batch_size=options.batch_size_for(encoder),
            on_batch=on_progress,
        )
        save_array(folder / "embeddings.npy", np.asarray(vectors, dtype=np.float32))
        (folder / ENCODER_FILE).write_text(encoder)

    @classmethod
    def from_segments(
        cls,
        corpus: Corpus,
        options: DenseOptions,
        folders: list[Path],
        parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> DensePart:
        """The segments' vectors in order (copied into one array), and the HNSW graph if asked."""
        encoders = {_segment_encoder(f) for f in folders}
        if len(encoders) > 1:
            named = ", ".join(f"{e} ({ENCODERS.get(e, e)})" for e in sorted(encoders))
            if "torch-cuda" in encoders:
                here = "with a CUDA GPU" if cuda_available() else "where torch sees no CUDA device"
                raise ConfigError(
                    f"the dense segments were encoded by different passage encoders ({named}): "
                    f"part of this build ran on a CUDA GPU and part on the CPU, i.e. it was "
                    f"resumed on a machine {here} (dense.device=auto takes the GPU only where "
                    "torch sees one); resume it on the machine it started on, or build again "
                    "with dense.device=cpu"
                )
            raise ConfigError(
                f"the dense segments were encoded by different passage encoders "
                f"({named}), e.g. a build resumed on another machine; "
                "set dense.passage_encoder explicitly and build again"
            )
        files = [f / "embeddings.npy" for f in folders]
        shapes = [np.load(f, mmap_mode="r").shape for f in files]
        n = sum(s[0] for s in shapes)
        vectors = np.empty((n, shapes[0][1]), options.stored_dtype(n))
        row = 0
        for f in files:  # each segment's map is closed once copied: at 1M the float32
            b = np.load(f, mmap_mode="r")  # segments are 1.5 GB of pages the graph would
            vectors[row : row + len(b)] = b  # keep resident beside it otherwise
            row += len(b)
            del b
        part = cls.from_vectors(options, vectors, progress=progress)
        part.passage_encoder = encoders.pop()
        return part

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> DensePart:
        """Only the added passages are encoded; kept rows are read where they are stored (see
        :class:`StackedRows`), and a part with a graph keeps it (see ``ann_rows``)."""
        new = self.encode_passages([p.content for p in change.added_passages], progress=progress)
        part = self._with_vectors(change, new)
        part.payload = {"vectors": part_vectors(new)}
        return part

    replayable = True

    def replay(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        payload: dict[str, Any],
    ) -> DensePart:
        """The update with the added passages' vectors from ``payload`` (not encoded again)."""
        part = self._with_vectors(change, np.asarray(payload["vectors"], np.float32))
        part.payload = payload
        return part

    @classmethod
    def combined_payload(cls, steps: Sequence[ReplayStep], n_base_kept: int) -> dict[str, Any]:
        """The vectors of the added passages still there after the last step, in order."""
        blocks = [
            np.asarray(st.payload["vectors"], np.float32)[st.added_survivors()] for st in steps
        ]
        return {"vectors": part_vectors(np.concatenate(blocks))}

    def _with_vectors(self, change: Change, new: np.ndarray) -> DensePart:
        o, n = self.options, len(change.new)
        if self.ann is not None:  # the graph is kept: see ann_rows
            part = self.with_rows(change, new)
        elif o.hnsw or o.uses_ann(n) or o.stored_dtype(n) != self.rows.dtype:
            # an hnswlib graph, or grown past ann_min_passages: built as a fresh build would
            kept = self.rows.take(change.keep)
            part = type(self).from_vectors(o, np.concatenate([kept, new]))
        else:  # no vector copied: the kept rows are read from the stored matrix
            part = type(self)(o, self.rows.updated(change.keep, new))
        part._embedder = self._embedder
        part.passage_encoder = self.passage_encoder
        return part

    def with_rows(self, change: Change, new: np.ndarray) -> DensePart:
        """The kept rows and ``new`` vectors under this part's HNSW graph (not rebuilt)."""
        assert self.ann is not None
        vectors = self.rows.updated(change.keep, new)
        keys = np.arange(self.rows.shape[0]) if self.ann_rows is None else self.ann_rows
        to_new = change.old_to_new()
        rows = np.where(keys >= 0, to_new[np.maximum(keys, 0)], -1)
        part = type(self)(self.options, vectors, None, self.ann)
        part.ann_rows = rows
        return part

    def compacted(self) -> DensePart:
        """This part with its vectors as one array and a graph built for them (no deleted
        keys, no exact tail)."""
        if self.ann_rows is None and self.rows.plain:
            return self
        vectors = np.asarray(self.embeddings, np.float32)
        if self.ann is None and not self.options.hnsw:  # no graph to build
            part = type(self)(self.options, np.ascontiguousarray(vectors, self.rows.dtype))
        else:
            part = type(self).from_vectors(self.options, vectors)
        part._embedder = self._embedder
        part.passage_encoder = self.passage_encoder
        return part

    def save(self, folder: Path) -> None:
        if not self.rows.plain:  # an index is saved whole only compacted
            raise ValueError("save the compacted() part: its rows are not one array yet")
        save_array(folder / "embeddings.npy", self.embeddings)
        if self.hnsw is not None:
            self.hnsw.save_index(str(folder / "hnsw.bin"))
        if self.ann is not None:
            if self.ann_rows is not None:  # an index is saved whole only compacted
                raise ValueError("save the compacted() part: this one has rows outside its graph")
            self.ann.save(folder)
        if self.passage_encoder is not None:
            (folder / ENCODER_FILE).write_text(self.passage_encoder)

    @classmethod
    def load(cls, folder: Path, options: DenseOptions, *, mmap: bool = True) -> DensePart:
        vectors = np.load(folder / "embeddings.npy", mmap_mode="r" if mmap else None)
        hnsw = None
        if options.hnsw:
            import hnswlib

            hnsw = hnswlib.Index(space="ip", dim=vectors.shape[1])
            hnsw.load_index(str(folder / "hnsw.bin"), max_elements=vectors.shape[0])
        ann = AnnIndex.load(folder, mmap=mmap) if (folder / ANN_FILE).exists() else None
        part = cls(options, vectors, hnsw, ann)
        part.passage_encoder = _segment_encoder(folder)
        return part

    def stats(self) -> dict[str, Any]:
        n, d = self.rows.shape
        return {
            "passages": int(n),
            "dim": int(d),
            "vectors": str(self.rows.dtype),
            "ann": self.ann is not None,
            "hnsw": self.hnsw is not None,
            **({"passage_encoder": self.passage_encoder} if self.passage_encoder else {}),
        }

    def encode_passages(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """Vectors of passage texts not in the index, by the encoder that made the stored rows
        (not the query encoder as well, where a faster one encoded the build)."""
        if not texts:
            return np.zeros((0, self.rows.shape[1]), np.float32)
        o = self.options
        encoder = self.passage_encoder or "same"
        if encoder == "torch-bf16" and not cpu_has_bf16():  # the nearest: the query encoder's
            encoder = "same"
        elif encoder == "torch-cuda" and not cuda_available():
            # built on a GPU, updated where there is none: the same fp32 vectors on the CPU
            encoder = (
                "same"
                if o.precision == "fp32" or (o.backend == "onnx" and o.precision == "auto")
                else "torch-fp32"
            )
        if encoder == "torch-fp32":
            emb = load_embedder(
                o.model, precision="fp32", max_seq_length=o.max_seq_length, backend="torch"
            )
        elif encoder == "same":
            emb = self.embedder
        else:
            emb = o.embedder_for(encoder)
        batch = o.batch_size_for(encoder)
        return np.asarray(emb.encode(texts, batch_size=batch, progress=progress), np.float32)

    # -- querying -------------------------------------------------------------------------
    def encode_queries(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:
            return self.embedder.encode_query(texts[0])[None, :]
        return self.embedder.encode(texts, batch_size=64)

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``qvec`` (or a (q, dim) block) with every passage (float32;
        float16 vectors are widened a block of rows at a time, never all at once)."""
        single_threaded_blas()
        return self.rows.dot(qvec.T if qvec.ndim == 2 else qvec)

    def scores_for(self, qvec: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Cosine similarity with the passages at ``rows`` only."""
        single_threaded_blas()
        return self.rows.take(rows) @ qvec

    def search_ann(self, qvec: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-``k`` rows by cosine and their (exact) cosines, best first: the
        HNSW graph's ``max(k, ef)`` candidates re-scored with the stored vectors."""
        if self.ann is None:
            raise ConfigError(
                "this index has no HNSW graph: rebuild the dense part with ann=hnsw "
                "(hopgraph index ... --set dense.ann=hnsw)"
            )
        if self.ann_rows is None:
            rows = self.ann.search(qvec, max(k, ef), ef)[0]
        else:  # keys of deleted rows are skipped (asked for as many more), the tail scanned
            live = self.ann_live
            gone = len(self.ann_rows) - live
            keys = self.ann.search(qvec, max(k, ef) + gone, ef + gone)[0]
            rows = self.ann_rows[keys]
            rows = np.concatenate([rows[rows >= 0], np.arange(live, self.rows.shape[0])])
        sims = self.scores_for(qvec, rows)
        order = np.lexsort((rows, -sims))[:k]  # the tie order of exact search
        return rows[order], sims[order]

    def search_hnsw(self, qvecs: np.ndarray, k: int, ef: int) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k rows and cosines for each query row of ``qvecs``."""
        if self.hnsw is None:
            raise ConfigError(
                "this index has no HNSW graph: rebuild the dense part with hnsw=true "
                "(hopgraph index ... --set dense.hnsw=true)"
            )
        k = min(k, self.rows.shape[0])
        self.hnsw.set_ef(max(ef, k))
        labels, dist = self.hnsw.knn_query(np.atleast_2d(qvecs), k=k, num_threads=1)
        return labels.astype(np.int64), (1.0 - dist).astype(np.float32)


def part_vectors(vectors: np.ndarray) -> np.ndarray:
    """Encoder output as kept in a replay payload: float32 rows (2-d even when empty)."""
    return np.ascontiguousarray(np.atleast_2d(np.asarray(vectors, np.float32)))


_BLAS_LIMITED = False


def single_threaded_blas() -> None:
    """Run numpy's BLAS (OpenBLAS) on one thread from now on, once per process.

    A matrix–vector product gains nothing from threads at these sizes, but OpenBLAS's worker
    threads keep spinning after it returns and fight the query encoder's (torch) threads for
    the cores: on 2 cores that tripled dense query latency (48 → 17 ms p50 on 2WikiMultiHopQA).
    Limiting only around each product was not enough (23 ms): restoring the threads restarts
    the spinning. Torch's own intra-op threads are not affected. Set HOPGRAPH_KEEP_BLAS_THREADS=1
    to opt out.
    """
    global _BLAS_LIMITED
    if _BLAS_LIMITED:
        return
    _BLAS_LIMITED = True
    if os.environ.get("HOPGRAPH_KEEP_BLAS_THREADS") == "1":
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _build_hnsw(vectors: np.ndarray, options: DenseOptions) -> Any:
    import hnswlib

    index = hnswlib.Index(space="ip", dim=vectors.shape[1])
    index.init_index(
        max_elements=max(1, vectors.shape[0]),
        M=options.hnsw_m,
        ef_construction=options.hnsw_ef_construction,
        random_seed=100,
    )
    # One thread: insertion order then fixes the graph, so rebuilding gives the same index.
    index.add_items(vectors, np.arange(vectors.shape[0]), num_threads=1)
    return index
