"""The default's chain round (issue 37) against its first round alone, on every evaluated set.
Table: docs/results.md, "Multi-hop quality against the published systems" (the chain round against
one round; every row in docs/notes/realistic-pools-chain-round.md). Run time on the 2-core machine:
about 10 min; ``--cv`` and ``--choose`` about 15 min each (estimated against a run of
experiments/decompose.py, which takes the features once and refits a ranker for each of five
held-out sets, recorded at 2–4 min: two refits per set; 5 folds × 3 sets; 6 values × 2 train sets).

    .venv/bin/python benchmarks/chain_round.py --data-dir ../shared/data \\
        [--choose] [--out benchmarks/results/chain_round.json]

``multihop`` with ``chain=0`` (the first round alone, the default before issue 37) and with the
default ``chain`` (the ranker's own top passages anchor a second round), each with rankers
refitted without the evaluated set (``set``) and without its family (``family``), as
``benchmarks/default_pipeline.py`` fits them; Recall@2/5/10 and nDCG@10 of each, and the paired
bootstrap of ΔRecall@5 (2000 resamples, 95% CI; wins / ties / losses). The ranker is the same
in both: the chain round changes the search, not the model.

``--cv`` is the estimate for the shipped ranker on new questions: 5-fold cross-validation over
each multi-hop dev set (the folds of ``experiments/default_variants.py``), the other four
fifths in the training data with every other entity-titled corpus (the shipped recipe fits
on all dev questions), scored with ``chain=0`` and the default, on the set's own pool and, for
MuSiQue and HotpotQA, on its grown pool (``realistic_pools.py``).

``--choose`` runs how ``chain``'s value was chosen: ``chain`` = 0, 3, 4, 5, 6 and 8 on the
*train* sets (musique_train, hotpotqa_train), each with a ranker fitted without it; the value
with the highest summed Recall@5 there is the default. The dev sets were not used to choose.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from default_pipeline import SETS, held_out_rankers
from default_ranker import TRAINING, default_index, set_corpus
from realistic_pools import SIZES, grown_pool

from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.metrics import compute_all
from hopgraph.retrieve.hop_features import corpus_kind
from hopgraph.retrieve.multihop import MultihopParams, score_candidates
from hopgraph.training.ranker import Candidates, fit

ROOT = Path(__file__).resolve().parents[1]
TRAIN_SETS = ("musique_train", "hotpotqa_train")
CHOICES = (0, 3, 4, 5, 6, 8)
METRICS = ("recall@2", "recall@5", "recall@10", "ndcg@10")


def compare(name: str, split: str, data_dir: Path, models: dict[str, str], chains: list[int]):
    """Each ranker (``models``: label → file) with each ``chain``, on one set's questions."""
    c = set_corpus(name, split, data_dir, None)
    specs = [
        MethodSpec("multihop", {"model": path, "chain": n}, label=f"{held} chain={n}")
        for held, path in models.items()
        for n in chains
    ]
    results = {r.label: r for r in evaluate(c.index, c.dataset, specs, progress=False)}
    out: dict[str, Any] = {}
    for held in models:
        base = [x["recall@5"] for x in results[f"{held} chain=0"].per_query]
        for n in chains:
            r = results[f"{held} chain={n}"]
            row: dict[str, Any] = {m: round(r.metrics[m], 4) for m in METRICS}
            if n:
                other = [x["recall@5"] for x in r.per_query]
                row["vs_chain0_recall@5"] = paired_bootstrap(base, other, seed=0,
                                                             n_resamples=2000)  # fmt: skip
            out[f"{held} chain={n}"] = row
    return out


