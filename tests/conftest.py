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
