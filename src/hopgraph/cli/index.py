"""Build and inspect indexes: ``hopgraph index`` (a corpus into a new index folder), ``add-parts``
(the parts an index lacks) and ``info``."""

from __future__ import annotations

import json
import sys
import time

import click

from hopgraph.cli.common import (
    ASSIGN_HELP,
    CHUNK_WORDS_HELP,
    NO_DETECT_HELP,
    data_dir_option,
    echo_err,
    quiet_option,
    resolve_dataset,
    split_csv,
)
from hopgraph.config import parse_assignments
from hopgraph.index.staged import STAGED_MIN_PASSAGES
from hopgraph.index.store import split_part_options
from hopgraph.index.streaming import DEFAULT_BATCH


@click.command("index")
@click.argument("corpus")
@click.option("-o", "--output", required=True, type=click.Path(), help="index folder to write")
@click.option(
    "--parts", default=None,
    help="index parts to build, comma-separated [default: those the default method needs]",
)  # fmt: skip
@click.option(
    "--set",
    "sets",
    multiple=True,
    help=f"part option, part.option=value (language=xx for sparse.language); {ASSIGN_HELP}",
)
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
@click.option(
    "--skip-bad", is_flag=True,
    help="skip (and count, by file and line) the passages of a JSONL corpus whose text is "
    "empty or not UTF-8, instead of stopping at the first",
)  # fmt: skip
@click.option(
    "--staged", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
    help="save the index searchable without its passage vectors first (sparse, entities), "
    "then encode them and commit the complete index as its next generation; auto: with the "
    f"dense part, from {STAGED_MIN_PASSAGES:,} passages, into a folder without an index",
)  # fmt: skip
@data_dir_option
@quiet_option
def index_cmd(
    corpus, output, parts, sets, no_detect, chunk_words, fmt, batch_size, resume, force, engine,
    address, workers, cpus_per_worker, skip_bad, staged, data_dir, quiet,
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

    A large build (--staged) is searchable in minutes: OUTPUT is written as soon as the
    sparse and entity parts are merged; searches without a method use the default without
    passage vectors, and writes (add, delete, compact, add-parts) are refused. The vectors
    are then encoded batch by batch (a stopped build continues with --resume, never redoing
    the first stage) and the complete index replaces it as its next generation (a server
    following OUTPUT loads it). hopgraph info shows the stage and how many vectors are done.

    With --engine ray the batches' per-passage work (tokeniser, encoder, NER) runs as Ray Data
    map_batches on a Ray cluster (--address; a local one by default); this process reads the
    corpus, writes the segments it gets back and merges them, as a local build does."""
    from hopgraph.index.streaming import EngineOptions, build_index

    if engine == "local" and (address or workers):
        raise click.BadParameter("--address and --workers need --engine ray", param_hint="--engine")

    options = split_part_options(parse_assignments(sets))
    names = split_csv(parts) if parts is not None else None
    if names is not None and not names:
        raise click.BadParameter("name at least one part", param_hint="--parts")
    t0 = time.perf_counter()
    try:
        index = build_index(
            resolve_dataset(corpus, data_dir),
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
            log=echo_err,
            engine=EngineOptions(engine, address, workers, cpus_per_worker),
            skip_bad=skip_bad,
            staged=staged,
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


@click.command("add-parts")
@click.argument("index_dir", type=click.Path())
@click.option(
    "--parts", default=None,
    help="parts to add, comma-separated [default: those the default method needs]",
)  # fmt: skip
@click.option(
    "--set",
    "sets",
    multiple=True,
    help=f"part option, part.option=value (language=xx for sparse.language); {ASSIGN_HELP}",
)
@click.option("--no-detect", is_flag=True, help=NO_DETECT_HELP)
@quiet_option
def add_parts_cmd(index_dir, parts, sets, no_detect, quiet) -> None:
    """Add the parts INDEX_DIR lacks (without --parts: those the default method needs).

    Only the missing parts are built (with the parts they are built from, if missing too);
    parts the index has are kept as they are. Options are detected from the corpus as by
    `hopgraph index`. The index is saved atomically under the writer lock, like `hopgraph
    add`; a server already serving the folder sees the new parts after a restart."""
    from hopgraph.defaults import DEFAULT_PARTS
    from hopgraph.index.writes import add_parts_to_folder

    options = split_part_options(parse_assignments(sets))
    wanted = split_csv(parts) if parts is not None else list(DEFAULT_PARTS)
    if not wanted:
        raise click.BadParameter("name at least one part", param_hint="--parts")
    t0 = time.perf_counter()
    added = add_parts_to_folder(
        index_dir, wanted, options, detect=not no_detect, progress=not quiet, log=echo_err
    )
    index = added.index
    if added.path is None:  # the index had them all: nothing built, nothing saved
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


@click.command("info")
@click.argument("index_dir", type=click.Path())
def info_cmd(index_dir) -> None:
    """Show an index's parts, options and counts (JSON), and its build stage: under `build`,
    and on stderr while a staged build is encoding its passage vectors (how many are done)."""
    from hopgraph.index import Index
    from hopgraph.index.staged import build_stage, describe_stage

    index = Index.load(index_dir)
    stage = build_stage(index_dir)
    click.echo(json.dumps({**index.info(), "build": stage}, indent=2))
    if stage["stage"] != "complete":
        echo_err(describe_stage(stage, index.path))
