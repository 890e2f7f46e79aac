"""The per-passage work of one batch of a streaming build: each part's segment.

The same on every engine: :mod:`hopgraph.index.streaming` runs it in this process,
:mod:`hopgraph.index.ray_engine` on the actors of a Ray cluster; neither imports the other for it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hopgraph.corpus import Corpus
from hopgraph.index.registry import part_class


def write_batch(
    batch: Corpus,
    names: list[str],
    options: dict[str, Any],
    contexts: dict[str, Any],
    dest: Path,
    on_progress: Callable[[str, int], None] | None = None,
) -> dict[str, float]:
    """The per-passage work of one batch: each part's segment in ``dest/<part>/`` (the same
    on every engine); returns the seconds each part took. ``on_progress(part, done)``: how
    many of the batch's passages ``part`` has done, as the part reports them and when it ends."""
    secs: dict[str, float] = {}
    for name in names:
        (dest / name).mkdir()
        t0 = time.perf_counter()
        report = None if on_progress is None else functools.partial(on_progress, name)
        part_class(name).write_segment(
            batch, options[name], dest / name, contexts.get(name), on_progress=report
        )
        secs[name] = time.perf_counter() - t0
        if on_progress is not None:
            on_progress(name, len(batch))
    return secs
