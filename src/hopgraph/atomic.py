"""Crash-safe folder writes: build a folder next to its destination, then swap it in.

A crash at any point leaves either the previous folder or the new one, never a mix (see
:func:`replace_folder`; readers call :func:`recover_folder` first).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` and fsync it (the caller renames it into place)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (and ``root`` itself)."""
    for p in root.rglob("*"):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        fsync_dir(d)


@contextmanager
def replace_folder(path: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; when the block ends without error,
    sync it to disk and swap it in for ``path``; on error, remove it and leave ``path`` as it
    was.

    The swap is one atomic ``renameat2(RENAME_EXCHANGE)`` where the kernel and file system
    have it (Linux: ext4, xfs, btrfs, tmpfs, overlayfs), so ``path`` always names a complete
    folder. Elsewhere ``path`` is renamed aside and the new folder renamed in: a crash between
    the two renames leaves no ``path`` but the previous folder beside it, which
    :func:`recover_folder` (called by every reader) renames back.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_debris(path)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        yield tmp
        fsync_tree(tmp)
        if path.exists() and _exchange(tmp, path):
            fsync_dir(path.parent)
            shutil.rmtree(tmp, ignore_errors=True)  # now the previous folder
            return
        old = None
        if path.exists():
            old = path.parent / f".{path.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            os.rename(path, old)
        os.rename(tmp, path)
        fsync_dir(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def recover_folder(path: Path, *, force: bool = False) -> None:
    """If a writer died between the two renames of :func:`replace_folder`'s fallback, put the
    previous folder back at ``path``. Unless ``force`` (a writer holding the lock itself), a
    reader leaves it alone while any process holds the folder's writer lock: that writer may be
    between its two renames right now (file systems without an atomic exchange, such as NFS,
    where several servers share one folder), and putting the old folder back would make its
    second rename fail."""
    if path.exists():
        return
    if not force and _commit_lock_held(path):
        return
    olds = sorted(
        path.parent.glob(f".{path.name}.old-*"), key=lambda p: p.stat().st_mtime, reverse=True
    )
    for old in olds:
        try:
            os.rename(old, path)
        except OSError:
            continue
        fsync_dir(path.parent)
        return


def _commit_lock_held(path: Path) -> bool:
    """Whether some open file holds :func:`writer_lock` on ``path`` now."""
    return _flock_held(path.parent / f".{path.name}.lock")


def _flock_held(file: Path) -> bool:
    """Whether some open file description holds an exclusive ``flock`` on ``file`` now (a
    missing file is held by nobody)."""
    try:
        fd = os.open(file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def remove_debris(path: Path) -> None:
    """Remove the temporary and previous folders that writers killed mid-write left beside
    ``path`` (only those of processes no longer running: a live writer keeps its own)."""
    recover_folder(path, force=True)
    for p in path.parent.glob(f".{path.name}.*-*-*"):
        kind, _, rest = p.name[len(path.name) + 2 :].partition("-")
        pid = rest.partition("-")[0]
        if kind in ("tmp", "old") and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(p, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_renameat2: object | None = None


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap the names ``a`` and ``b``; False where the system cannot."""
    global _renameat2
    if sys.platform != "linux":
        return False
    if _renameat2 is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
            fn.argtypes += [ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    if not _renameat2:
        return False
    rc = _renameat2(  # type: ignore[operator]
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
    )
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextmanager
def writer_lock(path: Path, *, timeout: float = 60.0) -> Iterator[None]:
    """Hold the writer lock of the folder ``path`` (an advisory ``flock`` on ``.NAME.lock``
    beside it) for the block: two updaters of one index (a server and ``hopgraph add``) take
    turns instead of one silently undoing the other. Waits up to ``timeout`` seconds, then
    raises :class:`~hopgraph.errors.WriterBusyError` naming the holder."""
    from hopgraph.errors import WriterBusyError

    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.parent / f".{path.name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "?"
                    raise WriterBusyError(
                        f"{path} is being updated by another process ({holder}); "
                        f"waited {timeout:.0f}s"
                    ) from None
                time.sleep(0.05)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} {' '.join(sys.argv[:2])}".encode(), 0)
        recover_folder(path, force=True)  # a writer died mid-swap: the lock holder recovers
        yield
    finally:
        os.close(fd)  # releases the lock


class WriterRole:
    """The writer role of an index folder ``path``: an advisory ``flock`` on ``.NAME.writer``
    beside it, held for as long as the holder lives (the kernel drops it when the process
    dies), with a line saying who holds it. Several servers may read one folder (on one
    machine or on shared storage); one of them writes, and the others name it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.file = self.path.parent / f".{self.path.name}.writer"
        self._fd: int | None = None

    def acquire(self, holder: str) -> bool:
        """Take the role without waiting; record ``holder`` (who, where, how to reach it).
        False when another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """Who holds the role, as its holder wrote it ("" when nobody ever did)."""
        try:
            return self.file.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""

    def is_free(self) -> bool:
        """Whether nobody holds the role now (its last holder may have stopped)."""
        return self._fd is None and not _flock_held(self.file)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None
