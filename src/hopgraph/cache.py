"""Where ``hopgraph eval`` keeps the indexes it builds, keyed by corpus files and index options,
and the loading (building what is missing) of such a cached index."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hopgraph.config import parse_assignments
from hopgraph.corpus import Dataset
from hopgraph.errors import HopgraphError
from hopgraph.index import Index, split_part_options
from hopgraph.index.manifest import FORMAT_VERSION
from hopgraph.index.store import PartOptions


def cache_root() -> Path:
    env = os.environ.get("HOPGRAPH_CACHE")
    if env:  # absolute: the same folder whatever the working folder of a later process
        return Path(env).expanduser().absolute()
    return Path.home() / ".cache" / "hopgraph" / "indexes"


def _fingerprint(path: Path) -> list[Any]:
    """Content hashes, not modification times: a copied or re-deployed corpus with the same
    bytes keeps its cached index (hashing a few MB takes milliseconds)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    out: list[Any] = []
    for f in files:
        h = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):  # noqa: B023
                h.update(block)
        rel = f.name if f == path else f.relative_to(path).as_posix()
        out.append([rel, h.hexdigest()])
    return out


def index_cache_dir(
    dataset_path: Path,
    name: str,
    corpus_options: dict[str, Any] | None = None,
    root: Path | None = None,
) -> Path:
    """A folder per corpus: its name changes whenever the corpus files (or the options that
    change how they are read, such as chunking) change. Part options are checked against the
    manifest instead, so changing one part's options rebuilds only that part."""
    corpus = (
        dataset_path / "corpus.jsonl" if (dataset_path / "corpus.jsonl").exists() else dataset_path
    )
    key = json.dumps(
        [FORMAT_VERSION, _fingerprint(corpus), corpus_options or {}], sort_keys=True, default=str
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return (root or cache_root()) / f"{name}-{digest}"


def open_cached_index(
    ds: Dataset,
    path: Path,
    parts: Iterable[str],
    index_sets: Iterable[str] | PartOptions,
    index_dir: str | Path | None,
    progress: bool,
    detected: dict[str, Any] | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> Index:
    """Load the cached index for this dataset and options, building (and saving) missing parts.

    ``index_sets``: ``part.option=value`` strings, or already split options (a dict);
    ``detected``: the detection behind those options, recorded when parts are built. ``log``:
    a function given a line of text when the cached index is rebuilt or saved [default: stderr].
    """
    say = log or _stderr
    if isinstance(index_sets, dict):
        options = index_sets
    else:
        options = split_part_options(parse_assignments(list(index_sets)))
    folder = index_cache_dir(path, ds.name, root=Path(index_dir) if index_dir else None)
    index = None
    if (folder / "manifest.json").exists():
        try:
            index = Index.load(folder)
        except HopgraphError as exc:
            say(f"cached index unusable ({exc}); rebuilding")
    if index is None:
        index = Index(ds.corpus)
    if index.add_parts(parts, options, progress=progress, rebuild_changed=True):
        if detected is not None:
            index.detected = detected
        index.save(folder)
        say(f"index saved to {folder}")
    return index


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)
