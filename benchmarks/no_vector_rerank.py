"""The default without passage vectors, its top reranked with vectors encoded at query time
(issue 38): does a few passages' cosine close the gap to the full default?
Table: docs/results.md, "Latency and memory per method and switch" (without passage vectors, its
top encoded at query time). Run time on the 2-core machine: about 15 min for the three held-out
sets (estimated against a run of experiments/decompose.py, which takes the features once and refits
a ranker for each of five held-out sets, recorded at 2–4 min: nested refits, a ranker per other set
within each held-out set, and the reranker's).

    PYTHONPATH=src .venv/bin/python benchmarks/no_vector_rerank.py --data-dir ../shared/data \
        [--held-out musique,hotpotqa,2wikimultihopqa] [--top 10,20] [--out FILE.json]

An index still encoding its passage vectors is searched without any dense signal, and loses
4.3 points of R@5 on MuSiQue (docs/benchmarks.md). Here the no-vector default's final top
``--top`` passages are reranked by a LambdaRank model that adds what their vectors say: the
question's cosine with each (and its gap to the best, and its rank among them) and the hop
cosine through the best-ranked others (``normalise(q + v_anchor)``), beside the no-vector
score, rank and a few own features. At query time those vectors would be encoded on the fly
(the question and ``--top`` passages); here they are read from the full index, which holds the
same vectors.

Set held out, nested as ``experiments/pair_top.py``: the no-vector ranker for the held-out set
is fitted on the other sets' first rounds; the reranker on the other sets' tops, each set's top
ranked by a no-vector ranker fitted without that set and the held-out one. The full default's
rows (its ranker fitted on the same sets with vectors) stand beside them.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import chain_protocol as protocol  # noqa: E402
from hop_encoder import summary  # noqa: E402

from hopgraph.eval.metrics import compute_all  # noqa: E402
from hopgraph.models.ranker import HopRanker  # noqa: E402
from hopgraph.retrieve.final_fusion import corpus_weights, final_order
from hopgraph.retrieve.multihop import (
    # noqa: E402
    MultihopParams,
    score_candidates,
)
from hopgraph.retrieve.query_vectors import (  # noqa: E402
    BUNDLED,
    RERANK_FEATURES,
    TOP,
    rerank_features,
    reranked,
    save_model,
)
from hopgraph.training.ranker import LGB_PARAMS, Candidates, fit  # noqa: E402

SHIPPED = Path(__file__).resolve().parents[1] / "src/hopgraph/models" / BUNDLED


def settings(vectors: bool) -> Any:
    return replace(MultihopParams().settings(), vectors=vectors)


def first_rounds(C: dict, vectors: bool) -> dict:
    """Every question of the sets ``C``: its first round, by (set, question number)."""
    return {(n, qi): r for n, c in C.items() for qi, r in enumerate(rounds_of(c, vectors))}


def final(pool: Any, first: Any, booster: Any, vectors: bool) -> tuple[np.ndarray, Any, Any]:
    """The default's two rounds under ``booster``: its final order, scores by position, and
    the last round."""
    s = settings(vectors)

    def score(found: Any) -> np.ndarray:
        return booster.predict(found.feats.X, num_threads=1)

    last = protocol.two_rounds(pool, first, score, s=s)
    pos, fused = final_order(last, corpus_weights(pool.index, vectors), s.k_rrf)
    return pos, fused, last


def rerank_table(pool: Any, qvec: np.ndarray, pos: np.ndarray, fused: np.ndarray, last: Any,
                 n: int) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The top ``n`` rows of the no-vector order and their rerank features (the vectors read
    from the full index: what the search encodes)."""
    top = pos[:n]
    rows = last.rows[top]
    V = pool.index.part("dense").vectors(rows)
    return rows, rerank_features(fused[top], V, qvec, last.feats.X[top])


def tops(pool: Any, rounds: dict, booster: Any, n: int) -> list:
    """Each question of ``pool`` (its first rounds in ``rounds``): rows, features, gold."""
    out = []
    for qi, (v, gold) in enumerate(zip(pool.qvecs, pool.gold_rows, strict=True)):
        pos, fused, last = final(pool, rounds[qi].found, booster, False)
        rows, X = rerank_table(pool, v, pos, fused, last, n)
        out.append((rows, X, list(gold), last.rows[pos]))
    return out


def rounds_of(pool: Any, vectors: bool) -> list:
    """Each question of ``pool``: its first round (features, no scores), with or without the
    passage vectors."""
    one = replace(settings(vectors), chain=0)
    return [protocol.FirstRound(score_candidates(pool.index, one, q.text, v if vectors else None,
                                                 None), list(g), q.text, v)
            for q, v, g in zip(pool.dataset.questions, pool.qvecs, pool.gold_rows,
                               strict=True)]  # fmt: skip


