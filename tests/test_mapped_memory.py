"""Memory-mapped index files and the process's memory: arrays saved by copying their files
(the same bytes as ``np.save``, none of the map's pages read into the process, ``np.save``
wherever the file is not the array's), and the pages a full pass read given back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from hopgraph import heap
from hopgraph.index.npy import npy_source, save_array

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self")


def _resident_kb(path: Path) -> int:
    """Resident kB of this process's maps of ``path`` (from /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:  # a mapping's line
            inside = line.endswith(str(path))
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


def _saved(array: np.ndarray, folder: Path, name: str) -> bytes:
    np.save(folder / f"{name}.ref.npy", np.ascontiguousarray(array))
    return (folder / f"{name}.ref.npy").read_bytes()


@linux
def test_a_mapped_array_is_copied_without_reading_its_pages(tmp_path):
    src = tmp_path / "big.npy"
    np.save(src, np.arange(4_000_000, dtype=np.int64))  # 32 MB
    mapped = np.load(src, mmap_mode="r")
    assert npy_source(mapped) == src and npy_source(np.asarray(mapped)) == src
    save_array(tmp_path / "copy.npy", mapped)
    assert _resident_kb(src) < 1024  # np.save from the map makes all 32 MB resident
    assert (tmp_path / "copy.npy").read_bytes() == src.read_bytes()
    np.save(tmp_path / "through.npy", mapped)  # what the old code did: the check can fail
    assert _resident_kb(src) > 16_000


@linux
def test_what_is_not_the_whole_file_is_written_by_np_save(tmp_path):
    src = tmp_path / "a.npy"
    np.save(src, np.arange(60, dtype=np.float32).reshape(6, 10))
    mapped = np.load(src, mmap_mode="r")
    cases = {
        "rows": mapped[1:4],
        "column": mapped[:, 2],
        "transposed": mapped.T,
        "retyped": mapped.view(np.int32),
        "reshaped": mapped.reshape(10, 6),
    }
    for name, array in cases.items():
        path = tmp_path / f"{name}.npy"
        save_array(path, array)
        assert path.read_bytes() == _saved(array, tmp_path, name), name
    # reshaped: the same bytes, another shape; its file would say (6, 10)
    assert npy_source(cases["reshaped"]) is None
    private = np.load(src, mmap_mode="c")  # copy-on-write: the map differs from the file
    private[0, 0] = 99
    save_array(tmp_path / "private.npy", private)
    assert np.load(tmp_path / "private.npy")[0, 0] == 99


@linux
def test_a_file_swapped_in_under_the_same_name_is_not_copied(tmp_path):
    """A folder saved anew (a new generation renamed in) puts another file under the name a
    loaded index maps: the save writes the array it holds, not the new file."""
    src = tmp_path / "v.npy"
    np.save(src, np.zeros(1000, np.float32))
    mapped = np.load(src, mmap_mode="r")
    new = tmp_path / "v.new.npy"
    np.save(new, np.ones(1000, np.float32))  # same shape, size and header
    os.replace(new, src)
    assert npy_source(mapped) is None
    save_array(tmp_path / "out.npy", mapped)
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.zeros(1000, np.float32))


def test_saving_a_map_onto_its_own_file_leaves_it(tmp_path):
    src = tmp_path / "s.npy"
    np.save(src, np.arange(100))
    before = src.read_bytes()
    save_array(src, np.load(src, mmap_mode="r"))
    assert src.read_bytes() == before


def test_arrays_in_memory_are_saved_as_np_save_does(tmp_path):
    a = np.arange(12, dtype=np.float16).reshape(3, 4)
    assert npy_source(a) is None
    save_array(tmp_path / "m.npy", a.T)
    assert (tmp_path / "m.npy").read_bytes() == _saved(a.T, tmp_path, "m")


@linux
def test_pages_read_through_a_map_are_given_back_and_read_again(tmp_path):
    src = tmp_path / "scan.npy"
    np.save(src, np.arange(4_000_000, dtype=np.int64))
    mapped = np.load(src, mmap_mode="r")
    total = int(mapped.sum())  # a full pass: every page resident
    assert _resident_kb(src) > 16_000
    if heap.libc() is None:
        pytest.skip("no glibc")
    assert heap.release_mapped_files() >= mapped.nbytes
    assert _resident_kb(src) < 1024
    assert int(mapped.sum()) == total  # read again, from the page cache


@linux
def test_writable_and_private_maps_are_left_alone(tmp_path):
    """Only read-only shared maps are released: a private map's written pages would be lost
    (MADV_DONTNEED drops them), a writable shared one is the caller's to manage."""
    if heap.libc() is None:
        pytest.skip("no glibc")
    a, b = tmp_path / "private.npy", tmp_path / "shared.npy"
    np.save(a, np.zeros(100_000, np.int64))
    np.save(b, np.zeros(100_000, np.int64))
    private = np.load(a, mmap_mode="c")
    shared = np.load(b, mmap_mode="r+")
    private[:] = 7
    shared[:] = 5
    heap.release_mapped_files()
    assert int(private.sum()) == 7 * 100_000 and int(shared.sum()) == 5 * 100_000
    assert _resident_kb(a) > 700 and _resident_kb(b) > 700
