"""The ranker's LightGBM settings, set held out (issue 37): is :data:`LGB_PARAMS` a lever?

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/ranker_settings.py \
        --data-dir ../shared/data \
        [--held-out musique_train,hotpotqa_train] [--settings '[{}, {"num_leaves": 31}]'] \
        [--out FILE.json]

For each setting below (changes to the shipped ranker's :data:`LGB_PARAMS`), the default's
ranker (its features, the shipped recipe's training questions but the held-out set's) is
fitted and the default's two rounds are scored on the held-out set's pools
(``chain_protocol.py``). The train sets are held out to choose, as the hop encoder's variant was.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
import chain_protocol as protocol  # noqa: E402

SETTINGS: list[dict[str, Any]] = [
    {},
    {"n_estimators": 50},
    {"n_estimators": 200},
    {"n_estimators": 300, "learning_rate": 0.02},
    {"num_leaves": 7},
    {"num_leaves": 31},
    {"min_child_samples": 50},
    {"min_child_samples": 100},
    {"min_child_samples": 200},
    {"lambdarank_truncation_level": 5},
    {"lambdarank_truncation_level": 10},
    {"lambdarank_truncation_level": 40},
    {"objective": "rank_xendcg"},
    {"colsample_bytree": 0.7},
    {"subsample": 0.8, "subsample_freq": 1},
    {"reg_lambda": 1.0},
    {"n_estimators": 300, "learning_rate": 0.02, "num_leaves": 7},
    {"min_child_samples": 100, "lambdarank_truncation_level": 10},
    {"min_child_samples": 100, "n_estimators": 200},
    {"min_child_samples": 100, "num_leaves": 31},
    {"min_child_samples": 100, "n_estimators": 300, "learning_rate": 0.02},
]


def main() -> None:
    ap = protocol.protocol_args(__doc__)
    ap.add_argument("--settings", default="", help="a JSON list of settings in place of SETTINGS")
    args = ap.parse_args()
    settings = json.loads(args.settings) if args.settings else SETTINGS
    data = Path(args.data_dir)
    C, rounds = protocol.training_sets(data, args.index_dir)
    report: list[dict[str, Any]] = []

    def features(it: tuple) -> np.ndarray:
        return rounds[it].found.feats.X

    held = args.held_out.split(",")
    where = {E: protocol.pools(E, C, data, Path(args.work), args.index_dir) for E in held}
    for params in settings:
        t0, row = time.time(), {"params": params}
        for E in held:
            items = [it for it in rounds if it[0] != E]
            booster = protocol.fit_ranker(rounds, items, features, params)

            def score(found: Any, booster: Any = booster) -> np.ndarray:
                return booster.predict(found.feats.X, num_threads=1)

            def runs(pool: Any, text: str, v: Any, first: Any, score: Any = score) -> dict:
                return {"chain": protocol.two_rounds(pool, first, score)}

            for name, pool in where[E].items():
                row[f"{E}/{name}"] = protocol.evaluate(pool, runs)["chain"]
        report.append(row)
        brief = {k: [v["R@2"], v["R@5"], v["R@10"]] for k, v in row.items() if k != "params"}
        print(json.dumps(params), json.dumps(brief), f"{time.time() - t0:.0f} s", flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
