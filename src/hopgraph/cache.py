"""Where ``hopgraph eval`` keeps the indexes it builds, keyed by corpus files and index options."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from hopgraph.index.manifest import FORMAT_VERSION


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
