"""Give an index without a dense part (e.g. the 1M scale index of `sparse,entities`) a dense
part whose vectors are stand-ins, to time updates at a size this machine cannot encode.
No table of its own: it makes the 1M index that "Documents, filters, updates, serving" (live
updates) times. Run time on the 2-core machine: about 10 min at 1M (estimated: the HNSW graph,
about 20 s at 100k beside 484 s of encoding in first_search.json, grown to a million rows, and the
part's save).

    python benchmarks/standin_dense.py SRC_INDEX REAL_VECTORS.npy OUT_INDEX

Encoding a million passages with MiniLM takes 4-5.5 h on 2 cores (docs/benchmarks.md, issue 18),
so the rows are real MiniLM vectors (REAL_VECTORS, e.g. the 100k scale index's
`parts/dense/embeddings.npy`) repeated to the index's length with Gaussian noise (sigma 0.02,
seed 0) and renormalised. The part is made by the product's own `DensePart.from_vectors` with
the default options (the usearch HNSW graph a build of that size makes) and records
`torch-bf16` as its passage encoder, as a default build of 20k passages or more on a CPU with
bf16 does; an update then loads that encoder and encodes the added passages for real. The cost
of an update does not depend on the old rows' values; search quality over this index means
nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from hopgraph.index.dense import DenseOptions, DensePart
from hopgraph.index.store import Index


def standin_vectors(real: np.ndarray, n: int, *, seed: int = 0) -> np.ndarray:
    """``n`` unit rows: ``real`` repeated, each copy with its own noise."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, real.shape[1]), np.float32)
    for lo in range(0, n, len(real)):
        hi = min(n, lo + len(real))
        block = np.asarray(real[: hi - lo], np.float32)
        block = block + rng.normal(0, 0.02, block.shape).astype(np.float32)
        out[lo:hi] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("real_vectors")
    ap.add_argument("out")
    args = ap.parse_args()
    t0 = time.perf_counter()
    index = Index.load(args.src, verify=False)
    if index.has("dense"):
        raise SystemExit(f"{args.src} has a dense part already")
    vectors = standin_vectors(np.load(args.real_vectors, mmap_mode="r"), len(index.corpus))
    part = DensePart.from_vectors(DenseOptions(), vectors, progress=True)
    part.passage_encoder = "torch-bf16"
    index.parts = {"dense": part, **index.parts}
    index.deltas = None  # a new part: the index is written whole
    index.save(args.out)
    print(f"{args.out}: {len(index.corpus)} passages, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
