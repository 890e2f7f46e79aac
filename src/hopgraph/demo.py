"""``hopgraph demo``: the whole flow on the built-in fictional corpus, in well under a minute."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from hopgraph.corpus import load_dataset
from hopgraph.data import demo_dataset_path
from hopgraph.defaults import DEFAULT_METHOD, DEFAULT_PARTS, describe_detected, detected_options
from hopgraph.eval import MethodSpec, evaluate
from hopgraph.eval.report import markdown_table
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.ranking import why_text

BASE_METHODS = ["bm25", "bm25_rm3", "dense", "rrf", "hybrid", "composed"]
GRAPH_METHODS = ["graph", "graph_hybrid", "graph_dense", "graph_rrf", "grapher_gcs", "grapher_ppr"]
# GRIEVER retrieves k passages per iteration: 10 each, not the evaluation's depth of 100
GRIEVER = MethodSpec("griever", {"step_k": 10}, label="griever")
# beside the default method's parts: those of GraphER (links) and GRIEVER (triples, ...)
OTHER_PARTS = ["sparse", "dense", "entities", "links", "triples", "partial_triples", "same_as"]
SPACY_PARTS = ("triples", "partial_triples", "same_as")  # GRIEVER's: spaCy's dependency parse


def spacy_installed() -> bool:
    """Whether spaCy is installed (``hopgraph[ner]``; found without importing it)."""
    import importlib.util

    return importlib.util.find_spec("spacy") is not None


def run_demo(
    workdir: Path | None, method: str | None = None, echo: Callable[[str], None] = print
) -> None:
    """Index the demo corpus (the default method's parts and the others' with options detected
    from the titles), answer three questions with ``method`` (None: the default method) and
    evaluate every method family, the default included."""
    ds = load_dataset(demo_dataset_path())
    echo(f"Demo corpus: {len(ds.corpus)} passages, {len(ds.questions)} two-hop questions\n")
    spacy = spacy_installed()
    if not spacy:
        echo("GRIEVER is left out: its triples need spaCy (pip install 'hopgraph[ner]').\n")
    with tempfile.TemporaryDirectory(prefix="hopgraph-demo-") as tmp:
        folder = (workdir or Path(tmp)) / "demo-index"
        parts = [p for p in dict.fromkeys([*DEFAULT_PARTS, *OTHER_PARTS])
                 if spacy or p not in SPACY_PARTS]  # fmt: skip
        options, detected = detected_options(ds.corpus, parts)  # title aliases (SPRIG-EL)
        built = Index.build(ds.corpus, parts, options, progress=False)
        built.detected = detected
        built.save(folder)
        index = Index.load(folder)
        echo(f"Index written to {folder} (parts: {', '.join(index.parts)})")
        echo(describe_detected(detected) + "\n")
        retriever = get_retriever(index, method)
        method = retriever.name
        echo(f"Top 3 passages of `{method}` for three questions:\n")
        for q in ds.questions[:3]:
            echo(f"Q: {q.text}")
            echo(f"   gold: {', '.join(index.corpus.get(g).title for g in q.gold)}")
            for rank, hit in enumerate(retriever.search(q.text, k=3), start=1):
                title = index.corpus.get(hit.id).title
                mark = "*" if hit.id in q.gold else " "
                why = why_text(hit.why)  # the sentence `hopgraph search` shows
                echo(f"   {mark}{rank}. {title:<32} {method}={hit.score:.4f}  ({why})")
            echo("")
        echo(f"Evaluation on all {len(ds.questions)} questions (graph_* = SPRIG, PPR over the")
        echo("entity-passage graph; grapher_* = GraphER, hybrid's top 200 reranked over links and")
        echo(
            "title mentions"
            + ("; griever = GRIEVER, two hops over spaCy triples;" if spacy else ";")
        )
        echo(f"{DEFAULT_METHOD} = the default method; compared with bm25 by paired bootstrap):\n")
        methods = [*BASE_METHODS, *GRAPH_METHODS, *([GRIEVER] if spacy else []), DEFAULT_METHOD]
        results = evaluate(index, ds, methods, progress=False)
        echo(markdown_table(results))
        echo("\n(* = gold passage.)")
