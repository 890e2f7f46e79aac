"""Train models on datasets' questions (``hopgraph train-gat``, ``train-reranker``) and export a
trained reranker to ONNX (``hopgraph export-reranker``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from hopgraph.cli.common import (
    ASSIGN_HELP,
    INDEX_DIR_HELP,
    POOL_HELP,
    data_dir_option,
    echo_err,
    quiet_option,
    resolve_dataset,
)
from hopgraph.config import parse_assignments
from hopgraph.index.store import split_part_options

if TYPE_CHECKING:
    from hopgraph.corpus import Dataset

F = TypeVar("F", bound=Callable[..., object])


def training_options(f: F) -> F:
    """The options every training command shares."""
    for option in reversed(
        [
            click.option("--seed", default=0, show_default=True),
            click.option("--overwrite", is_flag=True, help="replace an existing model folder"),
            data_dir_option,
            click.option("--index-dir", default=None, help=INDEX_DIR_HELP),
            quiet_option,
        ]
    ):
        f = option(f)
    return f


def _training_sets(
    datasets: Iterable[str], data_dir: str | None, max_questions: int | None
) -> Iterator[tuple[str, Path, Dataset]]:
    """``(split, path, dataset)`` for each NAME_OR_PATH[:SPLIT] (default split: test)."""
    from hopgraph.corpus import load_dataset

    for spec in datasets:
        name, _, split = spec.partition(":")
        path = resolve_dataset(name, data_dir)
        ds = load_dataset(path, split=split or "test")
        if max_questions:
            ds.questions = ds.questions[:max_questions]
        yield split or "test", path, ds


@click.command("train-gat")
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
            ix = open_cached_index(ds, path, parts, index_sets, index_dir, not quiet, log=echo_err)
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


@click.command("train-reranker")
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
        ix = open_cached_index(ds, path, parts, [], index_dir, not quiet, log=echo_err)
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


@click.command("export-reranker")
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
