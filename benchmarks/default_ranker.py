"""Fit the ``multihop`` ranker shipped in the package, and measure how it transfers.
Table: docs/notes/any-corpus.md, issue 35's family-held-out rows (``--lodo``); without it, the
shipped ranker. Run time on the 2-core machine: about 10 min for the model, ``--lodo`` about 10
min more, plus about 10 min per train set's 100k index where missing (recorded below); estimated
against a run of experiments/decompose.py, which takes the features once and refits a ranker for
each of five held-out sets, recorded at 2–4 min: the features of every training set, pseudo-queries
and scale sets included, then one refit per family left out, six, for both kinds of index.

    .venv/bin/python benchmarks/default_ranker.py --data-dir ../shared/data            # the model
    .venv/bin/python benchmarks/default_ranker.py --data-dir ../shared/data --lodo     # + LOFO rows
        [--save-lodo DIR]   # also write each held-out ranker to DIR/<family>.json
    .venv/bin/python benchmarks/default_ranker.py --data-dir ../shared/data --ablation # + ablation
    .venv/bin/python benchmarks/default_ranker.py --data-dir ../shared/data --lodo --no-vectors \
        --no-model        # LOFO rows of the models for an index without passage vectors

Training questions: the train sets and dev questions of ``../shared/data`` (hotpotqa_train,
musique_train, hotpotqa, musique, 2wikimultihopqa, SciFact's train qrels, the Spider and BIRD
dev questions over their serialised tables), ``--pseudo`` pseudo-queries drawn from each of
those corpora (``training/pseudo.py``; tables and pseudo-queries train the ``plain_titles``
model only), and the two train sets again, each buried in a 100k-passage corpus
(:data:`SCALE`, the ``entity_titles`` models only; ``benchmarks/scale.py``'s corpus and
``hopgraph index`` build, made under ``--scale-work`` where missing: about 10 minutes each on
2 cores; ``--no-scale``: without them); never the held-out questions. With ``--lodo``, each
corpus family (HotpotQA = dev + train, MuSiQue = dev + train, 2Wiki, SciFact, Spider, BIRD;
each with its pseudo-queries and scale sets) is left out in turn: the ranker is refitted
without it and evaluated on its dev questions (SciFact: test), the transfer to a corpus it
never saw. Indexes are the default build (detected settings) cached under ``--index-dir``.
The models are written to ``src/hopgraph/models/multihop-ranker.json`` (``--out``): one per
corpus kind, and one per kind for an index without passage vectors (``*_no_vectors``: the
same questions and indexes with every dense signal absent, ``training.ranker.train_both``);
the same data give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

from hopgraph.cache import index_cache_dir
from hopgraph.corpus import load_dataset
from hopgraph.index import Index
from hopgraph.retrieve.hop_features import HopSettings
from hopgraph.retrieve.multihop import MultihopParams
from hopgraph.training.pseudo import pseudo_training_corpus
from hopgraph.training.ranker import TrainingCorpus, evaluate_ranker, train, train_both

ROOT = Path(__file__).resolve().parents[1]
# (name, split, family); dev questions are the ones the README's tables report
TRAINING = [
    ("hotpotqa_train", "test", "hotpotqa"),
    ("hotpotqa", "test", "hotpotqa"),
    ("musique_train", "test", "musique"),
    ("musique", "test", "musique"),
    ("2wikimultihopqa", "test", "2wikimultihopqa"),
    ("scifact", "train", "scifact"),
]
# The table sets (serialised tables, converted from Spider / BIRD: benchmarks/grapher.py) train
# the plain_titles model only, the one that ranks them (a corpus of tables gets no title aliases:
# index/detect.py): added to the entity_titles model, Spider cost HotpotQA 0.8 and 2Wiki 1.2
# points of R@5, set held out.
TABLES = ("spider", "bird")
# The train sets again, each buried in a 100k-passage corpus (benchmarks/scale.py: its pool, every
# other set's real passages, synthetic wiki-like ones): the same questions with the features a
# large corpus gives them, where an entity is mentioned by more pages, the walk spreads thinner
# and the first round's anchors change. They train the entity_titles models only (held out with
# their family): in the plain_titles model they cost SciFact 1.1 points of nDCG@10, family held
# out. Without them a ranker that never saw the 2Wiki questions lost 1.4 points of R@5 when their
# pool was buried in 100k passages (docs/notes/searchable-first.md, "Trained at scale").
SCALE = (("musique_train", "musique"), ("hotpotqa_train", "hotpotqa"))
SCALE_TRAINS = ("entity_titles",)
SCALE_N = 100_000
SCALE_WORK = Path.home() / ".cache/hopgraph/scale"
PSEUDO = 300  # pseudo-queries per training corpus (training/pseudo.py), plain_titles model only
EVALUATED = ("hotpotqa", "musique", "2wikimultihopqa", "scifact", "spider", "bird")
ABLATIONS: dict[str, dict] = {
    "all signals": {},
    "− PPR (entity graph)": {"drop": ("ppr", "ppr_rank")},
    "− BM25": {"drop": ("bm25", "bm25_rank", "bm25_hop")},
    "− dense": {"drop": ("cosine", "cosine_gap", "dense_rank", "hop_cosine", "hop_gain")},
    "− title/entity match": {"drop": ("title_in_query", "query_entities", "title_overlap")},
    "− bridge pages and back links": {"drop": ("bridge", "bridge_cosine", "backlink")},
    "− rewritten queries": {"drop": ("hop_cosine", "hop_gain", "bm25_hop")},
    "− shared entities, GCS": {"drop": ("anchor_shared", "gcs_lift")},
    "− every second-hop signal": {
        "drop": (
            "bridge",
            "bridge_cosine",
            "backlink",
            "hop_cosine",
            "hop_gain",
            "bm25_hop",
            "anchor_shared",
            "gcs_lift",
        )
    },
}


def default_index(
    name: str, family: str, data_dir: Path, index_dir: Path | None, split: str
) -> TrainingCorpus:
    """The default index of dataset ``name`` (cached, built where missing) and its questions."""
    from hopgraph.defaults import default_build

    path = data_dir / name
    ds = load_dataset(path, split=split)
    folder = index_cache_dir(path, ds.name, root=index_dir)
    parts, options, detected = default_build(ds.corpus)
    index = Index.load(folder) if (folder / "manifest.json").exists() else Index(ds.corpus)
    if index.add_parts(parts, options, progress=True, rebuild_changed=True):
        index.detected = detected  # recorded in the manifest, as `hopgraph index` does
        index.save(folder)
    elif index.refresh_profile(progress=True):  # cached before indexes had a profile
        index.save(folder)
    reason = (detected or {}).get("why", {}).get("reason", "")
    print(f"{name}:{split}: {len(ds.corpus)} passages, {len(ds.questions)} questions; {reason}",
          file=sys.stderr)  # fmt: skip
    return TrainingCorpus.of(name, family, index, ds)


def set_of(name: str) -> str:
    """The set a training set's questions are: ``musique_train@100000`` (a set buried in a scale
    corpus) is ``musique_train``; a set held out leaves out both."""
    return name.split("@")[0]


def scale_corpora(data_dir: Path, work: Path, n: int = SCALE_N) -> list[TrainingCorpus]:
    """The sets of :data:`SCALE`, each buried in an ``n``-passage corpus under ``work`` (made and
    indexed there where missing, with ``hopgraph index``: about 10 minutes each at 100k on 2
    cores), named ``<set>@<n>``."""
    from scale import built_index

    out = []
    for name, family in SCALE:
        corpus, folder = built_index(name, n, work, data_dir)
        ds = load_dataset(corpus, split="test")
        index = Index.load(folder)
        print(f"{name}@{n}: {len(ds.corpus)} passages, {len(ds.questions)} questions",
              file=sys.stderr)  # fmt: skip
        out.append(TrainingCorpus.of(f"{name}@{n}", family, index, ds, trains=SCALE_TRAINS))
    return out


def training_corpora(
    data_dir: Path,
    index_dir: Path | None,
    pseudo: int = PSEUDO,
    scale_work: Path | None = SCALE_WORK,
) -> list[TrainingCorpus]:
    """Every training corpus: the QA sets of :data:`TRAINING`, the table sets, ``pseudo``
    pseudo-queries drawn from each of their corpora, and the sets of :data:`SCALE` buried in
    their scale corpora under ``scale_work`` (None: without them, the recipe before issue 38)."""
    from grapher import converted

    corpora = [default_index(n, f, data_dir, index_dir, split) for n, split, f in TRAINING]
    for t in TABLES:
        folder = converted(data_dir, t)
        c = default_index(folder.name, t, folder.parent, index_dir, "test")
        corpora.append(replace(c, trains=("plain_titles",)))
    for c in list(corpora) if pseudo else []:  # each corpus once (SciFact's train split only)
        corpora.append(pseudo_training_corpus(c, pseudo, trains=("plain_titles",)))
        print(f"{c.name}-pseudo: {len(corpora[-1].dataset.questions)} pseudo-queries",
              file=sys.stderr)  # fmt: skip
    return corpora + (scale_corpora(data_dir, scale_work) if scale_work else [])


def corpus_name(name: str) -> str:
    """The corpus name of an evaluated set (a table set's converted folder)."""
    from grapher import CONVERTED

    return CONVERTED[name] if name in TABLES else name


def set_corpus(name: str, split: str, data_dir: Path, index_dir: Path | None) -> TrainingCorpus:
    """An evaluated set's default index and questions (a table set: its converted folder)."""
    if name in TABLES:
        from grapher import converted

        folder = converted(data_dir, name)
        return default_index(folder.name, name, folder.parent, index_dir, split)
    return default_index(name, name, data_dir, index_dir, split)


def evaluated_corpus(
    family: str, data_dir: Path, index_dir: Path | None, corpora: list[TrainingCorpus]
) -> TrainingCorpus:
    """The corpus whose questions a held-out ``family`` is evaluated on: SciFact's test
    questions, a table set, or the family's dev set."""
    if family == "scifact":
        return default_index("scifact", "scifact", data_dir, index_dir, "test")
    return next(c for c in corpora if c.family == family and not c.source and
                "_train" not in c.name)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--index-dir", default=None, help="index cache (default: hopgraph's)")
    ap.add_argument("--out", default=str(ROOT / "src/hopgraph/models/multihop-ranker.json"))
    ap.add_argument("--lodo", action="store_true", help="leave-one-family-out rows")
    ap.add_argument(
        "--save-lodo", default=None,
        help="with --lodo: write each held-out ranker to DIR/<family>.json (multihop.model=...)",
    )  # fmt: skip
    ap.add_argument("--ablation", action="store_true", help="LOFO rows per dropped signal")
    ap.add_argument("--no-model", action="store_true", help="do not write the model")
    ap.add_argument(
        "--no-vectors", action="store_true",
        help="--lodo rows of the models for an index without passage vectors (the dense part)",
    )  # fmt: skip
    ap.add_argument("--pseudo", type=int, default=PSEUDO, help="pseudo-queries per corpus")
    ap.add_argument(
        "--scale-work", default=str(SCALE_WORK),
        help="where the scale training corpora and their indexes are (made where missing)",
    )  # fmt: skip
    ap.add_argument("--no-scale", action="store_true", help="without the scale training sets")
    ap.add_argument("--results", default=str(ROOT / "benchmarks/results/default_ranker.json"))
    args = ap.parse_args()
    data_dir = Path(args.data_dir)
    index_dir = Path(args.index_dir) if args.index_dir else None
    scale_work = None if args.no_scale else Path(args.scale_work)
    corpora = training_corpora(data_dir, index_dir, args.pseudo, scale_work)
    settings = MultihopParams().settings()
    results: dict = {
        "settings": {k: v for k, v in settings.__dict__.items() if k not in ("drop", "vectors")}
    }
    if Path(args.results).exists():
        results = {**json.loads(Path(args.results).read_text()), **results}
    if args.no_vectors:  # the rows below: the models for an index without passage vectors
        settings = replace(settings, vectors=False)
        results = {**results, "no_vectors": results.get("no_vectors", {})}
    if not args.no_model:
        t0 = time.perf_counter()
        ranker = train_both(corpora, settings)  # with and without passage vectors, one file
        ranker.save(args.out)
        print(f"wrote {args.out} in {time.perf_counter() - t0:.0f}s", file=sys.stderr)

    def lofo(s: HopSettings, save: Path | None = None) -> dict:
        out = {}
        cache: dict = {}
        for fam in EVALUATED:
            ranker = train(corpora, s, exclude=fam, progress=False, cache=cache)
            if save is not None:
                save.mkdir(parents=True, exist_ok=True)
                ranker.save(save / f"{fam}.json")
            target = evaluated_corpus(fam, data_dir, index_dir, corpora)
            out[fam] = evaluate_ranker(target, ranker, s)
            print(f"  held out {fam}: {json.dumps(out[fam])}", file=sys.stderr)
        return out

    rows = results["no_vectors"] if args.no_vectors else results
    if args.lodo:
        rows["lofo"] = lofo(settings, Path(args.save_lodo) if args.save_lodo else None)
    if args.ablation:
        results["ablation"] = {}
        for label, change in ABLATIONS.items():
            print(label, file=sys.stderr)
            s = replace(settings, drop=change.get("drop", ()))
            results["ablation"][label] = lofo(s)
            Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {args.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
