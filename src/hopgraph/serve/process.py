"""Process-wide settings a serving process makes for itself before it loads any model.

On 2 cores, 16 clients otherwise oversubscribe the CPU: each ONNX session runs as many
intra-op threads as there are cores, OpenBLAS keeps its own spinning threads, and glibc gives
every thread that allocates its own malloc arena, so RSS grows with the number of threads
(docs/benchmarks.md: 625–655 MB under 8 clients with updates, 385–425 MB with
MALLOC_ARENA_MAX=2 set by hand). `hopgraph serve` calls :func:`configure_serving` first; what it
set is reported by ``GET /info`` under ``process``.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
_CONFIGURED: dict[str, Any] = {}


def cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def configure_serving(encoder_sessions: int | None = None, arena_max: int = 2) -> dict[str, Any]:
    """Pin thread counts and bound malloc arenas for a serving process: up to
    ``encoder_sessions`` (default: the cores) query encodes at once, each ONNX run on
    cores / sessions threads; BLAS on one thread; at most ``arena_max`` malloc arenas
    (glibc). Settings already in the environment win. Returns what was set."""
    n = cores()
    sessions = max(1, encoder_sessions or n)
    os.environ.setdefault("HOPGRAPH_ENCODER_SESSIONS", str(sessions))
    os.environ.setdefault("HOPGRAPH_THREADS", str(max(1, n // sessions)))
    from hopgraph.index.dense import single_threaded_blas

    single_threaded_blas()
    arenas = None
    if sys.platform.startswith("linux") and "MALLOC_ARENA_MAX" not in os.environ:
        try:
            libc = ctypes.CDLL("libc.so.6")
            if libc.mallopt(M_ARENA_MAX, int(arena_max)) == 1:
                arenas = int(arena_max)
        except (OSError, AttributeError):
            arenas = None
    elif "MALLOC_ARENA_MAX" in os.environ:
        arenas = int(os.environ["MALLOC_ARENA_MAX"])
    _CONFIGURED.update(
        cores=n,
        encoder_sessions=int(os.environ["HOPGRAPH_ENCODER_SESSIONS"]),
        onnx_threads=int(os.environ["HOPGRAPH_THREADS"]),
        blas_threads=1,
        malloc_arena_max=arenas,
    )
    return dict(_CONFIGURED)


def configured() -> dict[str, Any]:
    """What :func:`configure_serving` set in this process ({} when it was not called)."""
    return dict(_CONFIGURED)
