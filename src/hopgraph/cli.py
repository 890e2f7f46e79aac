"""The ``hopgraph`` command line: index, add-parts, search, eval, add, delete, convert, info,
methods, demo, serve, mcp (and the training commands)."""

from __future__ import annotations

import copy
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from hopgraph.config import describe_options, parse_assignments
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.index.store import split_part_options
from hopgraph.index.streaming import DEFAULT_BATCH
from hopgraph.retrieve.crowding import DEFAULT_MAX_PER_DOC

ASSIGN_HELP = "key=value; repeatable"
NO_DETECT_HELP = (
    "do not detect part options from the corpus (entities.title_aliases); the parts' own "
    "defaults apply"
)
METHOD_HELP = "retrieval method; 'default' is the recommended one (hopgraph methods marks it)"
DATA_DIR_HELP = "folder of named datasets (or $HOPGRAPH_DATA)"
INDEX_DIR_HELP = "index cache folder [default: $HOPGRAPH_CACHE, else ~/.cache/hopgraph/indexes]"
# the corpus loaders' rule (hopgraph.corpus.loaders): documents are cut at 200 words unless told
CHUNK_WORDS_HELP = (
    "split passages longer than this many words, a fifth of it overlapping [default: documents "
    "(PDF, HTML, DOCX, Markdown, text) are cut at 200 words; passage files and datasets are "
    "not split]"
)
POOL_HELP = (
    "metadata key: each question searches only the passages sharing its value, one index per "
    "pool (db_id for converted Spider/BIRD tables)"
)


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _ks(value: str) -> list[int]:
    try:
        ks = [int(v) for v in _csv(value)]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter("every k must be >= 1")
    return ks


def _resolve_dataset(dataset: str, data_dir: str | None) -> Path:
    """A path, or a dataset name looked up under --data-dir / $HOPGRAPH_DATA."""
    p = Path(dataset).expanduser()
    if p.exists():
        return p
    root = data_dir or os.environ.get("HOPGRAPH_DATA")
    if root and (Path(root) / dataset).exists():
        return Path(root) / dataset
    hint = f" (looked in {root})" if root else " (set --data-dir or HOPGRAPH_DATA to use names)"
    raise HopgraphError(f"no dataset at {dataset!r}{hint}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hopgraph")
def cli() -> None:
    """Multi-hop retrieval for RAG without an LLM at query time."""


@cli.command("index")
@click.argument("corpus")
@click.option("-o", "--output", required=True, type=click.Path(), help="index folder to write")
@click.option(
    "--parts", default=None,
    help="index parts to build, comma-separated [default: those the default method needs]",
)  # fmt: skip
@click.option("--set", "sets", multiple=True, help=f"part option, part.option=value; {ASSIGN_HELP}")
@click.option("--no-detect", is_flag=True, help=NO_DETECT_HELP)
@click.option("--chunk-words", type=click.IntRange(min=1), default=None, help=CHUNK_WORDS_HELP)
@click.option("--format", "fmt", default="auto", show_default=True, help="corpus format")
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=DEFAULT_BATCH, show_default=True,
    help="passages per batch: memory is bounded by a batch, a stopped build resumes at one",
)  # fmt: skip
@click.option(
    "--resume", is_flag=True,
    help="continue a stopped build of OUTPUT (same corpus, parts, options, batch size)",
)  # fmt: skip
@click.option(
    "--force", is_flag=True,
    help="replace what OUTPUT holds (an index, or other files) once the new index is built",
)  # fmt: skip
@click.option(
    "--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
    help="where the per-passage work runs: this process, or Ray Data on a Ray cluster",
)  # fmt: skip
@click.option(
    "--address", default=None,
    help="--engine ray: the cluster to join (e.g. 10.0.0.5:6379, or 'auto') [default: a local one]",
)  # fmt: skip
@click.option(
    "--workers", type=click.IntRange(min=1), default=None,
    help="--engine ray: actors making segments [default: the cluster's CPUs / --cpus-per-worker]",
)  # fmt: skip
@click.option(
    "--cpus-per-worker", type=click.IntRange(min=1), default=1, show_default=True,
    help="--engine ray: CPUs (and encoder threads) of each actor",
)  # fmt: skip
@click.option("--data-dir", default=None, help="folder of named datasets (or $HOPGRAPH_DATA)")
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
def index_cmd(
    corpus, output, parts, sets, no_detect, chunk_words, fmt, batch_size, resume, force, engine,
    address, workers, cpus_per_worker, data_dir, quiet,
) -> None:  # fmt: skip
    """Build an index of CORPUS (a file or folder in any supported format) into OUTPUT.

    Without --parts, the parts the default method needs. Options that the corpus decides
    (entities.title_aliases: on when passage titles look like entity names) are detected from
    the titles for the parts built, unless set with --set or turned off with --no-detect; the
    detection is recorded in the index (hopgraph info shows it).

    The corpus is read as a stream and indexed in batches (--batch-size), so memory stays
    bounded whatever its size; the work lives in OUTPUT.partial until the index is written.
    A build stopped at any point (Ctrl-C, a kill, a reboot) continues with --resume from its
    last complete batch, and gives the same index as a build that never stopped. An OUTPUT
    that holds an index (or other files) is refused, and left as it is, unless --force.
    Progress bars count the passages read, then those indexed (-q: none).

    With --engine ray the batches' per-passage work (tokeniser, encoder, NER) runs as Ray Data
    map_batches on a Ray cluster (--address; a local one by default); this process reads the
    corpus, writes the segments it gets back and merges them, as a local build does."""
    from hopgraph.index.streaming import EngineOptions, build_index

    if engine == "local" and (address or workers):
        raise click.BadParameter("--address and --workers need --engine ray", param_hint="--engine")

    options = split_part_options(parse_assignments(sets))
    names = _csv(parts) if parts is not None else None
    if names is not None and not names:
        raise click.BadParameter("name at least one part", param_hint="--parts")
    t0 = time.perf_counter()
    try:
        index = build_index(
            _resolve_dataset(corpus, data_dir),
            output,
            names,
            options,
            detect=not no_detect,
            chunk_words=chunk_words,
            fmt=fmt,
            batch_size=batch_size,
            resume=resume,
            overwrite=force,
            progress=not quiet,
            log=lambda line: click.echo(line, err=True),
            engine=EngineOptions(engine, address, workers, cpus_per_worker),
        )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: the batches done so far are kept; continue with the same command "
            "and --resume",
            err=True,
        )
        sys.exit(130)
    secs = time.perf_counter() - t0
    click.echo(
        f"wrote {index.path} ({len(index)} passages; {', '.join(index.parts)}) in {secs:.1f}s",
        err=True,
    )


