"""What the command modules share: help texts, the options several commands take, and the
parsing of argument values (comma lists, k lists, dataset names, JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from hopgraph.errors import HopgraphError

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

# options several commands take, word for word (each use makes an option of its own)
quiet_option = click.option("-q", "--quiet", is_flag=True, help="no progress bars")
data_dir_option = click.option("--data-dir", default=None, help=DATA_DIR_HELP)


def split_csv(value: str) -> list[str]:
    """The non-empty items of a comma-separated value, stripped."""
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_ks(value: str) -> list[int]:
    """Comma-separated cut-offs, each >= 1 (``--k 1,2,5,10``); a usage error otherwise."""
    try:
        ks = [int(v) for v in split_csv(value)]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not ks or min(ks) < 1:
        raise click.BadParameter("every k must be >= 1")
    return ks


def resolve_dataset(dataset: str, data_dir: str | None) -> Path:
    """A path, or a dataset name looked up under --data-dir / $HOPGRAPH_DATA."""
    p = Path(dataset).expanduser()
    if p.exists():
        return p
    root = data_dir or os.environ.get("HOPGRAPH_DATA")
    if root and (Path(root) / dataset).exists():
        return Path(root) / dataset
    hint = f" (looked in {root})" if root else " (set --data-dir or HOPGRAPH_DATA to use names)"
    raise HopgraphError(f"no dataset at {dataset!r}{hint}")


def parse_json_option(value: str | None, name: str) -> Any:
    """A JSON-valued option, or a usage error naming it."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint=name) from None


def echo_err(line: str) -> None:
    """Print a line to stderr: the ``log`` the library's long operations are given."""
    click.echo(line, err=True)
