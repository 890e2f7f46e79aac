"""numba's compiler for the few loops that numpy cannot vectorise well (PPR pushes, BM25
accumulation, top-k selection over a million rows), with the plain Python function as the
fallback: numba is a dependency, the fallback is a safety net that gives the same numbers.

Compiled functions are cached on disk (``cache=True``), so a process pays the compile once per
machine, and release the GIL (``nogil=True``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a dependency
    njit = None

LARGE = 1 << 16
"""Arrays at least this long take the compiled paths where numpy's would cost milliseconds;
shorter ones keep numpy's (no compile or cache load in a small process)."""


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled by numba where it is installed, else ``fn`` itself."""
    return njit(cache=True, nogil=True)(fn) if njit is not None else fn
