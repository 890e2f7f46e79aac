"""The served state: an immutable snapshot of the index, swapped whole by serialized updates.

A search reads :attr:`ServedIndex.snapshot` once and uses only that snapshot (its index, its
corpus, its retrievers), so it never sees half of an update. An update takes the writer lock,
computes the updated index from the current snapshot (:meth:`Index.updated`), saves it
atomically over the index folder, loads it back from disk (memory-mapped, so the served
state is exactly what is on disk), warms the retrievers the old snapshot had built, and
publishes a new snapshot with one assignment. Searches meanwhile go on with the old snapshot,
whose memory-mapped files stay readable after the folder is replaced (POSIX keeps unlinked
files alive while mapped).

Several servers may serve one folder (on one machine, or on shared storage): one holds the
folder's writer role (:class:`~hopgraph.atomic.WriterRole`, taken at start) and writes; the
others answer writes with :class:`~hopgraph.errors.NotWriterError` naming it. Every server
checks the folder's manifest every ``reload_interval`` seconds and, when another process has
committed a new generation, loads it and publishes it the same way (so a reader serves a new
generation within about that long, without a restart).
"""

from __future__ import annotations

import json
import logging
import math
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from hopgraph.atomic import WriterRole
from hopgraph.config import make_options, option_values, server_only_options
from hopgraph.corpus import Passage
from hopgraph.errors import ConfigError, HopgraphError, NotWriterError, UpdateError
from hopgraph.index import Index
from hopgraph.index.staged import stage_of, writing
from hopgraph.index.store import manifest_digest, missing_parts_message
from hopgraph.priority import lower_priority
from hopgraph.retrieve.registry import (
    Retriever,
    default_choice,
    is_default,
    method_class,
    resolve_method_name,
)
from hopgraph.serve.bounds import over_bound
from hopgraph.serve.process import release_memory
from hopgraph.serve.settings import Settings

log = logging.getLogger("hopgraph.serve")