@cli.command("search")
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
def search_cmd(index_dir, query, k, method, sets, as_json, filter_json, max_per_doc) -> None:
    """Search INDEX_DIR for QUERY and show the passages and why they rank."""
    from hopgraph.index import Index
    from hopgraph.retrieve import get_retriever
    from hopgraph.retrieve.ranking import why_text

    spec = _json_option(filter_json, "--filter")
    index = Index.load(index_dir)
    ranker = get_retriever(index, method, **parse_assignments(sets))
    if ranker.default_fallback:  # the index lacks the default's parts: say what was used
        click.echo(f"note: {ranker.default_fallback['default_fallback']['note']}", err=True)
    ranking = ranker.search(query, k=k, filter=spec, max_per_doc=max_per_doc)
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


def _json_option(value: str | None, name: str) -> Any:
    """A JSON-valued option, or a usage error naming it."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=name) from None


_NICE_HELP = (
    "CPU niceness of this update (0-19; 0 keeps the priority): searches served on the same "
    "cores keep their latency meanwhile, and on an idle machine the update takes as long"
)


_VERIFY_HELP = (
    "check every file's checksum before the update (slow on a large index: the whole base is "
    "read); without it sizes are checked, and the checksums are checked when a save writes a "
    "new base from it"
)


def _verify_option(f: Any) -> Any:
    return click.option("--verify", is_flag=True, help=_VERIFY_HELP)(f)


def _nice_option(f: Any) -> Any:
    from hopgraph.priority import WRITER_NICE  # the commands run their work with run_niced

    return click.option(
        "--nice", type=click.IntRange(0, 19), default=WRITER_NICE, show_default=True,
        help=_NICE_HELP,
    )(f)  # fmt: skip


@cli.command("add")
@click.argument("index_dir", type=click.Path())
@click.argument("passages")
@click.option("--chunk-words", type=click.IntRange(min=1), default=None, help=CHUNK_WORDS_HELP)
@click.option("--format", "fmt", default="auto", show_default=True, help="passages file format")
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
@_nice_option
@_verify_option
def add_cmd(index_dir, passages, chunk_words, fmt, quiet, nice, verify) -> None:
    """Add the passages in PASSAGES (a file or folder in any supported format) to INDEX_DIR.

    Every part is updated in place: only the new passages go through the models, and the
    result is the index a fresh build on the new corpus gives. The write is atomic.
    """
    from hopgraph.corpus import load_corpus
    from hopgraph.priority import run_niced

    new = load_corpus(Path(passages).expanduser(), chunk_words=chunk_words, fmt=fmt)
    run_niced(
        nice, _update_index, index_dir, add=list(new), delete=[], progress=not quiet,
        verify=verify,
    )  # fmt: skip


@cli.command("delete")
@click.argument("index_dir", type=click.Path())
@click.argument("ids", nargs=-1)
@click.option("--ids-file", type=click.Path(exists=True), help="a file of ids, one a line")
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
@_nice_option
@_verify_option
def delete_cmd(index_dir, ids, ids_file, quiet, nice, verify) -> None:
    """Delete the passages IDS from INDEX_DIR (every part updated in place, atomically)."""
    ids = list(ids)
    if ids_file:
        text = Path(ids_file).read_text(encoding="utf-8")
        ids += [line.strip() for line in text.splitlines() if line.strip()]
    if not ids:
        raise click.UsageError("give the ids to delete, or --ids-file")
    from hopgraph.priority import run_niced

    run_niced(nice, _update_index, index_dir, add=[], delete=ids, progress=not quiet, verify=verify)


@cli.command("compact")
@click.argument("index_dir", type=click.Path())
@_nice_option
def compact_cmd(index_dir, nice) -> None:
    """Write INDEX_DIR anew as one base, merging the updates kept as deltas (a save does this
    by itself once they pass a tenth of the index; this does it now)."""
    from hopgraph.index.writes import compact_folder
    from hopgraph.priority import run_niced

    t0 = time.perf_counter()
    index, n, path = run_niced(nice, compact_folder, index_dir)
    click.echo(
        f"{path}: {n} delta(s) merged into a new base, generation {index.generation}, "
        f"{len(index)} passages; {time.perf_counter() - t0:.1f}s",
        err=True,
    )


@cli.command("add-parts")
@click.argument("index_dir", type=click.Path())
@click.option(
    "--parts", default=None,
    help="parts to add, comma-separated [default: those the default method needs]",
)  # fmt: skip
@click.option("--set", "sets", multiple=True, help=f"part option, part.option=value; {ASSIGN_HELP}")
@click.option("--no-detect", is_flag=True, help=NO_DETECT_HELP)
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
def add_parts_cmd(index_dir, parts, sets, no_detect, quiet) -> None:
    """Add the parts INDEX_DIR lacks (without --parts: those the default method needs).

    Only the missing parts are built (with the parts they are built from, if missing too);
    parts the index has are kept as they are. Options are detected from the corpus as by
    `hopgraph index`. The index is saved atomically under the writer lock, like `hopgraph
    add`; a server already serving the folder sees the new parts after a restart."""
    from hopgraph.defaults import DEFAULT_PARTS
    from hopgraph.index.writes import add_parts_to_folder

    options = split_part_options(parse_assignments(sets))
    wanted = _csv(parts) if parts is not None else list(DEFAULT_PARTS)
    if not wanted:
        raise click.BadParameter("name at least one part", param_hint="--parts")
    t0 = time.perf_counter()
    added = add_parts_to_folder(
        index_dir, wanted, options, detect=not no_detect, progress=not quiet, log=_echo_err
    )
    index = added.index
    if not added.built:
        click.echo(
            f"{index.path}: nothing to add, the index has {', '.join(wanted)} "
            f"(parts: {', '.join(index.parts)})",
            err=True,
        )
        return
    secs = time.perf_counter() - t0
    click.echo(
        f"{added.path}: added {', '.join(added.built)} in {secs:.1f}s "
        f"(parts now: {', '.join(index.parts)})",
        err=True,
    )


def _update_index(
    index_dir: str, *, add: list, delete: list[str], progress: bool, verify: bool = False
) -> None:
    from hopgraph.index.writes import update_folder

    t0 = time.perf_counter()
    new, path = update_folder(index_dir, add=add, delete=delete, progress=progress, verify=verify)
    secs = time.perf_counter() - t0
    parts = ", ".join(f"{n} {s:.2f}s" for n, s in new.update_seconds.items())
    kept = f"{len(new.deltas)} delta(s) on the base" if new.deltas else "written as a new base"
    click.echo(
        f"{path}: +{len(add)} -{len(set(delete))} passages, now {len(new)} "
        f"({parts}); {kept}; {secs:.1f}s with load and save",
        err=True,
    )


def _echo_err(line: str) -> None:
    click.echo(line, err=True)


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


@cli.command("eval")
@click.argument("dataset")
@click.option(
    "--method", "methods", default="default", show_default=True,
    help="comma-separated; 'default' is the recommended method",
)  # fmt: skip
@click.option("--set", "sets", multiple=True, help=f"[method.]param=value; {ASSIGN_HELP}")
@click.option("--index-set", "index_sets_cli", multiple=True, help="index part option part.opt=v")
@click.option("--preset", default=None, help="named preset of tuned settings (hopgraph presets)")
@click.option("--k", "ks", default="1,2,5,10", show_default=True, callback=lambda c, p, v: _ks(v))
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
@click.option("--data-dir", default=None, help="folder of named datasets (or $HOPGRAPH_DATA)")
@click.option("--index-dir", default=None, help=INDEX_DIR_HELP)
@click.option(
    "--index", "prebuilt", type=click.Path(), default=None,
    help="evaluate against this prebuilt index (hopgraph index), no build; it must hold "
    "DATASET's gold passages under the same ids",
)  # fmt: skip
@click.option("-q", "--quiet", is_flag=True, help="no progress bars")
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
    path = _resolve_dataset(dataset, data_dir)
    ds = load_dataset(path, split=split, include_incomplete=include_incomplete)
    from hopgraph.presets import index_assignments, load_preset

    chosen = load_preset(preset) if preset else None
    specs = method_specs(_csv(methods), parse_assignments(sets), chosen)
    if prebuilt is not None:
        from hopgraph.eval.prebuilt import load_prebuilt

        for reason, n in ds.skipped.items():
            click.echo(f"skipped {n} questions of {ds.name} ({reason})", err=True)
        index = load_prebuilt(prebuilt, ds, specs, limit, log=_echo_err)
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
    from hopgraph.defaults import DEFAULT_METHOD, describe_detected, detected_options

    options = split_part_options(parse_assignments(index_sets))
    detected = None
    if any(s.method == DEFAULT_METHOD for s in specs):
        options, detected = detected_options(ds.corpus, required_parts(specs), options)
        if detected:
            click.echo(describe_detected(detected), err=True)
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
            ds, path, required_parts(specs), options, index_dir, not quiet, detected, log=_echo_err
        )
        results = evaluate(index, ds, specs, ks=ks, depth=depth, limit=limit, progress=not quiet)
    _report(results, ks, per_query, json_out)


def _report(results, ks, per_query: bool, json_out: str | None) -> None:  # noqa: ANN001
    from hopgraph.eval.report import markdown_table, per_query_table, write_json

    click.echo(markdown_table(results, ks))
    if per_query:
        click.echo("\n" + per_query_table(results))
    if json_out:
        write_json(results, json_out, per_query=per_query)
        click.echo(f"wrote {json_out}", err=True)


def _check_prebuilt_options(pool_by, index_sets, preset, index_dir) -> None:  # noqa: ANN001
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


def training_options(f):  # noqa: ANN001, ANN201 - a click decorator
    """The options every training command shares."""
    for option in reversed(
        [
            click.option("--seed", default=0, show_default=True),
            click.option("--overwrite", is_flag=True, help="replace an existing model folder"),
            click.option("--data-dir", default=None, help=DATA_DIR_HELP),
            click.option("--index-dir", default=None, help=INDEX_DIR_HELP),
            click.option("-q", "--quiet", is_flag=True, help="no progress bars"),
        ]
    ):
        f = option(f)
    return f


def _training_sets(datasets, data_dir, max_questions):  # noqa: ANN001, ANN202
    """``(split, path, dataset)`` for each NAME_OR_PATH[:SPLIT] (default split: test)."""
    from hopgraph.corpus import load_dataset

    for spec in datasets:
        name, _, split = spec.partition(":")
        path = _resolve_dataset(name, data_dir)
        ds = load_dataset(path, split=split or "test")
        if max_questions:
            ds.questions = ds.questions[:max_questions]
        yield split or "test", path, ds


@cli.command("train-gat")
@click.argument("datasets", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(), help="model folder to write")
@click.option(
    "--set", "sets", multiple=True, help=f"GraphER parameter (n, alpha, w_*...); {ASSIGN_HELP}"
)
@click.option("--index-set", "index_sets", multiple=True, help="index part option part.opt=v")
@click.option("--pool-by", default=None, help=POOL_HELP)
@click.option(
    "--max-questions", type=int, default=None, help="at most N questions per dataset [default: all]"
)
@click.option("--epochs", default=60, show_default=True)
@click.option("--lr", default=1e-3, show_default=True)
@click.option("--weight-decay", default=1e-4, show_default=True, help="L2 regularisation")
@click.option("--batch-size", default=16, show_default=True)
@click.option("--val-fraction", default=0.2, show_default=True, help="questions held out")
@click.option("--patience", default=8, show_default=True, help="epochs without improvement")
@click.option("--hidden", default=64, show_default=True)
@click.option("--heads", default=4, show_default=True)
@click.option("--layers", default=5, show_default=True, help="GATv2 layers")
@click.option("--dropout", default=0.1, show_default=True)
@click.option("--no-message-passing", is_flag=True, help="GraphER-MLP ablation (§4.2)")
@click.option(
    "--residual", default=0.0, show_default=True,
    help="add a learnable multiple (starting here) of the GCS score to the output; 0 = paper",
)  # fmt: skip
@training_options
def train_gat_cmd(
    datasets, output, sets, index_sets, pool_by, max_questions, epochs, lr, weight_decay,
    batch_size, val_fraction, patience, hidden, heads, layers, dropout, no_message_passing,
    residual, seed, overwrite, data_dir, index_dir, quiet,
) -> None:  # fmt: skip
    """Train GraphER's graph attention ranker on DATASETS (each NAME_OR_PATH[:SPLIT]; use
    training questions only, never those you evaluate on). The candidate graphs use the
    grapher_gat parameters given with --set; evaluate with the same ones."""
    from dataclasses import asdict

    from hopgraph.cache import open_cached_index
    from hopgraph.config import make_options
    from hopgraph.eval.pools import pool_indexes
    from hopgraph.models.gat import save_ranker
    from hopgraph.retrieve.base import method_parts
    from hopgraph.retrieve.grapher import GraphERParams
    from hopgraph.training.gat import TrainConfig, graph_examples, model_card, train_gat

    params = make_options(GraphERParams, parse_assignments(sets), what="GraphER")
    config = TrainConfig(
        epochs=epochs, lr=lr, weight_decay=weight_decay, batch_size=batch_size,
        val_fraction=val_fraction, patience=patience, seed=seed, hidden=hidden, heads=heads,
        layers=layers, dropout=dropout, message_passing=not no_message_passing, residual=residual,
    )  # fmt: skip
    config.validate()  # before the (slow) candidate graphs are built
    parts = tuple(dict.fromkeys([*method_parts("grapher_gcs", asdict(params)), "dense"]))
    options = split_part_options(parse_assignments(index_sets))
    examples, sources = [], []
    for split, path, ds in _training_sets(datasets, data_dir, max_questions):
        pooled = pool_by and all(pool_by in p.metadata for p in ds.corpus)
        if pooled:
            pairs = list(pool_indexes(ds, pool_by, parts, options, not quiet))
        else:
            ix = open_cached_index(ds, path, parts, index_sets, index_dir, not quiet, log=_echo_err)
            pairs = [(ds, ix)]
        got, skipped = 0, 0
        for sub, ix in pairs:
            ex, sk = graph_examples(ix, sub, params, progress=not quiet and not pooled)
            examples += ex
            got, skipped = got + len(ex), skipped + sk
        sources.append({"dataset": ds.name, "split": split, "graphs": got, "skipped": skipped})
        click.echo(f"{ds.name}: {got} graphs ({skipped} without gold among candidates)", err=True)
    result = train_gat(examples, config, progress=not quiet)
    card = model_card(result, config, params, sources)
    save_ranker(result.model, output, card, overwrite=overwrite)
    best = card["best_validation"]
    click.echo(
        f"saved {output}: best epoch {result.best_epoch}, validation PR@10 "
        f"{best['val_pr@10']:.3f}, Recall@10 {best['val_recall@10']:.3f} (GCS alone: PR@10 "
        f"{result.gcs_validation['val_pr@10']:.3f}, Recall@10 "
        f"{result.gcs_validation['val_recall@10']:.3f})"
    )


@cli.command("train-reranker")
@click.argument("datasets", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(), help="model folder to write")
@click.option("--model", default=None, help="encoder to start from (default: bundled MiniLM)")
@click.option("--layers", default=2, show_default=True, help="keep the first N layers (0: all)")
@click.option("--max-length", default=128, show_default=True, help="tokens per (query, passage)")
@click.option("--epochs", default=2, show_default=True)
@click.option("--lr", default=1e-4, show_default=True)
@click.option("--dropout", default=0.0, show_default=True, help="dropout while training")
@click.option("--negatives", default=4, show_default=True, help="hard negatives per gold passage")
@click.option("--random-negatives", default=3, show_default=True, help="random ones per gold")
@click.option("--candidates", default=30, show_default=True, help="hard negatives: base top N")
@click.option("--base", default="hybrid", show_default=True, help="retriever for hard negatives")
@click.option("--groups-per-step", default=4, show_default=True, help="groups per optimiser step")
@click.option(
    "--distill", default=1.0, show_default=True,
    help="weight of distillation from the bi-encoder (dense part); 0 = labels only",
)  # fmt: skip
@click.option(
    "--max-questions", type=int, default=None, help="at most N questions per dataset [default: all]"
)
@click.option(
    "--synthetic", default=0, show_default=True, type=click.IntRange(min=0),
    help="also N synthetic questions made from each dataset's corpus (no LLM; see "
    "hopgraph.training.synthetic)",
)  # fmt: skip
@click.option("--val-fraction", default=0.1, show_default=True, help="questions held out")
@click.option(
    "--precision", default="auto", show_default=True, type=click.Choice(["auto", "bf16", "fp32"]),
    help="auto: bf16 autocast where the CPU has native bf16",
)  # fmt: skip
@training_options
def train_reranker_cmd(
    datasets, output, model, layers, max_length, epochs, lr, dropout, negatives, random_negatives,
    candidates, base,
    groups_per_step, distill, max_questions, synthetic, val_fraction, precision, seed, overwrite,
    data_dir, index_dir, quiet,
) -> None:  # fmt: skip
    """Fine-tune a cross-encoder reranker on DATASETS (each NAME_OR_PATH[:SPLIT], e.g.
    hotpotqa_train musique_train scifact:train; training questions only, never those you
    evaluate on), and on --synthetic questions made from their corpora. Validation uses real
    questions only. Writes a Hugging Face model folder with checkpoints/ of every epoch."""
    from hopgraph.cache import open_cached_index
    from hopgraph.models.embedder import DEFAULT_EMBEDDER
    from hopgraph.retrieve.base import method_parts
    from hopgraph.training.reranker import (
        RerankerConfig,
        model_card,
        rerank_examples,
        save_reranker,
        train_reranker,
    )
    from hopgraph.training.synthetic import synthetic_dataset

    config = RerankerConfig(
        model=model or DEFAULT_EMBEDDER, layers=layers, max_length=max_length, epochs=epochs,
        lr=lr, dropout=dropout, negatives=negatives, random_negatives=random_negatives,
        candidates=candidates, base=base,
        groups_per_step=groups_per_step, val_fraction=val_fraction, seed=seed, distill=distill,
        precision=precision,
    )  # fmt: skip
    config.validate()
    out = Path(output).expanduser()
    if out.exists() and not overwrite:
        raise click.UsageError(f"{out} exists; pass --overwrite to replace it")
    parts = tuple(dict.fromkeys([*method_parts(base), *(["dense"] if distill else [])]))
    examples, sources = [], []
    for split, path, ds in _training_sets(datasets, data_dir, max_questions):
        ix = open_cached_index(ds, path, parts, [], index_dir, not quiet, log=_echo_err)
        for sub in [ds, *([synthetic_dataset(ds, synthetic, seed=seed)] if synthetic else [])]:
            ex = rerank_examples(ix, sub, config, progress=not quiet)
            examples += ex
            sources.append({"dataset": sub.name, "split": split, "questions": len(ex)})
            click.echo(f"{sub.name}: {len(ex)} questions with gold passages", err=True)
    ckpt = out.parent / f"{out.name}.checkpoints"
    result = train_reranker(examples, config, checkpoints=ckpt, progress=not quiet)
    card = model_card(result, config, sources)
    save_reranker(result.model, result.tokenizer, out, card, overwrite=overwrite)
    best, base_val = card["best_validation"], card["base_validation"]
    click.echo(
        f"saved {out} (checkpoints in {ckpt}): best epoch {result.best_epoch}, validation "
        f"nDCG@10 {best['ndcg@10']:.3f} vs {base} {base_val['ndcg@10']:.3f}, Recall@10 "
        f"{best['recall@10']:.3f} vs {base_val['recall@10']:.3f}"
    )


@cli.command("export-reranker")
@click.argument("model")
@click.option("-o", "--output", required=True, type=click.Path(), help="folder to write")
@click.option("--fp32", is_flag=True, help="keep fp32 weights (default: int8)")
@click.option("--overwrite", is_flag=True, help="replace OUTPUT")
def export_reranker_cmd(model, output, fp32, overwrite) -> None:
    """Write cross-encoder MODEL (a folder from `hopgraph train-reranker`) as an ONNX folder
    that rerank, gar and fastinsight run without torch (model=OUTPUT); int8 by default."""
    from hopgraph.models.reranker_onnx import export_cross_encoder

    out = export_cross_encoder(model, output, int8=not fp32, overwrite=overwrite)
    size = sum(f.stat().st_size for f in out.iterdir()) / 1e6
    click.echo(f"wrote {out} ({size:.1f} MB)")


@cli.group("convert")
def convert_group() -> None:
    """Convert other benchmarks into unified-layout dataset folders (for eval and index)."""


def _skipped(skipped: dict[str, int]) -> str:
    total = sum(skipped.values())
    if not total:
        return "0 skipped"
    return f"{total} skipped (" + ", ".join(f"{k}: {n}" for k, n in skipped.items()) + ")"


@convert_group.command("tables")
@click.argument("src")
@click.argument("out", type=click.Path())
@click.option("--overwrite", is_flag=True, help="replace the dataset in a non-empty OUT")
@click.option("--data-dir", default=None, help="folder of named datasets (or $HOPGRAPH_DATA)")
def convert_tables_cmd(src, out, overwrite, data_dir) -> None:
    """Write a Spider or BIRD folder SRC (tables.json + dev.json) to OUT as a table-retrieval
    dataset: one passage per table, gold = the tables the gold SQL reads."""
    from hopgraph.corpus import tables_dataset, write_unified

    ds = tables_dataset(_resolve_dataset(src, data_dir))
    write_unified(ds, out, overwrite=overwrite)
    click.echo(
        f"wrote {out}: {len(ds.corpus)} passages, {len(ds.questions)} questions, "
        f"{_skipped(ds.skipped)}"
    )


@convert_group.command("chunks")
@click.argument("src")
@click.argument("out", type=click.Path())
@click.option("--split", default="test", show_default=True, help="qrels split -> questions.jsonl")
@click.option(
    "--chunk-words", type=click.IntRange(min=1), default=64, show_default=True,
    help="words per chunk",
)  # fmt: skip
@click.option(
    "--overlap", type=click.IntRange(min=0), default=0, show_default=True,
    help="words shared by consecutive chunks",
)  # fmt: skip
@click.option("--overwrite", is_flag=True, help="replace the dataset in a non-empty OUT")
@click.option("--data-dir", default=None, help="folder of named datasets (or $HOPGRAPH_DATA)")
def convert_chunks_cmd(src, out, split, chunk_words, overlap, overwrite, data_dir) -> None:
    """Write a BEIR folder SRC to OUT with every document cut into chunks of --chunk-words
    words; gold = every chunk of each relevant document. The --split questions go to
    questions.jsonl, those of qrels/train.tsv (if present) to questions_train.jsonl."""
    from hopgraph.corpus import chunked_dataset, write_unified

    if overlap >= chunk_words:
        raise click.BadParameter(
            f"must be smaller than --chunk-words ({chunk_words})", param_hint="--overlap"
        )
    path = _resolve_dataset(src, data_dir)
    ds = chunked_dataset(path, split=split, max_words=chunk_words, overlap=overlap)
    train = None  # read before writing anything, so bad train qrels leave OUT untouched
    if split != "train" and (path / "qrels" / "train.tsv").is_file():
        train = chunked_dataset(path, split="train", max_words=chunk_words, overlap=overlap)
    write_unified(ds, out, overwrite=overwrite)
    counts = [f"{len(ds.questions)} questions ({split})"]
    skipped = dict(ds.skipped)
    if train is not None:
        write_unified(train, out, overwrite=overwrite, questions_file="questions_train.jsonl")
        counts.append(f"{len(train.questions)} questions (train)")
        skipped.update({f"train {k}": n for k, n in train.skipped.items()})
    click.echo(f"wrote {out}: {len(ds.corpus)} passages, {', '.join(counts)}, {_skipped(skipped)}")


@cli.command("presets")
@click.argument("name", required=False)
def presets_cmd(name) -> None:
    """List the named presets, or show one."""
    from hopgraph.presets import list_presets, load_preset

    if name:
        click.echo(json.dumps(load_preset(name), indent=2))
        return
    for n in list_presets():
        click.echo(f"{n}: {load_preset(n).get('description', '')}")


@cli.command("info")
@click.argument("index_dir", type=click.Path())
def info_cmd(index_dir) -> None:
    """Show an index's parts, options and counts."""
    from hopgraph.index import Index

    click.echo(json.dumps(Index.load(index_dir).info(), indent=2))


