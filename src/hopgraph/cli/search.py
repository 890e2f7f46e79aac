"""Search an index (``hopgraph search``) and list the retrieval methods (``hopgraph methods``)."""

from __future__ import annotations

import json
import os
import time

import click

from hopgraph.cli.common import ASSIGN_HELP, METHOD_HELP, parse_json_option
from hopgraph.config import describe_options, parse_assignments
from hopgraph.errors import HopgraphError
from hopgraph.retrieve.crowding import DEFAULT_MAX_PER_DOC


@click.command("search")
@click.argument("index_dir", type=click.Path())
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="passages to show")  # fmt: skip
@click.option("--method", default="default", show_default=True, help=METHOD_HELP)
@click.option("--set", "sets", multiple=True,
              help=f"method parameter; {ASSIGN_HELP} [default: none]")  # fmt: skip
@click.option("--json", "as_json", is_flag=True,
              help="print the ranking as JSON: each hit's id, score, why, title, text and "
              "metadata, and the search's info [default: off]")  # fmt: skip
@click.option(
    "--filter",
    "filter_json",
    default=None,
    metavar="JSON",
    help='only passages whose metadata match, e.g. \'{"year": {"$gte": 2020}}\' '
    "(operators $eq $ne $in $nin $gt $gte $lt $lte, $and $or $not) [default: every passage]",
)
@click.option(
    "--max-per-doc",
    type=click.IntRange(min=0),
    default=None,
    help="at most N hits from one document (passages with the same metadata doc_id: the "
    "chunks of one file); 0: no limit. The search still shows -k hits when the index has "
    f"enough documents [default: {DEFAULT_MAX_PER_DOC} on an index of documents, raised "
    "where they are too few for -k hits; else no limit]",
)
@click.option("-v", "--verbose", is_flag=True,
              help="report the start-up on stderr: how long the index, the models and the "
              "search took, and the models' own progress bars [default: off]")  # fmt: skip
def search_cmd(
    index_dir, query, k, method, sets, as_json, filter_json, max_per_doc, verbose
) -> None:
    """Search INDEX_DIR for QUERY and show the passages and why they rank."""
    if not verbose:  # a model loaded for the first time (an ONNX export) would draw its bars
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    t0 = time.perf_counter()
    from hopgraph.index import Index
    from hopgraph.retrieve import get_retriever
    from hopgraph.retrieve.ranking import why_text

    spec = parse_json_option(filter_json, "--filter")
    index = Index.load(index_dir)
    t1 = time.perf_counter()
    ranker = get_retriever(index, method, **parse_assignments(sets))
    t2 = time.perf_counter()
    if ranker.default_fallback:  # the index lacks the default's parts: say what was used
        click.echo(f"note: {ranker.default_fallback['default_fallback']['note']}", err=True)
    ranking = ranker.search(query, k=k, filter=spec, max_per_doc=max_per_doc)
    if verbose:
        click.echo(
            f"start-up: index loaded in {t1 - t0:.2f} s, {ranker.name} set up in {t2 - t1:.2f} s, "
            f"searched in {time.perf_counter() - t2:.2f} s (models load on first use)",
            err=True,
        )
    if not ranking.ids:
        click.echo(
            "no passage matches the filter" if spec else "no passage found for this query",
            err=True,
        )
    elif all("filled" in (hit.why or {}) for hit in ranking):
        click.echo(
            f"{ranker.name} found no passage for this query: the {len(ranking.ids)} below only "
            "fill -k (why: filled)",
            err=True,
        )
    if as_json:
        click.echo(json.dumps(ranking.to_dict(index.corpus), indent=2, ensure_ascii=False))
        return
    for rank, hit in enumerate(ranking, start=1):
        p = index.corpus.get(hit.id)
        click.echo(f"{rank:>3}. [{hit.id}] {p.title}  score={hit.score:.4f}")
        click.echo(f"     {_short(p.text)}")
        click.echo(f"     why: {why_text(hit.why)}")
    skipped = ranking.info.get("crowded_out", 0)
    if skipped:
        click.echo(
            f"({skipped} more passage{'s' if skipped > 1 else ''} of documents already shown "
            f"skipped: at most {ranking.info['max_per_doc']} per document; --max-per-doc 0 "
            "shows them)"
        )


def _short(text: str, n: int = 160) -> str:
    """One line of ``text`` in at most ``n`` terminal columns (a Chinese character takes two)."""
    from hopgraph.text.display import clip

    return clip(" ".join(text.split()), n, by_columns=True)


@click.command("methods")
def methods_cmd() -> None:
    """List retrieval methods, the index parts they need, and their parameters; the default
    (used when no method is named, or with --method default) is marked."""
    from hopgraph.retrieve import list_methods, method_class
    from hopgraph.retrieve.base import DEFAULT_ALIAS, DEFAULT_METHOD, method_parts

    for name in list_methods():
        cls = method_class(name)
        try:  # the parts with the default parameters (some methods need e.g. model=)
            parts = method_parts(name)
        except HopgraphError:
            parts = cls.parts_for(cls.Params())
        mark = f"  [{DEFAULT_ALIAS}]" if name == DEFAULT_METHOD else ""
        click.echo(f"{name}{mark}  (needs: {', '.join(parts)})  {cls.summary}")
        for opt, tp, default, help_ in describe_options(cls.Params):
            click.echo(f"    {opt}: {tp} = {default!r}  {help_}")
