"""numba's compiler for the few loops that numpy cannot vectorise well (PPR pushes, BM25
accumulation, top-k selection over a million rows), with the plain Python function as the
fallback, which gives the same numbers. numba is the ``large`` extra (llvmlite and numba are 210
MB of a 780 MB install, issue 62): without it, the searches that would call a kernel take their
numpy paths instead (a few milliseconds slower from :data:`LARGE` rows on, the same results), and
only a kernel asked for by name (``ppr=local`` or ``push``) runs the Python loop.

Compiled functions are cached on disk (``cache=True``), so a process pays the compile once per
machine, and release the GIL (``nogil=True``). numba itself is imported, and a function compiled
(or loaded from the cache), on the function's first call only: importing numba and loading a
cached kernel take about a second and 130 MB in a fresh process, which a search of a small index,
where every array is shorter than :data:`LARGE`, never needs (issue 62)."""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

LARGE = 1 << 16
"""Arrays at least this long take the compiled paths where numpy's would cost milliseconds;
shorter ones keep numpy's (no compile or cache load in a small process)."""

_LOCK = threading.Lock()


@functools.cache
def has_numba() -> bool:
    """Whether numba is installed (found without importing it; looked up once, as the searches
    of large arrays ask on every call)."""
    return importlib.util.find_spec("numba") is not None


def compiled(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` compiled by numba where it is installed, else ``fn`` itself; the compile (or the
    load from numba's cache) happens on the first call."""
    if not has_numba():  # the plain function (hopgraph without its ``large`` extra)
        return fn
    kernel: list[Callable[..., Any]] = []

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        if not kernel:
            with _LOCK:
                if not kernel:
                    from numba import njit

                    kernel.append(njit(cache=True, nogil=True)(fn))
        return kernel[0](*args)

    call.py_func = fn  # type: ignore[attr-defined]  # as numba's dispatchers name it
    return call


def import_bm25s() -> ModuleType:
    """bm25s, imported without numba unless numba is already loaded. bm25s imports numba at
    its own import when it is installed, for backends hopgraph does not use (its saved indexes
    say ``backend: numpy``; hopgraph sums postings with numpy, or with its own kernels above
    :data:`LARGE`, which import numba when first called); numba would otherwise cost a search
    process about 0.2 s and 58 MB (issue 62). numba imports as usual afterwards."""
    if "bm25s" in sys.modules:
        return sys.modules["bm25s"]
    hide = "numba" not in sys.modules
    if hide:
        sys.modules["numba"] = None  # type: ignore[assignment]  # makes `import numba` fail
    try:
        import bm25s
        import bm25s.scoring  # noqa: F401  # also tries numba at its import
    finally:
        if hide and sys.modules.get("numba", 0) is None:
            del sys.modules["numba"]
    return bm25s