@cli.command("methods")
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


@cli.command("demo")
@click.option(
    "--workdir", type=click.Path(), default=None,
    help="where to write the demo index [default: a temporary folder, removed at the end]",
)  # fmt: skip
@click.option(
    "--method", default="default", show_default=True, help="method shown for the questions"
)
def demo_cmd(workdir, method) -> None:
    """Index the built-in demo corpus, answer a few questions with the default method (or
    --method), and evaluate every method family on it."""
    from hopgraph.demo import run_demo

    run_demo(Path(workdir) if workdir else None, method, echo=click.echo)


@cli.command("serve")
@click.argument("index_dir", type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--max-query-chars", type=click.IntRange(min=1), default=2000, show_default=True,
    help="longest query (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-body-bytes", type=click.IntRange(min=1), default=10 * 1024 * 1024, show_default=True,
    help="largest request body (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-k", type=click.IntRange(min=1), default=1000, show_default=True,
    help="most passages per ranking (422 beyond)",
)  # fmt: skip
@click.option(
    "--max-batch", type=click.IntRange(min=1), default=64, show_default=True,
    help="most queries per /search/batch (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-add", type=click.IntRange(min=1), default=1000, show_default=True,
    help="most passages per add request (413 beyond)",
)  # fmt: skip
@click.option(
    "--max-search-seconds", type=click.FloatRange(0, 86400, min_open=True), default=30.0,
    show_default=True, help="a search answers 503 past this many seconds",
)  # fmt: skip
@click.option(
    "--set", "sets", multiple=True,
    help=f"fixed method parameter method.param=value (the only way to set model=); {ASSIGN_HELP}",
)  # fmt: skip
@click.option("--no-verify", is_flag=True, help="skip the checksums when loading the index")
@click.option(
    "--role", type=click.Choice(["auto", "writer", "reader"]), default="auto", show_default=True,
    help="writer: take INDEX_DIR's writer role (fail if taken); reader: never write; "
    "auto: writer if the role is free",
)  # fmt: skip
@click.option(
    "--reload-interval", type=click.FloatRange(0, 3600), default=1.0, show_default=True,
    help="seconds between checks for a generation another process committed (0: never)",
)  # fmt: skip
@click.option(
    "--token", envvar="HOPGRAPH_TOKEN", default=None, show_envvar=True,
    help="bearer token every write needs (prefer the environment variable: a command line is "
    "visible to other users); required to listen beyond loopback unless --role reader",
)  # fmt: skip
@click.option(
    "--protect-reads", is_flag=True,
    help="also require the token for searches and passages (all but GET /health)",
)  # fmt: skip
@click.option(
    "--advertise", default=None,
    help="the URL clients reach this server at, shown to readers' clients as the writer's "
    "[default: http://HOST:PORT]",
)  # fmt: skip
@click.option(
    "--encoder-sessions", type=click.IntRange(min=1), default=None,
    help="query encodes run at once, each on cores/sessions ONNX threads [default: the cores]",
)  # fmt: skip
@click.option(
    "--indexes-dir", type=click.Path(file_okay=False), default=None,
    help="also serve the named indexes in DIR's subfolders under /indexes/NAME/..., and create "
    "and drop them over HTTP (POST /indexes, DELETE /indexes/NAME); created if missing",
)  # fmt: skip
@click.option(
    "--max-indexes", type=click.IntRange(min=1), default=16, show_default=True,
    help="most named indexes served (409 beyond)",
)  # fmt: skip
@click.option(
    "--max-create", type=click.IntRange(min=1), default=10_000, show_default=True,
    help="most passages per POST /indexes (413 beyond)",
)  # fmt: skip
@click.option(
    "--writer-nice", type=click.IntRange(0, 19), default=None,
    help="CPU niceness of the threads that apply updates, compact and replay generations "
    "committed elsewhere (0 keeps the priority); searches keep theirs [default: 19]",
)  # fmt: skip
@click.option(
    "--log-level", default="info", show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)  # fmt: skip
