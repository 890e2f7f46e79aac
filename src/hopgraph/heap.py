"""glibc's allocator, where there is one: the C library handle and ``malloc_trim``.

glibc keeps the pages a process freed in its malloc arenas; a long step that peaked (a large
build's merges, a served index's update) leaves them resident until ``malloc_trim`` hands them
back. Elsewhere (another platform or C library) both are no-ops.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import Any


def libc() -> Any:
    """glibc, or None (another platform or C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL("libc.so.6")
        lib.mallopt  # noqa: B018 - glibc's, not another libc.so.6
    except (OSError, AttributeError):
        return None
    return lib


def trim() -> bool:
    """Collect Python's garbage, then give every malloc arena's free pages back to the system;
    False where there is no glibc."""
    gc.collect()
    lib = libc()
    if lib is None or not hasattr(lib, "malloc_trim"):
        return False
    lib.malloc_trim(0)
    return True
