"""The ``hopgraph`` command line: index, add-parts, search, eval, add, delete, convert, info,
methods, demo, serve, mcp (and the training commands).

Each command lives in the module of its group and is a thin layer over the library:

- :mod:`~hopgraph.cli.index`: ``index``, ``add-parts``, ``info`` (build and inspect indexes)
- :mod:`~hopgraph.cli.update`: ``add``, ``delete``, ``compact`` (change an index in place)
- :mod:`~hopgraph.cli.search`: ``search``, ``methods``
- :mod:`~hopgraph.cli.evaluation`: ``eval``, ``presets``
- :mod:`~hopgraph.cli.train`: ``train-gat``, ``train-reranker``, ``export-reranker``
- :mod:`~hopgraph.cli.convert`: ``convert tables``, ``convert chunks``
- :mod:`~hopgraph.cli.serve`: ``serve``, ``mcp``
- :mod:`~hopgraph.cli.demo`: ``demo``

and :mod:`~hopgraph.cli.common` holds what they share (help texts, options, argument parsing).
This module assembles the ``cli`` group and runs it (:func:`main`, the console script).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from hopgraph.cli.convert import convert_group
from hopgraph.cli.demo import demo_cmd
from hopgraph.cli.evaluation import eval_cmd, presets_cmd
from hopgraph.cli.index import add_parts_cmd, index_cmd, info_cmd
from hopgraph.cli.search import methods_cmd, search_cmd
from hopgraph.cli.serve import mcp_cmd, serve_cmd
from hopgraph.cli.train import export_reranker_cmd, train_gat_cmd, train_reranker_cmd
from hopgraph.cli.update import add_cmd, compact_cmd, delete_cmd
from hopgraph.errors import HopgraphError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hopgraph")
def cli() -> None:
    """Multi-hop retrieval for RAG without an LLM at query time."""


for _command in (
    index_cmd, search_cmd, add_cmd, delete_cmd, compact_cmd, add_parts_cmd, eval_cmd,
    train_gat_cmd, train_reranker_cmd, export_reranker_cmd, convert_group, presets_cmd, info_cmd,
    methods_cmd, demo_cmd, serve_cmd, mcp_cmd,
):  # fmt: skip
    cli.add_command(_command)


def main() -> None:
    """Run the command line (the ``hopgraph`` console script): usage errors exit 2 with click's
    message, library errors exit 2 with ``error: ...``, Ctrl-C exits 130."""
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


def __getattr__(name: str) -> Any:
    """Names that moved to the library, still importable from here for older callers."""
    if name == "method_specs":
        from hopgraph.eval.specs import method_specs

        return method_specs
    if name == "open_cached_index":
        from hopgraph.cache import open_cached_index

        return open_cached_index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
