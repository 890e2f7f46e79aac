"""Evaluate retrieval methods on a dataset (``hopgraph eval``) and show the named presets of tuned
settings it can apply (``hopgraph presets``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from hopgraph.cli.common import (
    ASSIGN_HELP,
    INDEX_DIR_HELP,
    POOL_HELP,
    data_dir_option,
    echo_err,
    parse_ks,
    quiet_option,
    resolve_dataset,
    split_csv,
)
from hopgraph.config import parse_assignments
from hopgraph.index.store import split_part_options

if TYPE_CHECKING:
    from hopgraph.eval import MethodResult


@click.command("eval")
@click.argument("dataset")
@click.option(
    "--method", "methods", default="default", show_default=True,
    help="comma-separated; 'default' is the recommended method",
)  # fmt: skip
@click.option("--set", "sets", multiple=True, help=f"[method.]param=value; {ASSIGN_HELP}")
@click.option("--index-set", "index_sets_cli", multiple=True, help="index part option part.opt=v")
@click.option("--preset", default=None, help="named preset of tuned settings (hopgraph presets)")
@click.option(
    "--k", "ks", default="1,2,5,10", show_default=True, callback=lambda c, p, v: parse_ks(v)
)
@click.option("--depth", default=100, show_default=True, help="passages retrieved per question")
@click.option("--limit", type=int, default=None, help="first N questions only [default: all]")
@click.option("--json", "json_out", type=click.Path(), default=None, help="write results here")
@click.option("--per-query", is_flag=True, help="per-question table (and in the JSON)")
@click.option(
    "--split", default="test", show_default=True,
    help="BEIR qrels split, or questions_{split}.jsonl of a unified folder",
)  # fmt: skip
@click.option("--include-incomplete", is_flag=True, help="keep questions whose gold is incomplete")
@click.option("--pool-by", default=None, help=POOL_HELP)
@data_dir_option
@click.option("--index-dir", default=None, help=INDEX_DIR_HELP)
@click.option(
    "--index", "prebuilt", type=click.Path(), default=None,
    help="evaluate against this prebuilt index (hopgraph index), no build; it must hold "
    "DATASET's gold passages under the same ids",
)  # fmt: skip
@quiet_option
def eval_cmd(
    dataset, methods, sets, index_sets_cli, preset, ks, depth, limit, json_out, per_query, split,
    include_incomplete, pool_by, data_dir, index_dir, prebuilt, quiet,
) -> None:  # fmt: skip
    """Evaluate methods on DATASET (unified-layout or BEIR folder, or a name under --data-dir).

    With --index, the questions are searched in that prebuilt index instead of one built over
    DATASET's corpus: a larger corpus holding DATASET's passages with their ids (such as a
    scale corpus from benchmarks/scale.py); the index's parts are used as they are."""
    from hopgraph.cache import open_cached_index
    from hopgraph.corpus import load_dataset
    from hopgraph.eval import evaluate, method_specs, required_parts

    if prebuilt is not None:
        _check_prebuilt_options(pool_by, index_sets_cli, preset, index_dir)
    path = resolve_dataset(dataset, data_dir)
    ds = load_dataset(path, split=split, include_incomplete=include_incomplete)
    from hopgraph.presets import index_assignments, load_preset

    chosen = load_preset(preset) if preset else None
    specs = method_specs(split_csv(methods), parse_assignments(sets), chosen)
    if prebuilt is not None:
        from hopgraph.eval.prebuilt import load_prebuilt

        for reason, n in ds.skipped.items():
            click.echo(f"skipped {n} questions of {ds.name} ({reason})", err=True)
        index = load_prebuilt(prebuilt, ds, specs, limit, log=echo_err)
        results = evaluate(index, ds, specs, ks=ks, depth=depth, limit=limit, progress=not quiet)
        _report(results, ks, per_query, json_out)
        return
    # preset index options first, --index-set after (so it wins)
    index_sets = [*index_assignments(chosen), *index_sets_cli]
    click.echo(f"{ds.name}: {len(ds.corpus)} passages, {len(ds.questions)} questions", err=True)
    for reason, n in ds.skipped.items():
        hint = "; --include-incomplete keeps them" if reason == "gold_incomplete" else ""
        click.echo(f"skipped {n} questions ({reason}{hint})", err=True)
    # the default method's parts get the options detected from the corpus (index options
    # given by a preset or --index-set win); other methods keep their parts' plain defaults
    # but for the corpus's language
    from hopgraph.defaults import DEFAULT_METHOD, describe_detected, detected_options

    options = split_part_options(parse_assignments(index_sets))
    detected = None
    if any(s.method == DEFAULT_METHOD for s in specs):
        options, detected = detected_options(ds.corpus, required_parts(specs), options)
        if detected:
            click.echo(describe_detected(detected), err=True)
    else:  # the language is the corpus's whatever the method
        from hopgraph.index.default_build import language_options

        options = language_options(ds.corpus, required_parts(specs), options)
    if pool_by:
        from hopgraph.eval import merge_results
        from hopgraph.eval.pools import pool_indexes

        if limit:
            ds.questions = ds.questions[:limit]
        groups = [
            evaluate(ix, sub, specs, ks=ks, depth=depth, progress=False)
            for sub, ix in pool_indexes(ds, pool_by, required_parts(specs), options, not quiet)
        ]
        results = merge_results(groups)
    else:
        index = open_cached_index(
            ds, path, required_parts(specs), options, index_dir, not quiet, detected, log=echo_err
        )
        results = evaluate(index, ds, specs, ks=ks, depth=depth, limit=limit, progress=not quiet)
    _report(results, ks, per_query, json_out)


def _report(
    results: list[MethodResult], ks: list[int], per_query: bool, json_out: str | None
) -> None:
    """The results table (and the per-question one) on stdout; the JSON file if asked."""
    from hopgraph.eval.report import markdown_table, per_query_table, write_json

    click.echo(markdown_table(results, ks))
    for r in results:  # what the ranking trusted on this corpus, so a loss can be read
        if r.trusted:
            click.echo(f"\n{r.label} on this corpus: {r.trusted}")
    if per_query:
        click.echo("\n" + per_query_table(results))
    if json_out:
        write_json(results, json_out, per_query=per_query)
        click.echo(f"wrote {json_out}", err=True)


def _check_prebuilt_options(
    pool_by: str | None, index_sets: tuple[str, ...], preset: str | None, index_dir: str | None
) -> None:
    """``eval --index`` uses the index as built: options that build or pick indexes are refused."""
    clash = [
        name
        for name, given in (
            ("--pool-by (one index built per pool)", pool_by),
            ("--index-set (options of parts to build)", index_sets),
            ("--preset (its index options are applied when the index is built)", preset),
            ("--index-dir (the cache of indexes eval builds)", index_dir),
        )
        if given
    ]
    if clash:
        raise click.UsageError(
            f"--index evaluates a prebuilt index as it is; it cannot be combined with "
            f"{'; '.join(clash)}. Build the index with the part options you want (hopgraph "
            f"index CORPUS -o INDEX_DIR --set part.option=value) and give method parameters "
            f"with --set"
        )


@click.command("presets")
@click.argument("name", required=False)
def presets_cmd(name) -> None:
    """List the named presets, or show one."""
    from hopgraph.presets import list_presets, load_preset

    if name:
        click.echo(json.dumps(load_preset(name), indent=2))
        return
    for n in list_presets():
        click.echo(f"{n}: {load_preset(n).get('description', '')}")
