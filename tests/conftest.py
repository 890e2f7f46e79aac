"""Shared fixtures: where the benchmark data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def data_root() -> Path:
    """``HOPGRAPH_DATA`` if set, else ``../shared/data`` next to the project root."""
    env = os.environ.get("HOPGRAPH_DATA")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The benchmark data folder; skips the test when it is absent."""
    root = data_root()
    if not root.is_dir():
        pytest.skip(f"benchmark data not found at {root} (set HOPGRAPH_DATA)")
    return root


@pytest.fixture(scope="session")
def demo_dataset():
    from hopgraph.corpus import load_dataset
    from hopgraph.data import demo_dataset_path

    return load_dataset(demo_dataset_path())


@pytest.fixture(scope="session")
def demo_index_dir(tmp_path_factory, demo_dataset) -> Path:
    """The demo corpus indexed once per test session (sparse + dense with HNSW), saved."""
    from hopgraph.index import Index

    folder = tmp_path_factory.mktemp("demo") / "index"
    Index.build(
        demo_dataset.corpus, ["sparse", "dense"], {"dense": {"hnsw": True}}, progress=False
    ).save(folder)
    return folder


@pytest.fixture(scope="session")
def default_index(demo_dataset):
    """The demo corpus with the default parts and the settings detected from it, built once
    per test session (in memory; tests must not change it)."""
    from hopgraph.defaults import default_build
    from hopgraph.index import Index

    parts, options, detected = default_build(demo_dataset.corpus)
    index = Index.build(demo_dataset.corpus, parts, options, progress=False)
    index.detected = detected
    return index


@pytest.fixture(scope="session")
def demo_index(demo_index_dir):
    from hopgraph.index import Index

    return Index.load(demo_index_dir)
