"""Process-wide settings a serving process makes for itself before it loads any model.

On 2 cores, 16 clients otherwise oversubscribe the CPU: each ONNX session runs as many
intra-op threads as there are cores, OpenBLAS keeps its own spinning threads, and glibc gives
every thread that allocates its own malloc arena, so RSS grows with the number of threads
(docs/benchmarks.md: 625–655 MB under 8 clients with updates, 385–425 MB with
MALLOC_ARENA_MAX=2 set by hand).

Memory (docs/notes/serving.md, "The default method under load, with updates": the HotpotQA
default index under 8–16 clients and updates, 552–605 MB before these, 432–461 MB after):

- lightgbm is not imported at all: the rankers' trees are scored in numpy
  (:mod:`hopgraph.models.trees`, issue 62), so neither it nor the scikit-learn and pandas it
  loads (~130 MB) are resident;
- ONNX Runtime runs without its CPU memory arena (``$HOPGRAPH_ORT_ARENA=0``), which kept the
  largest activations any encode needed for good: the same vectors bit for bit, the same
  speed for one query;
- :func:`release_memory` (glibc's ``malloc_trim``) gives the pages an update freed back to the
  system after each new generation is published.

`hopgraph serve` calls :func:`configure_serving` first; what it set is reported by
``GET /info`` under ``process``.
"""

from __future__ import annotations

import os
from typing import Any

from hopgraph import heap

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
_CONFIGURED: dict[str, Any] = {}
_TRIM: Any = None  # glibc's malloc_trim once configure_serving turned trimming on


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def configure_serving(
    encoder_sessions: int | None = None, arena_max: int = 2, trim: bool = True
) -> dict[str, Any]:
    """Pin thread counts and bound memory for a serving process: up to ``encoder_sessions``
    (default: the cores) query encodes at once, each ONNX run on cores / sessions threads,
    without ONNX Runtime's memory arena; BLAS on one thread; at most ``arena_max`` malloc
    arenas (glibc); with ``trim``,
    :func:`release_memory` returns malloc's free pages to the system (the server calls it
    after each new generation is published). Settings already in the environment win.
    Returns what was set."""
    n = cores()
    sessions = max(1, encoder_sessions or n)
    os.environ.setdefault("HOPGRAPH_ENCODER_SESSIONS", str(sessions))
    os.environ.setdefault("HOPGRAPH_THREADS", str(max(1, n // sessions)))
    from hopgraph.index.dense import single_threaded_blas

    single_threaded_blas()
    os.environ.setdefault("HOPGRAPH_ORT_ARENA", "0")
    # a model not yet exported to ONNX (a first start after an install or an upgrade) is
    # exported by a child process: torch and sentence-transformers would otherwise stay
    # resident in the server (~450 MB)
    os.environ.setdefault("HOPGRAPH_EXPORT_IN_CHILD", "1")
    arenas = None
    libc = heap.libc()
    if libc is not None and "MALLOC_ARENA_MAX" not in os.environ:
        try:
            if libc.mallopt(M_ARENA_MAX, int(arena_max)) == 1:
                arenas = int(arena_max)
        except AttributeError:
            arenas = None
    elif "MALLOC_ARENA_MAX" in os.environ:
        arenas = int(os.environ["MALLOC_ARENA_MAX"])
    global _TRIM
    _TRIM = getattr(libc, "malloc_trim", None) if trim and libc is not None else None
    _CONFIGURED.update(
        cores=n,
        encoder_sessions=int(os.environ["HOPGRAPH_ENCODER_SESSIONS"]),
        onnx_threads=int(os.environ["HOPGRAPH_THREADS"]),
        blas_threads=1,
        malloc_arena_max=arenas,
        onnx_memory_arena=os.environ["HOPGRAPH_ORT_ARENA"] != "0",
        malloc_trim=_TRIM is not None,
        onnx_export_in_child=os.environ["HOPGRAPH_EXPORT_IN_CHILD"] == "1",
    )
    return dict(_CONFIGURED)


def release_memory() -> bool:
    """Give the free pages of every malloc arena back to the system (glibc's
    ``malloc_trim(0)``, 1–4 ms on a served HotpotQA index); a no-op returning False unless
    :func:`configure_serving` turned it on. An update frees the previous generation's
    structures and its own temporaries, and glibc otherwise keeps those pages: 35–56 MB per
    update on HotpotQA (docs/benchmarks.md, issue 21)."""
    if _TRIM is None:
        return False
    _TRIM(0)
    return True


def configured() -> dict[str, Any]:
    """What :func:`configure_serving` set in this process ({} when it was not called)."""
    return dict(_CONFIGURED)
