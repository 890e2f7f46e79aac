"""Corpora in other languages (issue 61): hopgraph's ``bm25`` and the default against the BM25 a
user sets up by hand, on every question set of ``../shared/data`` in a language, English
included (xquad_en).

    PYTHONPATH=src .venv/bin/python benchmarks/languages.py --data-dir ../shared/data \
        [--sets xquad_zh,cmrc_zh] [--limit N] [--methods bm25,default] \
        [--out benchmarks/results/languages.json] [--compare-ner regex]

The by-hand BM25 is the reference the issue names, written here on purpose apart from hopgraph's
own analyzers: bm25s (method lucene, k1 1.5, b 0.75) over ``bm25s.tokenize`` of the lowercased
passage (title and text) with the language's Snowball stemmer from PyStemmer and no stop words;
for Chinese and Japanese, character bigrams of every run of letters instead of words. Rows:
Recall@10 and MRR (reciprocal rank of the first gold passage in the top 100) per method, with a
paired bootstrap 95% CI of each method's difference from the by-hand BM25 (1,000 resamples,
seed 0), and what the default trusted on the corpus (its ``info``: the language, and whether
passage vectors were used). Each index is built as ``hopgraph eval`` builds it (detected
options, cached under $HOPGRAPH_CACHE). About 25 minutes for every set on 2 cores.
``--compare-ner regex`` runs the default again with ``entities.ner=regex`` instead of the
detected NER and adds the paired difference (the rows "... − ner=regex": Δ is detected minus
regex), which chose ``entities.ner=terms`` for texts without case (docs/notes/languages.md).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from hopgraph.cache import open_cached_index
from hopgraph.corpus.loaders import load_dataset
from hopgraph.defaults import DEFAULT_METHOD, detected_options
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.bootstrap import paired_bootstrap
from hopgraph.eval.metrics import recall_at_k, reciprocal_rank
from hopgraph.eval.runner import required_parts

SETS = (
    "xquad_en", "xquad_de", "xquad_es", "xquad_ru", "xquad_zh", "xquad_ar",
    "piaf_fr", "squad_es", "cmrc_zh", "jsquad_ja", "arcd_ar",
)  # fmt: skip
SNOWBALL = {"en": "english", "de": "german", "es": "spanish", "ru": "russian", "fr": "french",
            "ar": "arabic"}  # fmt: skip
DEPTH = 100
_LETTERS = re.compile(r"\w+")


def language_of(name: str) -> str:
    return name.rsplit("_", 1)[1]


def by_hand_tokens(texts: list[str], lang: str) -> list[list[str]]:
    """The issue's by-hand analysis: bigrams for zh/ja, else bm25s words + Snowball stems."""
    if lang in ("zh", "ja"):
        out = []
        for t in texts:
            toks: list[str] = []
            for run in _LETTERS.findall(t.lower()):
                toks += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
            out.append(toks)
        return out
    res = bm25s.tokenize(
        [t.lower() for t in texts], stopwords=None, stemmer=Stemmer.Stemmer(SNOWBALL[lang]),
        return_ids=False, show_progress=False,
    )  # fmt: skip
    return [list(r) for r in res]


def by_hand(ds, lang: str) -> list[dict[str, float]]:
    """Per question: recall@10 and MRR of the by-hand BM25."""
    ids = [p.id for p in ds.corpus]
    retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    retriever.index(by_hand_tokens([p.content for p in ds.corpus], lang), show_progress=False)
    qtoks = by_hand_tokens([q.text for q in ds.questions], lang)
    out = []
    for q, toks in zip(ds.questions, qtoks, strict=True):
        scores = retriever.get_scores(toks) if toks else np.zeros(len(ids))
        top = np.lexsort((np.arange(len(ids)), -scores))[:DEPTH]
        ranking = [ids[i] for i in top.tolist()]
        out.append(
            {"recall@10": recall_at_k(ranking, q.gold, 10), "mrr": reciprocal_rank(ranking, q.gold)}
        )
    return out