def train_data(C: dict, nv: dict, held: Collection[str], n: int) -> list[Candidates]:
    """The reranker's training tops: every set but the ``held`` ones, each ranked by a no-vector
    ranker fitted without it (and without the ``held`` ones)."""
    out = []
    held = {protocol.set_of(h) for h in held}
    for T in (t for t in C if protocol.set_of(t) not in held):
        out_of = {protocol.set_of(T), *held}
        items = [it for it in nv if protocol.set_of(it[0]) not in out_of]
        inner = protocol.fit_ranker(nv, items, lambda it: nv[it].found.feats.X, {})
        t_rounds = {qi: nv[(T, qi)] for qi in range(len(C[T].dataset.questions))}
        for rows, X, gold, _ in tops(C[T], t_rounds, inner, n):
            out.append(Candidates(X, np.isin(rows, gold).astype(int), np.asarray([len(rows)])))
    return out


def ship(C: dict, nv: dict, path: str | Path, held: Collection[str] = ()) -> None:
    """Fit the reranker on every set's top :data:`TOP` (but the ``held`` sets') and write it to
    ``path``: with none held, the packaged one."""
    data = train_data(C, nv, held, TOP)
    meta = {
        "trained_on": {
            n: len(c.dataset.questions) for n, c in C.items() if protocol.set_of(n) not in held
        },
        "top": TOP,
        "lightgbm": LGB_PARAMS,
        "recipe": "benchmarks/no_vector_rerank.py --ship",
    }
    save_model(fit(data), meta, path)
    print(f"wrote {path}: {sum(len(d.groups) for d in data)} questions", file=sys.stderr)


def main() -> None:
    ap = protocol.protocol_args(__doc__)
    ap.set_defaults(held_out="musique,hotpotqa,2wikimultihopqa")
    ap.add_argument("--top", default=str(TOP), help="passages reranked (comma-separated)")
    ap.add_argument("--ship", default=None, nargs="?", const=str(SHIPPED),
                    help="fit on every set and write the packaged reranker (or FILE)")  # fmt: skip
    protocol.scale_args(ap)
    args = ap.parse_args()
    data = Path(args.data_dir)
    C, _ = protocol.training_sets(data, args.index_dir, scale_work=protocol.scale_work(args))
    nv = first_rounds(C, False)
    if args.ship:
        ship(C, nv, args.ship)
        return
    wv = first_rounds(C, True)
    report: dict[str, Any] = {}
    for E in args.held_out.split(","):
        t0 = time.time()
        full = protocol.fit_ranker(wv, [it for it in wv if protocol.set_of(it[0]) != E],
                                   lambda it: wv[it].found.feats.X, {})  # fmt: skip
        bare = protocol.fit_ranker(nv, [it for it in nv if protocol.set_of(it[0]) != E],
                                   lambda it: nv[it].found.feats.X, {})  # fmt: skip
        for name, pool in protocol.pools(E, C, data, Path(args.work), args.index_dir).items():
            ids, qs = pool.index.corpus.ids, pool.dataset.questions
            rows_f, rows_b = rounds_of(pool, True), rounds_of(pool, False)
            res: dict[str, list] = {"full": [], "no vectors": []}
            for qi, q in enumerate(qs):
                pos, _, last = final(pool, rows_f[qi].found, full, True)
                res["full"].append((len(q.gold), compute_all([ids[r] for r in last.rows[pos]],
                                                             q.gold, [2, 5, 10])))  # fmt: skip
            for n in [int(x) for x in args.top.split(",")]:
                model = fit(train_data(C, nv, (E,), n))
                key = f"no vectors + top {n} reranked"
                res[key], base = [], []
                for (rows, X, _, order), q in zip(tops(pool, dict(enumerate(rows_b)), bare, n), qs,
                                                  strict=True):  # fmt: skip
                    base.append((len(q.gold), compute_all([ids[r] for r in order], q.gold,
                                                          [2, 5, 10])))  # fmt: skip
                    new = rows[reranked(HopRanker(RERANK_FEATURES, model, {}), X)].tolist()
                    new += [int(r) for r in order if int(r) not in set(new)]
                    res[key].append((len(q.gold), compute_all([ids[r] for r in new], q.gold,
                                                              [2, 5, 10])))  # fmt: skip
                res["no vectors"] = base
            report[f"{E}/{name}"] = {k: summary(v) for k, v in res.items()}
            brief = {k: (v["R@2"], v["R@5"], v["R@10"]) for k, v in report[f"{E}/{name}"].items()}
            print(E, name, json.dumps(brief), f"{time.time() - t0:.0f} s", flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
