"""How the default fuses its ranker with the baselines, chosen with every collection left out in
turn. Table: docs/notes/any-corpus.md, "Leave one collection out" (and docs/results.md's summary).
Run time on the 2-core machine: the held-out rankers about 15 min with the indexes cached (their
default builds where missing, 1-4 min per set; recorded 2026-11-28: 18 min from an empty cache);
the collecting step about 3 min (recorded: all twelve collections into a fresh folder, 30-40
questions/s); the choice and the table about 1 min (recorded: 66 s).

    .venv/bin/python benchmarks/default_ranker.py --data-dir ../shared/data --lodo --no-scale \
        --no-model --save-lodo RANKERS --results /tmp/ignored.json       # held-out rankers
    .venv/bin/python benchmarks/any_corpus.py --data-dir ../shared/data --rankers RANKERS \
        --work WORK

**Collect** (``WORK/<collection>.pkl``, made where missing): for each collection of
:data:`COLLECTIONS`, its default index (detected settings, cached), ``multihop`` with its final
fusion switched off (``lexical_weight=0, dense_weight=0``), and for each query the ranker's
candidates in its order, BM25's and dense's top 100 with their scores, the gold passages and the
corpus profile. A collection the shipped ranker was fitted on is run with the ranker refitted
without its family (``RANKERS/<family>.json``, from ``default_ranker.py --lodo --save-lodo``;
``--no-scale`` changes only the ``entity_titles`` models, which are not fused).

**Choose** (:func:`choose`): per kind of corpus (:func:`~hopgraph.retrieve.final_fusion.
fusion_kind`), the weights of a grid (BM25's, dense's, and the part of the query's BM25 margin
in BM25's) with the least mean loss in nDCG@10 below the best of ``bm25``, ``dense`` and ``rrf``
over that kind's collections, each collection left out in turn: its row is the fusion at the
weights chosen without it. The weights chosen on all of a kind's collections are the ones
shipped (:data:`hopgraph.retrieve.final_fusion.WEIGHTS`). Paired bootstrap 95% CIs (2000
resamples) against the best baseline of the row's collection; also the ranker alone, the rule
shipped before (BM25's weight from the corpus profile) and how well query-level evidence tells
the baselines apart. Writes ``benchmarks/results/any_corpus.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from default_ranker import set_corpus
from tqdm.auto import tqdm

import hopgraph.retrieve.multihop as mh
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.metrics import ndcg_at_k, recall_at_k
from hopgraph.ranks import reciprocal_rank_fusion
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.final_fusion import Weights, final_order, fusion_kind

ROOT = Path(__file__).resolve().parents[1]
# (collection, split, family of the shipped ranker's training data or "" for none)
COLLECTIONS = [
    ("scifact", "test", "scifact"),
    ("spider", "test", "spider"),
    ("bird", "test", "bird"),
    ("cacm", "test", ""),
    ("med", "test", ""),
    ("npl", "test", ""),
    ("time", "test", ""),
    ("pubmedqa", "test", ""),
    ("xquad_en", "test", ""),
    ("hotpotqa", "test", "hotpotqa"),
    ("musique", "test", "musique"),
    ("2wikimultihopqa", "test", "2wikimultihopqa"),
]
DEEP = 100


def collect(name: str, split: str, family: str, data_dir: Path, rankers: Path | None) -> dict:
    c = set_corpus(name, split, data_dir, None)
    index, ds = c.index, c.dataset
    model = str(rankers / f"{family}.json") if family and rankers else ""
    r = get_retriever(index, "multihop", lexical_weight=0.0, dense_weight=0.0, model=model)
    seen: list = []
    real = mh.final_order

    def spy(found, weights, k_rrf):  # the last round's candidates, as the ranker scored them
        seen.append(found)
        return real(found, weights, k_rrf)

    mh.final_order = spy
    ids = index.corpus.ids
    rows = []
    try:
        for q in tqdm(ds.questions, desc=name, file=sys.stderr):
            seen.clear()
            r.search(q.text, 10)
            f = seen[-1]
            fh = f.fh
            order = np.lexsort((f.rows, -f.scores))
            b = fh.b_list[:DEEP]
            d = fh.d_list[:DEEP]
            rows.append({
                "qid": q.id, "gold": list(q.gold), "query": q.text,
                "cand": f.rows[order], "cand_scores": f.scores[order],
                "b": b, "b_scores": np.asarray(fh.bm25[b], np.float64),
                "d": d, "d_scores": np.asarray(fh.cos[d], np.float64),
            })  # fmt: skip
    finally:
        mh.final_order = real
    kind = fusion_kind(index, True)
    return {"name": name, "ids": list(ids), "profile": index.profile, "kind": kind,
            "queries": rows, "model": model}  # fmt: skip


GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
K_RRF = 60.0
MARGINS = (0.0, 0.5, 1.0, 2.0)  # BM25's weight per unit of the query's BM25 margin
LEAD_GAP = 0.1  # the rule before issue 60: BM25's MRR lead on the profile that gives weight 1
KINDS = ("plain_titles", "tables", "entity_titles")
BASELINES = ("bm25", "dense", "rrf")
METRICS = ("ndcg@10", "recall@10", "recall@5")


def baselines(q: dict) -> dict[str, np.ndarray]:
    """The three baselines' rankings of one query (the same lists ``bm25``, ``dense`` and
    ``rrf`` return: their top 100)."""
    return {"bm25": q["b"], "dense": q["d"], "rrf": reciprocal_rank_fusion([q["b"], q["d"]])[0]}


def fused(q: dict, w: Weights) -> np.ndarray:
    """The default's final order at weights ``w``: :func:`~hopgraph.retrieve.final_fusion.
    final_order` itself, over the collected candidates and lists (the BM25 scores it reads for
    the query's margin are those of BM25's list)."""
    bm25 = dict(zip(q["b"].tolist(), q["b_scores"].tolist(), strict=True))
    fh = SimpleNamespace(b_list=q["b"], d_list=q["d"], bm25=bm25)
    found = SimpleNamespace(rows=q["cand"], scores=q["cand_scores"], fh=fh)
    return q["cand"][final_order(found, w, K_RRF)[0]]


def scored(c: dict, rows_of) -> np.ndarray:
    """(questions, 3): nDCG@10, Recall@10, Recall@5 of each question's ranking."""
    ids = c["ids"]
    out = []
    for q in c["queries"]:
        top = [ids[r] for r in rows_of(q)[:10]]
        out.append([ndcg_at_k(top, q["gold"], 10), recall_at_k(top, q["gold"], 10),
                    recall_at_k(top, q["gold"], 5)])  # fmt: skip
    return np.asarray(out)


def means(got: np.ndarray) -> dict[str, float]:
    """The mean of each column of :func:`scored`'s array, by metric name."""
    return dict(zip(METRICS, got.mean(0).round(4).tolist(), strict=True))


def before(c: dict) -> Weights:
    """The rule shipped before issue 60: BM25's weight clip((MRR_bm25 − MRR_dense) / 0.1, 0, 1)
    from the corpus profile, dense none."""
    sig = (c["profile"] or {}).get("signals", {})
    if "bm25" not in sig or "dense" not in sig:
        return Weights(0.0, 0.0)
    lead = (sig["bm25"]["mrr"] - sig["dense"]["mrr"]) / LEAD_GAP
    return Weights(round(min(max(lead, 0.0), 1.0), 4), 0.0)


class Gains:
    """Each collection's per-query metrics at any weights (computed once per weights), and its
    gain in nDCG@10 over the best of ``bm25``, ``dense`` and ``rrf`` on it."""

    def __init__(self, sets: dict[str, dict]):
        self.sets = sets
        self.cache: dict[tuple[str, Weights], np.ndarray] = {}
        self.base = {n: {m: scored(c, lambda q, m=m: baselines(q)[m]) for m in BASELINES}
                     for n, c in sets.items()}  # fmt: skip
        self.alone = {n: self.at(n, Weights(0.0, 0.0)) for n in sets}
        self.ref = {n: max(b[:, 0].mean() for b in self.base[n].values()) for n in sets}

    def at(self, name: str, w: Weights) -> np.ndarray:
        key = (name, w)
        if key not in self.cache:
            self.cache[key] = scored(self.sets[name], lambda q: fused(q, w))
        return self.cache[key]

    def gain(self, name: str, w: Weights) -> float:
        return float(self.at(name, w)[:, 0].mean() - self.ref[name])


def choose(g: Gains, names: list[str]) -> Weights:
    """The weights of the grid (BM25's, dense's, the margin's part) with the least mean loss
    over ``names``, a loss being a collection's nDCG@10 below the best of its baselines (the
    issue's bar: never below them; gains are not traded for losses elsewhere); ties: the larger
    mean gain, then the smaller weights."""
    grid = [Weights(b, d, m) for b in GRID for d in GRID for m in MARGINS]

    def key(w: Weights) -> tuple[float, ...]:
        gains = [g.gain(n, w) for n in names]
        loss = round(float(np.mean(np.minimum(gains, 0.0))), 6)
        return loss, round(float(np.mean(gains)), 6), -w.margin, -w.bm25 - w.dense

    return max(grid, key=key)


def query_evidence(c: dict) -> dict[str, float]:
    """Correlation, over one collection's queries, of query-level evidence with how much BM25
    beats dense on that query (nDCG@10): could a query tell which baseline to trust?"""
    ids = c["ids"]
    feats, diff = [], []
    for q in c["queries"]:
        b, bs, d, ds = q["b"], q["b_scores"], q["d"], q["d_scores"]
        top_b, top_d = set(b[:10].tolist()), set(d[:10].tolist())
        feats.append([
            len(top_b & top_d) / 10,
            (bs[0] - bs[1]) / bs[0] if len(bs) > 1 and bs[0] > 0 else 0.0,
            (ds[0] - ds[1]) / max(ds[0], 1e-6) if len(ds) > 1 else 0.0,
            ds[0] if len(ds) else 0.0,
            len(q["query"].split()),
        ])  # fmt: skip
        diff.append(ndcg_at_k([ids[r] for r in b[:10]], q["gold"], 10)
                    - ndcg_at_k([ids[r] for r in d[:10]], q["gold"], 10))  # fmt: skip
    f, y = np.asarray(feats, float), np.asarray(diff)
    names = ("top10_overlap", "bm25_margin", "cos_margin", "cos_top", "query_words")
    return {n: (round(float(np.corrcoef(f[:, j], y)[0, 1]), 3) if f[:, j].std() > 0
                and y.std() > 0 else 0.0) for j, n in enumerate(names)}  # fmt: skip


def report(work: Path) -> dict:
    sets = {}
    for name, _, _ in COLLECTIONS:
        if (work / f"{name}.pkl").exists():
            sets[name] = pickle.loads((work / f"{name}.pkl").read_bytes())
    g = Gains(sets)
    out: dict = {"grid": GRID, "margins": MARGINS, "chosen": {}, "collections": {}}
    for kind in KINDS:
        names = [n for n in sets if sets[n]["kind"] == kind]
        if not names:
            continue
        out["chosen"][kind] = choose(g, names)._asdict()
        for held in names:
            w = choose(g, [n for n in names if n != held] or names)
            c = sets[held]
            best = max(BASELINES, key=lambda m: g.base[held][m][:, 0].mean())
            sig = (c["profile"] or {}).get("signals", {})
            row = {"kind": kind, "questions": len(c["queries"]), "best_baseline": best,
                   "weights_held_out": w._asdict(),
                   "profile_mrr": {k: sig[k]["mrr"] for k in sig if k != "rrf"}}  # fmt: skip
            for m in BASELINES:
                row[m] = means(g.base[held][m])
            row["ranker_alone"] = means(g.alone[held])
            row["before"] = means(g.at(held, before(c)))
            row["default_held_out"] = means(g.at(held, w))
            row["default_shipped"] = means(g.at(held, Weights(**out["chosen"][kind])))
            for j, metric in enumerate(METRICS[:2]):
                cmp = paired_bootstrap(g.base[held][best][:, j], g.at(held, w)[:, j],
                                       n_resamples=2000, seed=0)  # fmt: skip
                row[f"delta_{metric}"] = {k: round(float(cmp[k]), 4)
                                          for k in ("delta", "ci_low", "ci_high")}  # fmt: skip
            row["query_evidence"] = query_evidence(c)
            out["collections"][held] = row
            print(f"{held}: held out {w} -> {row['default_held_out']} vs {best} {row[best]}",
                  file=sys.stderr)  # fmt: skip
    return out


NAMES = {"scifact": "SciFact (test)", "spider": "Spider (tables)", "bird": "BIRD (tables)",
         "cacm": "CACM", "med": "MED", "npl": "NPL", "time": "TIME", "pubmedqa": "PubMedQA",
         "xquad_en": "XQuAD (English)", "hotpotqa": "HotpotQA", "musique": "MuSiQue",
         "2wikimultihopqa": "2WikiMultiHopQA"}  # fmt: skip


def markdown(results: dict) -> str:
    """The table of docs/notes/any-corpus.md: every collection's row with itself held out."""

    def pair(m: dict) -> str:
        return f"{m['ndcg@10']:.3f} / {m['recall@10']:.3f}"

    def ci(d: dict) -> str:
        return f"{d['delta']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"

    head = (
        "| held out | kind | questions | `bm25` nDCG@10 / R@10 | `dense` | `rrf` | ranker alone "
        "| before (profile rule) | default, held out (BM25, dense weights) | ΔnDCG@10 vs best "
        "| ΔR@10 vs best |"
    )
    lines = [head, "|" + "---|" * 11]
    for name, r in results["collections"].items():
        best = r["best_baseline"]
        cells = [pair(r[m]) if m != best else f"**{pair(r[m])}**" for m in BASELINES]
        w = r["weights_held_out"]
        bm25 = f"{w['bm25']:g}" + (f" + {w['margin']:g}·margin" if w["margin"] else "")
        lines.append(
            f"| {NAMES.get(name, name)} | {r['kind']} | {r['questions']} | {' | '.join(cells)} "
            f"| {pair(r['ranker_alone'])} | {pair(r['before'])} "
            f"| {pair(r['default_held_out'])} ({bm25}, {w['dense']:g}) "
            f"| {ci(r['delta_ndcg@10'])} vs {best} | {ci(r['delta_recall@10'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--rankers", default=None, help="held-out rankers (default_ranker.py)")
    ap.add_argument("--work", required=True, help="where the collected lists are kept")
    ap.add_argument("--only", default="", help="collect only these (comma-separated)")
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/any_corpus.json"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    for name, split, family in COLLECTIONS:
        if (only and name not in only) or (work / f"{name}.pkl").exists():
            continue
        rk = Path(args.rankers) if args.rankers else None
        got = collect(name, split, family, Path(args.data_dir), rk)
        (work / f"{name}.pkl").write_bytes(pickle.dumps(got))
        print(f"{name}: {len(got['queries'])} queries", file=sys.stderr)
    results = report(work)
    Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    print(markdown(results))
    print(json.dumps(results["chosen"]), file=sys.stderr)
    print(f"wrote {args.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
