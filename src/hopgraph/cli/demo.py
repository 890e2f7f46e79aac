"""``hopgraph demo``: the built-in demo corpus indexed, searched and evaluated."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("demo")
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
