"""Write arrays as ``.npy`` files without reading memory-mapped ones through the process.

A part loaded memory-mapped holds its arrays as maps of the ``.npy`` files it was saved to.
``np.save`` of such an array reads every page of the map: the pages become the process's
(file-backed resident memory), so saving a large index read back from a staged build's merged
parts once took the whole index's size in resident memory (3.8 GB at 1M passages). Where an
array is exactly what a ``.npy`` file holds, :func:`save_array` copies that file in the kernel
instead (``shutil.copyfile``: ``sendfile`` on Linux), and the process's memory is untouched.

"The file" is the one the map reads, not whatever its name holds now: a folder saved anew (a
generation swapped in by rename) puts another file under the same name, so the name's inode
must be the map's (``/proc/self/maps``); elsewhere, and for any slice, view or copy-on-write
map, the array is written by ``np.save``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np


def npy_source(array: np.ndarray) -> Path | None:
    """The ``.npy`` file whose data ``array`` is, byte for byte, read through a shared map, or
    None: ``array`` (or a view of the same bytes, shape and dtype) of an ``np.load(...,
    mmap_mode="r"/"r+")`` whose file still has that header and size."""
    found = array
    while found is not None and not isinstance(found, np.memmap):
        found = getattr(found, "base", None)
        if not isinstance(found, np.ndarray):
            return None
    if found is None or found.filename is None or found.mode not in ("r", "r+"):
        return None  # not a map, or copy-on-write ("c": the file may differ)
    same_bytes = (
        array.__array_interface__["data"][0] == found.__array_interface__["data"][0]
        and array.shape == found.shape
        and array.dtype == found.dtype
        and array.flags.c_contiguous
        and found.flags.c_contiguous
    )
    if not same_bytes:
        return None
    path = Path(found.filename)
    if not _maps_file(found.__array_interface__["data"][0], path):
        return None  # the name now holds another file (a folder swapped in since the load)
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if read is None:
                return None
            shape, fortran, dtype = read(f)
            header = f.tell()
        size = os.path.getsize(path)
    except (OSError, ValueError):
        return None
    matches = (
        tuple(shape) == array.shape
        and not fortran
        and np.dtype(dtype) == array.dtype
        and header == found.offset
        and size == header + array.nbytes
    )
    return path if matches else None


def save_array(path: Path, array: np.ndarray) -> None:
    """``np.save(path, array)`` (C order), copying the array's own ``.npy`` file instead where
    it is a map of one (:func:`npy_source`)."""
    source = npy_source(array)
    if source is not None:
        copy_file(source, path)
        return
    np.save(path, np.ascontiguousarray(array))


def copy_file(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` in the kernel (no page passes through this process); a
    no-op when ``target`` is ``source`` itself (it holds the bytes already)."""
    if not _same_file(source, target):
        shutil.copyfile(source, target)


def _maps_file(address: int, path: Path) -> bool:
    """Whether the memory at ``address`` maps the file ``path`` names now (the same inode):
    read from ``/proc/self/maps``; False where there is none (another platform)."""
    try:
        maps = Path("/proc/self/maps").read_text()
        st = os.stat(path)
    except OSError:
        return False
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        lo, _, hi = fields[0].partition("-")
        if int(lo, 16) <= address < int(hi, 16):
            major, _, minor = fields[3].partition(":")
            device = os.makedev(int(major, 16), int(minor, 16))
            return int(fields[4]) == st.st_ino and device == st.st_dev
    return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