def run_set(
    name: str, data_dir: Path, methods: list[str], limit: int | None, ner: str | None = None
) -> dict:
    path = data_dir / name
    ds = load_dataset(path)
    if limit:
        ds.questions = ds.questions[:limit]
    lang = language_of(name)
    t0 = time.perf_counter()
    ref = by_hand(ds, lang)
    ref_s = time.perf_counter() - t0
    specs = [MethodSpec(m) for m in methods]
    options, detected = {}, None
    if any(s.method == DEFAULT_METHOD for s in specs):
        options, detected = detected_options(ds.corpus, required_parts(specs))
    index = open_cached_index(ds, path, required_parts(specs), options, None, False, detected)
    results = evaluate(index, ds, specs, depth=DEPTH, progress=False)
    rows = {"by-hand bm25": summary(ref, ref, round(ref_s, 1))}
    for spec, res in zip(specs, results, strict=True):
        per = [{"recall@10": r["recall@10"], "mrr": r["mrr"]} for r in res.per_query]
        rows[spec.label] = summary(per, ref, res.latency.get("p50"))
    if ner is not None and any(
        s.method == DEFAULT_METHOD for s in specs
    ):  # the default again, its entities' NER set instead of detected
        swapped = {**options, "entities": {**options.get("entities", {}), "ner": ner}}
        index2 = open_cached_index(ds, path, required_parts(specs), swapped, None, False, detected)
        (res2,) = evaluate(index2, ds, [MethodSpec(DEFAULT_METHOD)], depth=DEPTH, progress=False)
        per2 = [{"recall@10": r["recall@10"], "mrr": r["mrr"]} for r in res2.per_query]
        rows[f"default, ner={ner}"] = summary(per2, ref, res2.latency.get("p50"))
        i = next(i for i, s in enumerate(specs) if s.method == DEFAULT_METHOD)
        per = [{"recall@10": r["recall@10"], "mrr": r["mrr"]} for r in results[i].per_query]
        rows[f"{specs[i].label} − ner={ner}"] = summary(
            per, per2, None
        )  # Δ: paired, detected − ner
    info = {}
    if any(s.method == DEFAULT_METHOD for s in specs):
        from hopgraph.retrieve import get_retriever

        ranking = get_retriever(index, "default").search(ds.questions[0].text, k=10)
        info = {k: v for k, v in ranking.info.items() if k in ("language", "vectors", "weights")}
    sparse = index.part("sparse").options
    return {
        "set": name, "passages": len(ds.corpus), "questions": len(ds.questions),
        "language": sparse.language, "rows": rows, "default_info": info,
    }  # fmt: skip


def summary(per: list[dict[str, float]], ref: list[dict[str, float]], p50) -> dict:
    out: dict = {"p50_s": p50}
    for metric in ("recall@10", "mrr"):
        a = [r[metric] for r in ref]
        b = [r[metric] for r in per]
        cmp = paired_bootstrap(a, b, n_resamples=1000, seed=0)
        out[metric] = round(float(np.mean(b)), 4)
        out[f"{metric}_delta"] = round(cmp["delta"], 4)
        out[f"{metric}_ci"] = [round(cmp["ci_low"], 4), round(cmp["ci_high"], 4)]
    return out


def table(results: list[dict]) -> str:
    lines = [
        "| set | passages / questions | language | method | R@10 | MRR "
        "| ΔR@10 [95% CI] | ΔMRR [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for r in results:
        for label, row in r["rows"].items():
            d = ""
            if label != "by-hand bm25":
                d = (
                    f"{row['recall@10_delta']:+.3f} [{row['recall@10_ci'][0]:+.3f}, "
                    f"{row['recall@10_ci'][1]:+.3f}] | {row['mrr_delta']:+.3f} "
                    f"[{row['mrr_ci'][0]:+.3f}, {row['mrr_ci'][1]:+.3f}]"
                )
            else:
                d = " | "
            lines.append(
                f"| {r['set']} | {r['passages']:,} / {r['questions']:,} | {r['language']} | "
                f"{label} | {row['recall@10']:.3f} | {row['mrr']:.3f} | {d} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--methods", default="bm25,default")
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each set")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--compare-ner",
        default=None,
        help="also run the default with this entities.ner (regex, terms...) and give the paired "
        "difference of the detected one against it",
    )
    args = ap.parse_args()
    results = []
    for name in args.sets.split(","):
        methods = args.methods.split(",")
        results.append(run_set(name, args.data_dir, methods, args.limit, args.compare_ner))
        print(table(results[-1:]), flush=True)
    print(table(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n", "utf-8")


if __name__ == "__main__":
    main()
