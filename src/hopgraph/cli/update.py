"""Change an index in place: ``hopgraph add``, ``delete`` and ``compact``. Each runs under the
folder's writer lock (a server serving it takes turns with them) at a lowered CPU priority
(``--nice``), and saves atomically."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from hopgraph.cli.common import CHUNK_WORDS_HELP, quiet_option

if TYPE_CHECKING:
    from hopgraph.corpus import Passage

F = TypeVar("F", bound=Callable[..., object])

_NICE_HELP = (
    "CPU niceness of this update (0-19; 0 keeps the priority): searches served on the same "
    "cores keep their latency meanwhile, and on an idle machine the update takes as long"
)


_VERIFY_HELP = (
    "check every file's checksum before the update (slow on a large index: the whole base is "
    "read); without it sizes are checked, and the checksums are checked when a save writes a "
    "new base from it"
)


def _verify_option(f: F) -> F:
    return click.option("--verify", is_flag=True, help=_VERIFY_HELP)(f)


def _nice_option(f: F) -> F:
    from hopgraph.priority import WRITER_NICE  # the commands run their work with run_niced

    return click.option(
        "--nice", type=click.IntRange(0, 19), default=WRITER_NICE, show_default=True,
        help=_NICE_HELP,
    )(f)  # fmt: skip


@click.command("add")
@click.argument("index_dir", type=click.Path())
@click.argument("passages")
@click.option("--chunk-words", type=click.IntRange(min=1), default=None, help=CHUNK_WORDS_HELP)
@click.option("--format", "fmt", default="auto", show_default=True, help="passages file format")
@quiet_option
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


@click.command("delete")
@click.argument("index_dir", type=click.Path())
@click.argument("ids", nargs=-1)
@click.option("--ids-file", type=click.Path(exists=True), help="a file of ids, one a line")
@quiet_option
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


@click.command("compact")
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


def _update_index(
    index_dir: str, *, add: list[Passage], delete: list[str], progress: bool, verify: bool = False
) -> None:
    """Apply the update under the folder's writer lock and say what it did (stderr)."""
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
