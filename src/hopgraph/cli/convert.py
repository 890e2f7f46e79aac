"""Convert other benchmarks into unified-layout dataset folders: ``hopgraph convert tables``
(Spider, BIRD) and ``hopgraph convert chunks`` (BEIR, cut into chunks)."""

from __future__ import annotations

import click

from hopgraph.cli.common import data_dir_option, resolve_dataset


@click.group("convert")
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
@data_dir_option
def convert_tables_cmd(src, out, overwrite, data_dir) -> None:
    """Write a Spider or BIRD folder SRC (tables.json + dev.json) to OUT as a table-retrieval
    dataset: one passage per table, gold = the tables the gold SQL reads."""
    from hopgraph.corpus import tables_dataset, write_unified

    ds = tables_dataset(resolve_dataset(src, data_dir))
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
@data_dir_option
def convert_chunks_cmd(src, out, split, chunk_words, overlap, overwrite, data_dir) -> None:
    """Write a BEIR folder SRC to OUT with every document cut into chunks of --chunk-words
    words; gold = every chunk of each relevant document. The --split questions go to
    questions.jsonl, those of qrels/train.tsv (if present) to questions_train.jsonl."""
    from hopgraph.corpus import chunked_dataset, write_unified

    if overlap >= chunk_words:
        raise click.BadParameter(
            f"must be smaller than --chunk-words ({chunk_words})", param_hint="--overlap"
        )
    path = resolve_dataset(src, data_dir)
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