def serve_cmd(
    index_dir, host, port, max_query_chars, max_body_bytes, max_k, max_batch, max_add,
    max_search_seconds, sets, no_verify, role, reload_interval, token, protect_reads, advertise,
    encoder_sessions, writer_nice, log_level, indexes_dir, max_indexes, max_create,
) -> None:  # fmt: skip
    """Serve INDEX_DIR over HTTP: search, add and delete passages (JSON; API at /docs).

    Several servers may serve one folder (one machine, or shared storage): the first takes its
    writer role and takes additions and deletions, each saved atomically over INDEX_DIR as a
    new generation; the others only read, answer writes 409 naming the writer, and serve each
    new generation within --reload-interval seconds, without a restart (docs/serve.md: readers
    behind a load balancer). `hopgraph add`/`delete` on a served folder take turns with the
    writer, and every server picks their generation up the same way.

    With --indexes-dir DIR it also serves named indexes, DIR/NAME, each like INDEX_DIR, under
    /indexes/NAME/...; clients create them from passages and drop them (docs/serve.md: several
    indexes)."""
    try:
        import uvicorn

        from hopgraph.serve import Settings, create_app
    except ImportError as exc:
        raise HopgraphError(
            f"hopgraph serve needs the serve extra ({exc.name} is missing): "
            "pip install 'hopgraph[serve]'"
        ) from None

    from hopgraph.serve.auth import is_loopback

    if not token and role != "reader" and not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host} without a token: anyone who reaches the port could "
            "add and delete passages. Set HOPGRAPH_TOKEN (make one with: python -c 'import "
            "secrets; print(secrets.token_urlsafe(32))') and send `Authorization: Bearer "
            "<token>` with writes; or listen on 127.0.0.1; or serve read-only (--role reader)"
        )
    from hopgraph.serve.process import configure_serving

    configure_serving(encoder_sessions)  # before any model loads: threads, malloc arenas
    method_params: dict[str, dict[str, str]] = {}
    for key, value in parse_assignments(sets).items():
        method, dot, name = key.partition(".")
        if not dot or not name:
            raise ConfigError(f"server parameters are written method.param=value, got {key!r}")
        method_params.setdefault(method, {})[name] = value
    settings = Settings(
        max_query_chars=max_query_chars, max_body_bytes=max_body_bytes, max_k=max_k,
        max_batch=max_batch, max_add=max_add, max_search_seconds=max_search_seconds,
        verify=not no_verify, method_params=method_params,
        role=role, reload_interval=reload_interval, address=advertise or f"http://{host}:{port}",
        token=token or "", protect_reads=protect_reads,
        indexes_dir=indexes_dir or "", max_indexes=max_indexes, max_create=max_create,
        **({} if writer_nice is None else {"writer_nice": writer_nice}),
    )  # fmt: skip
    app = create_app(index_dir, settings)
    served = app.state.served.snapshot.index
    click.echo(
        f"serving {served.path} ({len(served)} passages; parts: {', '.join(served.parts)}) "
        f"on http://{host}:{port} (API docs at /docs)",
        err=True,
    )
    if app.state.served.role == "reader":
        click.echo(f"read-only: the writer is {app.state.served.writer()}", err=True)
    if app.state.indexes is not None:
        named = app.state.indexes.names()
        click.echo(
            f"named indexes in {app.state.indexes.root} (/indexes/NAME/...): "
            + (", ".join(named) if named else "none yet"),
            err=True,
        )
    from hopgraph.retrieve.base import DEFAULT_METHOD, default_choice

    choice = default_choice(served)
    if choice.missing:  # searches without a method fall back until the parts are added
        uses = f"use {choice.method!r}" if choice.fell_back else "fail"
        click.echo(
            f"warning: searches without a method {uses}: the default, {DEFAULT_METHOD!r}, needs "
            f"the {', '.join(choice.missing)} part{'s' if len(choice.missing) > 1 else ''}; "
            f"add with `{choice.command}` and restart the server",
            err=True,
        )
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)  # our log lines like uvicorn's
    log_config["loggers"]["hopgraph"] = {"handlers": ["default"], "level": log_level.upper()}
    uvicorn.run(app, host=host, port=port, log_level=log_level, log_config=log_config)


@cli.command("mcp")
@click.argument("index_dir", type=click.Path())
@click.option("--method", default="default", show_default=True, help=METHOD_HELP)
@click.option("--set", "sets", multiple=True, help=f"parameter of --method; {ASSIGN_HELP}")
def mcp_cmd(index_dir, method, sets) -> None:
    """Serve INDEX_DIR to AI agents over the Model Context Protocol on stdin/stdout: the tools
    search (with --method unless a call names another) and get_passage; read-only
    (docs/mcp.md)."""
    try:
        from hopgraph.mcp_server import run_stdio
    except ImportError as exc:
        raise HopgraphError(
            f"hopgraph mcp needs the mcp extra, mcp 2.x ({exc.name} is missing): "
            "pip install 'hopgraph[mcp]'"
        ) from None
    run_stdio(index_dir, method, parse_assignments(sets))


def __getattr__(name: str) -> Any:
    """Names that moved to the library, still importable from here for older callers."""
    if name == "method_specs":
        from hopgraph.eval.specs import method_specs

        return method_specs
    if name == "open_cached_index":
        from hopgraph.cache import open_cached_index

        return open_cached_index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except HopgraphError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
