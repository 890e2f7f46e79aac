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
This module assembles the ``cli`` group and runs it (:func:`main`, the console script). A
command's module is imported only when that command runs (or ``--help`` lists them all), so
``hopgraph search`` does not pay for the imports of evaluation, training or serving (issue 62).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from hopgraph.errors import HopgraphError

COMMANDS: dict[str, tuple[str, str]] = {
    "index": ("index", "index_cmd"),
    "search": ("search", "search_cmd"),
    "add": ("update", "add_cmd"),
    "delete": ("update", "delete_cmd"),
    "compact": ("update", "compact_cmd"),
    "add-parts": ("index", "add_parts_cmd"),
    "eval": ("evaluation", "eval_cmd"),
    "train-gat": ("train", "train_gat_cmd"),
    "train-reranker": ("train", "train_reranker_cmd"),
    "export-reranker": ("train", "export_reranker_cmd"),
    "convert": ("convert", "convert_group"),
    "presets": ("evaluation", "presets_cmd"),
    "info": ("index", "info_cmd"),
    "methods": ("search", "methods_cmd"),
    "demo": ("demo", "demo_cmd"),
    "serve": ("serve", "serve_cmd"),
    "mcp": ("serve", "mcp_cmd"),
}
"""Each command's module (under ``hopgraph.cli``) and the name of its click command there."""


class LazyGroup(click.Group):
    """A click group whose commands are imported from :data:`COMMANDS` when first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name]
            command = getattr(importlib.import_module(f"hopgraph.cli.{module}"), attr)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hopgraph")
def cli() -> None:
    """Multi-hop retrieval for RAG without an LLM at query time."""


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
