"""Data shipped with the package: the built-in demo corpus."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def demo_dataset_path() -> Path:
    """Folder of the demo dataset (unified layout: corpus.jsonl + questions.jsonl)."""
    return Path(str(files("hopgraph.data") / "demo"))
