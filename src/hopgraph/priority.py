"""CPU priority of write work, so that searches keep their latency while updates run.

On a machine whose cores serve searches, an update (encoding the new passages, re-assembling
the parts, replaying a committed delta in a reader) takes the cores the searches need: at
100k passages on 2 cores, searches answered during a stream of commits had a p99 3.4-5.6x
their idle p99 with the writer at the same priority, and 0.9-1.1x with the writer niced
(docs/notes/updates.md, "Commits at 100k passages"). Niceness only matters when the CPU is
contended: on an idle machine a niced update takes as long as any other.

On Linux niceness belongs to a thread (``setpriority(PRIO_PROCESS, tid)``), and threads
started afterwards inherit it, so :func:`lower_priority` called by a dedicated thread lowers
that thread (and the threads it starts) only. Elsewhere it can only lower the whole process,
which a server must not do for one of its threads; ``whole_process`` says whether that is
wanted. An unprivileged thread cannot raise its priority back: lower only threads whose
whole job is writing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

WRITER_NICE = 19  # what `hopgraph add/delete/compact` and a serving writer's threads run at
MAX_NICE = 19


def current_nice() -> int | None:
    """The calling thread's niceness (Linux), or the process's elsewhere; None if unknown."""
    try:
        if sys.platform.startswith("linux"):
            return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        return None


def check_nice(nice: int) -> int:
    """``nice`` if it is an integer niceness in 0..19, else ValueError."""
    if isinstance(nice, bool) or not isinstance(nice, int) or not 0 <= nice <= MAX_NICE:
        raise ValueError(f"nice must be an integer in 0..{MAX_NICE}, got {nice!r}")
    return nice


def lower_priority(nice: int = WRITER_NICE, *, whole_process: bool = False) -> int | None:
    """Run the calling thread (and the threads it starts from now on) at niceness ``nice``,
    never raising its priority: a thread already nicer is left as it is. Off Linux this needs
    ``whole_process`` (the process is lowered instead) and is otherwise a no-op. Returns the
    niceness now in force, or None when nothing could be set; 0 changes nothing. ``nice`` must
    be in 0..19."""
    check_nice(nice)
    now = current_nice()
    if now is None or nice <= now:
        return now
    if sys.platform.startswith("linux"):
        who = threading.get_native_id()
    elif whole_process:
        who = 0
    else:
        return None
    try:
        os.setpriority(os.PRIO_PROCESS, who, nice)
    except (AttributeError, OSError):
        return None
    return current_nice()


def run_niced(nice: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` run on a thread of its own at niceness ``nice``; its result is
    returned and its exception raised here. The calling thread keeps its priority (a command may
    run in-process: a test, a notebook). Off Linux the whole process is lowered instead.
    ``nice`` 0 calls ``fn`` on this thread. The thread is a daemon and the caller waits in short
    joins, so Ctrl-C still stops a command (an index commit is atomic either way)."""
    if not check_nice(nice):
        return fn(*args, **kwargs)
    out: dict[str, Any] = {}

    def work() -> None:
        lower_priority(nice, whole_process=True)
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = exc

    t = threading.Thread(target=work, name="hopgraph-niced", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.2)
    if "error" in out:
        raise out["error"]
    return out["value"]
