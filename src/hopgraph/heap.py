"""Memory a process holds but no longer needs: glibc's free pages (``malloc_trim``), and the
pages of memory-mapped files it has read through.

glibc keeps the pages a process freed in its malloc arenas; a long step that peaked (a large
build's merges, a served index's update) leaves them resident until ``malloc_trim`` hands them
back. Elsewhere (another platform or C library) :func:`trim` is a no-op.

A part loaded memory-mapped costs nothing until read; a pass over a whole part (the corpus
profile's full scans, at 1M passages 2.8 GB of vectors and postings) makes every page it read
resident in the process, where it stays until the map is closed. :func:`release_mapped_files`
drops those pages from the process (Linux: ``madvise(MADV_DONTNEED)`` on its read-only shared
file maps); the kernel keeps them in its page cache, so a later read maps them back without
touching the disk.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import sys
from pathlib import Path
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


def release_mapped_files() -> int:
    """Drop the pages of every read-only shared file map of this process (``np.load(...,
    mmap_mode="r")``, usearch's views) from its resident memory; returns the bytes of the maps
    released (0 where there is no ``/proc`` or no glibc). Safe at any time: nothing can have
    written to such a map, and a later read maps its pages again from the page cache."""
    lib = libc()
    maps = Path("/proc/self/maps")
    if lib is None or not maps.exists():
        return 0
    lib.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    released = 0
    for line in maps.read_text().splitlines():
        fields = line.split(maxsplit=5)
        # read-only, shared, a file's (inode not 0): "r--s"; never a writable or private map
        if len(fields) < 6 or fields[1] != "r--s" or fields[4] == "0":
            continue
        start, _, end = fields[0].partition("-")
        lo, hi = int(start, 16), int(end, 16)
        if lib.madvise(lo, hi - lo, mmap.MADV_DONTNEED) == 0:
            released += hi - lo
    return released