def cross_validated(data_dir: Path, work: Path, chain: int) -> dict[str, Any]:
    """R@2/5/10 of each multi-hop dev set's questions ranked by the recipe fitted on the other
    folds and every other entity-titled corpus, with ``chain=0`` and ``chain``."""
    s = MultihopParams().settings()
    named = [default_index(n, f, data_dir, None, sp) for n, sp, f in TRAINING]
    named = [c for c in named if corpus_kind(c.index) == "entity_titles"]
    found = {c.name: [score_candidates(c.index, s, q.text, v, None) for q, v in
                      zip(c.dataset.questions, c.qvecs, strict=True)] for c in named}  # fmt: skip

    def group(c, picked: list[int]) -> Candidates:
        rows = [found[c.name][i] for i in picked]
        y = [np.isin(found[c.name][i].rows, c.gold_rows[i]).astype(np.int32) for i in picked]
        return Candidates(np.concatenate([f.feats.X for f in rows]), np.concatenate(y),
                          np.asarray([len(f.rows) for f in rows]))  # fmt: skip

    out: dict[str, Any] = {}
    for c in [x for x in named if not x.name.endswith("_train")]:
        pools = {"own": c}
        if c.name in SIZES:
            folder, _ = grown_pool(c.name, data_dir, work)
            pools[str(SIZES[c.name])] = default_index(folder.name, c.name, folder.parent, None,
                                                      "test")  # fmt: skip
            same = [q.id for q in pools[str(SIZES[c.name])].dataset.questions]
            assert same == [q.id for q in c.dataset.questions]  # the folds mean the same
        fold = np.arange(len(c.dataset.questions)) % 5
        np.random.default_rng(0).shuffle(fold)
        rows: dict[str, list] = {f"{p} chain={n}": [] for p in pools for n in (0, chain)}
        for k in range(5):
            others = [group(o, list(range(len(o.dataset.questions)))) for o in named if o is not c]
            model = fit([*others, group(c, [i for i in range(len(fold)) if fold[i] != k])])

            def score(X: np.ndarray, model=model) -> np.ndarray:
                return model.predict(X, num_threads=1)

            for pool, pc in pools.items():
                ids = pc.index.corpus.ids
                for i in np.flatnonzero(fold == k).tolist():
                    q, v = pc.dataset.questions[i], pc.qvecs[i]
                    for n in (0, chain):
                        f = score_candidates(pc.index, replace(s, chain=n), q.text, v, score)
                        order = f.rows[np.lexsort((f.rows, -f.scores))]
                        rows[f"{pool} chain={n}"].append(
                            compute_all([ids[r] for r in order], q.gold, [2, 5, 10]))  # fmt: skip
        out[c.name] = {
            label: {m: round(float(np.mean([x[m] for x in r])), 4) for m in METRICS[:3]}
            for label, r in rows.items()
        }
        print(c.name, json.dumps(out[c.name]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--choose", action="store_true", help="the train-set runs that chose chain")
    ap.add_argument("--cv", action="store_true", help="only the 5-fold estimate (--cv-out)")
    ap.add_argument("--cv-out", default=str(ROOT / "benchmarks/results/chain_round_cv.json"))
    ap.add_argument("--work", default=str(Path.home() / ".cache/hopgraph/datasets/realistic"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/chain_round.json"))
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    chain = MultihopParams().chain
    if args.cv:
        cv = cross_validated(data_dir, Path(args.work), chain)
        Path(args.cv_out).write_text(json.dumps({"chain": chain, "5-fold": cv}, indent=1) + "\n")
        return
    names = [n for n, _ in SETS] + (list(TRAIN_SETS) if args.choose else [])
    rankers = held_out_rankers(data_dir, None, Path(tempfile.mkdtemp(prefix="rankers-")), names)
    report: dict[str, Any] = {"chain": chain, "sets": {}}
    for name, split in [*SETS, *((t, "test") for t in TRAIN_SETS)] if args.choose else SETS:
        train = name in TRAIN_SETS
        models = {"set": rankers[name]["set"]}
        if not train:
            models["family"] = rankers[name]["family"]
        chains = list(CHOICES) if train else [0, chain]
        report["sets"][name] = compare(name, split, data_dir, models, chains)
        print(name, json.dumps(report["sets"][name]), flush=True)
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    if args.choose:
        sums = {n: sum(report["sets"][t][f"set chain={n}"]["recall@5"] for t in TRAIN_SETS)
                for n in CHOICES}  # fmt: skip
        report["choice"] = {"summed_train_recall@5": sums, "best": max(sums, key=sums.get)}
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))


def table(report: dict[str, Any]) -> str:
    lines = [
        "| set | ranker | R@2 / R@5 / R@10 / nDCG@10, chain=0 | with the chain round "
        "| ΔR@5 [95% CI] w/t/l |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    chain = report["chain"]
    for name, rows in report["sets"].items():
        for held in ("set", "family"):
            if f"{held} chain=0" not in rows:
                continue
            a, b = rows[f"{held} chain=0"], rows[f"{held} chain={chain}"]
            d = b["vs_chain0_recall@5"]
            fmt = " / ".join
            lines.append(
                f"| {name} | {held} held out | {fmt(f'{a[m]:.3f}' for m in METRICS)} | "
                f"{fmt(f'{b[m]:.3f}' for m in METRICS)} | {d['delta']:+.3f} "
                f"[{d['ci_low']:+.3f}, {d['ci_high']:+.3f}] {d['wins']}/{d['ties']}/{d['losses']} |"
            )
    if "choice" in report:
        sums = ", ".join(
            f"{n}: {v:.3f}" for n, v in report["choice"]["summed_train_recall@5"].items()
        )
        lines.append(f"\nSummed train-set R@5 by chain: {sums}; best {report['choice']['best']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