class RequestError(HopgraphError):
    """A search request the served index cannot answer; ``kind`` names why (unknown_method,
    invalid_params, server_only_param, missing_index_part)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class RetrieverCache:
    """Retrievers of one snapshot by (method, parameters as used), least recently used evicted.

    Lookups of a cached retriever take a short lock; building one happens under a separate lock
    so two requests never build the same retriever twice and hits are not held up by a build.
    """

    def __init__(self, index: Index, size: int):
        self.index = index
        self.size = size
        self._items: OrderedDict[tuple[str, str], Retriever] = OrderedDict()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()

    def get(self, cls: type[Retriever], params: Any) -> Retriever:
        key = (cls.name, _params_key(params))
        with self._lock:
            r = self._items.get(key)
            if r is not None:
                self._items.move_to_end(key)
                return r
        with self._build_lock:
            with self._lock:
                r = self._items.get(key)
            if r is None:
                r = cls(self.index, params)
            with self._lock:
                self._items[key] = r
                self._items.move_to_end(key)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return r

    def entries(self) -> list[tuple[type[Retriever], Any]]:
        """(class, params) of every cached retriever, least recently used first."""
        with self._lock:
            return [(type(r), r.params) for r in self._items.values()]


@dataclass(frozen=True)
class Snapshot:
    """One generation of the served index: never changed once published."""

    index: Index
    generation: int
    retrievers: RetrieverCache = field(compare=False)


@dataclass
class UpdateResult:
    added: int
    deleted: int
    passages: int
    generation: int
    seconds: float


class ServedIndex:
    """The index folder ``path`` as served: searches on snapshots, serialized updates."""

    def __init__(self, path: str | Path, settings: Settings | None = None):
        self.path = Path(path).expanduser().resolve()
        self.settings = settings or Settings()
        self._check_server_params()
        # server parameters by the method's own name (``--set default.depth=50`` included)
        self.method_params: dict[str, dict[str, Any]] = {}
        for method, params in self.settings.method_params.items():
            self.method_params.setdefault(resolve_method_name(method), {}).update(params)
        index = Index.load(self.path, verify=self.settings.verify)
        self.snapshot = self._snapshot(index)
        self._write_lock = threading.Lock()
        self.writer_role = WriterRole(self.path)
        self.role = self._take_role()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._compactor: threading.Thread | None = None
        # updates run on this one thread, at the writer's niceness (a pooled request thread
        # could not get its priority back afterwards); started by the first update
        self._writer: ThreadPoolExecutor | None = None
        if self.settings.reload_interval > 0:
            self._watcher = threading.Thread(
                target=self._watch, name="hopgraph-reload", daemon=True
            )
            self._watcher.start()

    def _snapshot(self, index: Index) -> Snapshot:
        cache = RetrieverCache(index, self.settings.max_cached_retrievers)
        return Snapshot(index, index.generation, cache)

    def _take_role(self) -> str:
        wanted = self.settings.role
        if wanted == "reader":
            return "reader"
        me = (
            f"pid {os.getpid()} on {socket.gethostname()}"
            + (f", serving {self.settings.address}" if self.settings.address else "")
            + f", since {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"
        )
        try:
            taken = self.writer_role.acquire(me)
        except OSError as exc:  # e.g. a read-only mount: this server can only read anyway
            if wanted == "writer":
                raise ConfigError(f"cannot take the writer role of {self.path}: {exc}") from exc
            log.warning(
                "cannot take the writer role of %s (%s): serving it read-only", self.path, exc
            )
            return "reader"
        if taken:
            return "writer"
        if wanted == "writer":
            raise ConfigError(
                f"{self.path} already has a writer ({self.writer_role.holder() or 'unknown'}); "
                "start this server with --role reader, or stop that one"
            )
        log.info("%s is written by %s: serving it read-only", self.path, self.writer_role.holder())
        return "reader"

    def close(self) -> None:
        """Stop watching the folder and give up the writer role."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=10)
        if self._compactor is not None:
            self._compactor.join()
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        self.writer_role.release()

    def writer(self) -> str:
        """Who writes this folder, in words."""
        if self.role == "writer":
            return "this server"
        if self.writer_role.is_free():
            last = self.writer_role.holder()
            return "nobody now" + (f" (the last writer, {last}, has stopped)" if last else "")
        return self.writer_role.holder() or "another process"

    # -- following commits of other processes ---------------------------------------------
    def _watch(self) -> None:
        lower_priority(self.settings.writer_nice)  # a replay must not slow the searches
        while not self._stop.wait(self.settings.reload_interval):
            try:
                self.reload_if_changed()
            except Exception:  # noqa: BLE001 - keep serving the generation we have
                log.exception("checking %s for a new generation failed", self.path)

    def reload_if_changed(self) -> bool:
        """Serve the generation on disk if another process committed one; True if it did."""
        try:
            digest = manifest_digest(self.path)
        except OSError:  # the folder is being replaced this instant: next time
            return False
        if digest is None or digest == self.snapshot.index.manifest_digest:
            return False
        with self._write_lock:  # not while this process commits one itself
            old = self.snapshot
            if manifest_digest(self.path) == old.index.manifest_digest:
                return False
            was_pending = bool(old.index.pending)
            index = old.index.reloaded()  # only the deltas committed since, where it can
            snap = self._snapshot(index)
            self._warm(snap, old.retrievers.entries())
            self.snapshot = snap
        del old
        release_memory()
        log.info(
            "generation %d loaded from %s (%d passages)", snap.generation, self.path, len(index)
        )
        if was_pending and not index.pending:  # a staged build committed its complete index
            log.info("index complete: passage vectors in; searches use the full default")
        return True

    def build_stage(self, snap: Snapshot | None = None) -> dict[str, Any]:
        """The build stage of the served generation (:func:`hopgraph.index.staged.build_stage`:
        searchable while a staged build encodes the passage vectors, how many are done)."""
        index = (snap or self.snapshot).index
        return stage_of(self.path, index.pending, len(index), index.has("dense"))

    def _check_server_params(self) -> None:
        for method, params in self.settings.method_params.items():
            cls = method_class(method)  # ConfigError names the methods
            make_options(cls.Params, params, what=f"method {method!r}")

    # -- searching ------------------------------------------------------------------------
    def retriever(self, snap: Snapshot, method: str, params: dict[str, Any]) -> Retriever:
        """The retriever of ``snap`` for ``method`` (``"default"``: the default method, or on an
        index without its parts the fallback of :func:`default_choice`) with the client's
        ``params`` over the server's fixed ones; :class:`RequestError` says what is wrong with
        the request."""
        if is_default(method):
            method = default_choice(snap.index).method
        try:
            cls = method_class(method)
        except ConfigError as exc:
            raise RequestError("unknown_method", str(exc)) from None
        method = cls.name
        fixed = sorted(set(params) & server_only_options(cls.Params))
        if fixed:
            raise RequestError(
                "server_only_param",
                f"parameter {fixed[0]!r} names files the server would load; it is set by the "
                f"operator (hopgraph serve --set {method}.{fixed[0]}=...)",
            )
        try:  # the client's values as JSON gives them (the schema's types), over the server's
            what = f"method {method!r}"
            given = option_values(cls.Params, params, what=what, strict=True)
            opts = make_options(cls.Params, {**self.method_params.get(method, {}), **given})
        except ConfigError as exc:
            raise RequestError("invalid_params", str(exc)) from None
        bad = [k for k, v in asdict(opts).items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            raise RequestError("invalid_params", f"parameter {bad[0]!r} must be a finite number")
        over = over_bound(cls.Params, params, opts)
        if over is not None:
            name, value, bound = over
            raise RequestError(
                "invalid_params",
                f"parameter {name!r} of method {method!r} is {value!r}; this server allows at "
                f"most {bound:g} in absolute value (GET /info lists every bound)",
            )
        try:
            needs = cls.parts_for(opts)
        except ConfigError as exc:
            raise RequestError("invalid_params", str(exc)) from None
        missing = snap.index.missing(needs)
        if missing:
            pending = set(missing) <= set((snap.index.pending or {}).get("parts", []))
            raise RequestError(  # (a staged build's parts come without a restart)
                "missing_index_part",
                missing_parts_message(snap.index, missing, method, snap.index.missing(cls.optional))
                + ("" if pending else ", then restart the server"),
            )
        try:
            return snap.retrievers.get(cls, opts)
        except ConfigError as exc:
            raise RequestError("invalid_params", str(exc)) from None

    # -- updating -------------------------------------------------------------------------
    def update(self, add: Sequence[Passage] = (), delete: Iterable[str] = ()) -> UpdateResult:
        """Apply one add/delete atomically; the served snapshot changes only when the new index
        is on disk. Raises the index's :class:`~hopgraph.errors.UpdateError` kinds (nothing is
        changed then). The work runs on the server's writer thread, at
        ``settings.writer_nice``; this call waits for it."""
        add, delete = list(add), list(delete)
        if self.role != "writer":
            raise NotWriterError(
                f"this server only reads {self.path}; its writer is {self.writer()}: send "
                "additions and deletions there"
            )
        with self._write_lock:  # one pool, made once
            if self._stop.is_set():  # closed: the server stops, or the named index was dropped
                raise UpdateError(f"{self.path} is no longer served")
            if self._writer is None:
                self._writer = ThreadPoolExecutor(
                    1,
                    thread_name_prefix="hopgraph-writer",
                    initializer=partial(lower_priority, self.settings.writer_nice),
                )
        return self._writer.submit(self._update, add, delete).result()

    def _update(self, add: list[Passage], delete: list[str]) -> UpdateResult:
        with self._write_lock, writing(self.path):
            if self._stop.is_set():  # closed: the server stops, or the named index was dropped
                raise UpdateError(f"{self.path} is no longer served")
            t0 = time.perf_counter()
            old = self.snapshot
            base = old.index
            if manifest_digest(self.path) != base.manifest_digest:
                # another process (hopgraph add/delete) updated the folder: start from that
                log.warning("%s changed on disk since it was loaded; reloading it", self.path)
                base = Index.load(self.path, verify=self.settings.verify)
            new = base.updated(add=add, delete=delete)
            new.save(self.path, compact=False if self.settings.background_compaction else None)
            loaded = new  # committed as a delta: the object is what the folder replays to
            if not new.deltas:  # a new base was written: serve it memory-mapped
                try:
                    loaded = Index.load(self.path, verify=False)
                except Exception:  # noqa: BLE001 - the folder holds `new`: serve that object
                    log.exception("reloading %s after compacting failed", self.path)
            snap = self._snapshot(loaded)
            self._warm(snap, old.retrievers.entries())
            self.snapshot = snap  # the single publishing assignment
            seconds = time.perf_counter() - t0
        del old, base, new  # the previous generation is freed once its searches end
        release_memory()  # malloc keeps the pages of what the update freed unless told
        log.info(
            "generation %d: +%d -%d passages (%d now) in %.2fs",
            snap.generation, len(add), len(delete), len(loaded), seconds,
        )  # fmt: skip
        if loaded.deltas and loaded.policy.compacts(loaded.deltas, len(loaded)):
            self._compact_soon()
        return UpdateResult(len(add), len(delete), len(loaded), snap.generation, seconds)

    def _compact_soon(self) -> None:
        """Merge the deltas into a new base on a background thread: searches go on over the
        served snapshot meanwhile; writes wait for it (they take the same locks)."""
        if self._compactor is not None and self._compactor.is_alive():
            return
        self._compactor = threading.Thread(
            target=self.compact, name="hopgraph-compact", daemon=True
        )
        self._compactor.start()

    def compact(self) -> bool:
        """Write the served generation as a new base (no deltas) and serve it memory-mapped;
        False if there was nothing to merge or this server is not the writer."""
        if self.role != "writer":
            return False
        if threading.current_thread() is self._compactor:
            lower_priority(self.settings.writer_nice)
        try:
            with self._write_lock, writing(self.path):
                old = self.snapshot
                if not old.index.deltas or manifest_digest(self.path) != old.index.manifest_digest:
                    return False
                t0 = time.perf_counter()
                old.index.compact()
                snap = self._snapshot(Index.load(self.path, verify=False))
                self._warm(snap, old.retrievers.entries())
                self.snapshot = snap
            del old
            release_memory()
            log.info(
                "generation %d compacted into a new base in %.2fs",
                snap.generation, time.perf_counter() - t0,
            )  # fmt: skip
            return True
        except Exception:  # noqa: BLE001 - the deltas stay; the next commit tries again
            log.exception("compacting %s failed", self.path)
            return False

    @staticmethod
    def _warm(snap: Snapshot, entries: list[tuple[type[Retriever], Any]]) -> None:
        """Build the old snapshot's retrievers on the new one and run one search with each, so
        the first searches after an update do not pay for what is built on first use (the
        entity graph: ~0.4 s at 100k passages); a retriever that no longer builds is left out."""
        first = snap.index.corpus[0] if len(snap.index) else None
        probe = (first.title or first.text[:80]) if first is not None else "warm up"
        for cls, params in entries:
            try:
                snap.retrievers.get(cls, params).search(probe, 10)
            except Exception:  # noqa: BLE001 - a search will report it if asked again
                log.warning("retriever %s no longer builds after the update", cls.name)


def _params_key(params: Any) -> str:
    return json.dumps(asdict(params), sort_keys=True, default=str)
