"""The segments of a streaming build made on a Ray cluster (``hopgraph index --engine ray``).

The per-passage work of a build (tokeniser, encoder, NER: :meth:`IndexPart.write_segment`) runs
as Ray Data ``map_batches`` over the plan's batches, one batch per call, on actors that load the
models once. The batches' passages travel through Ray's object store (the driver reads them from
its partial folder), so workers need no shared file system; each actor writes the segment into a
scratch folder exactly as a local build does and sends it back packed, and the driver unpacks it
into the partial folder and commits it the same way. Merging stays on the driver, in the same code
as a local build, so the index ranks as the local build does (segments are identical but for the
float rounding of encoders across machines).

Batches are submitted in windows of about :data:`WINDOW_BYTES` of passage text, so the driver
never holds the whole corpus; a window's actors load the models once.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError

WINDOW_BYTES = 256 * 2**20  # passage text submitted to the cluster at once


def require_ray() -> Any:
    """``ray`` with Ray Data, or a ConfigError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data is what runs the batches
    except ImportError:
        raise ConfigError(
            "--engine ray needs Ray Data: pip install 'hopgraph[ray]' (ray[data])"
        ) from None
    return ray


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` (``None``: a local cluster on this machine)."""
    ray = require_ray()
    if not ray.is_initialized():
        if address:
            _check_reachable(address)
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"at {address}" if address else "locally"
            raise ConfigError(f"cannot start or reach a Ray cluster {where}: {exc}") from exc
    _quiet_ray_data(ray)
    return ray


def _check_reachable(address: str, timeout: float = 10.0) -> None:
    """Fail at once on a ``host:port`` nobody answers (Ray itself retries for minutes)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return  # "auto", "ray://...": left to Ray
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(
            f"cannot start or reach a Ray cluster at {address}: nothing answers there ({exc}); "
            "start one with `ray start --head` or give the head node's address"
        ) from exc


def _quiet_ray_data(ray: Any) -> None:
    """The build has its own progress bar: Ray Data's bars and per-run log lines go."""
    import logging

    logging.getLogger("ray.data").setLevel(logging.ERROR)  # also "Progress bars disabled"
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.enable_operator_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False


def pack_folder(folder: Path) -> bytes:
    """The files under ``folder`` as an uncompressed tar (paths relative to it)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return buf.getvalue()


def unpack_folder(data: bytes, folder: Path) -> None:
    """Write :func:`pack_folder`'s files under ``folder`` (refusing paths that leave it)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(folder, filter="data")


class SegmentMaker:
    """A Ray Data actor: makes one batch's segment per call (models loaded once per actor)."""

    def __init__(
        self,
        names: list[str],
        options: dict[str, Any],
        contexts: dict[str, Any],
        threads: int,
        source: str | None,
    ):
        # the encoders use the CPUs Ray gave this actor, not every core of the node
        os.environ["HOPGRAPH_THREADS"] = str(threads)
        try:
            import torch

            torch.set_num_threads(threads)
        except ImportError:
            pass
        self.names, self.options, self.contexts = names, options, contexts
        self.source = Path(source) if source else None

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        import ray

        from hopgraph.corpus import Corpus
        from hopgraph.corpus.filecorpus import passage_from_line
        from hopgraph.index.segment import write_batch

        node = ray.get_runtime_context().get_node_id()
        out: dict[str, list[Any]] = {"batch": [], "segment": [], "seconds": [], "node": []}
        for b, lines in zip(batch["batch"], batch["lines"], strict=True):
            passages = Corpus(
                [passage_from_line(line) for line in bytes(lines).splitlines()],
                source=self.source,
            )
            with tempfile.TemporaryDirectory(prefix="hopgraph-segment-") as tmp:
                secs = write_batch(passages, self.names, self.options, self.contexts, Path(tmp))
                out["segment"].append(pack_folder(Path(tmp)))
            out["batch"].append(int(b))
            out["seconds"].append(json.dumps(secs))
            out["node"].append(node)
        return out


def ray_segments(
    read_lines: Any,
    todo: list[tuple[int, int, int]],
    names: list[str],
    options: dict[str, Any],
    contexts: dict[str, Any],
    *,
    address: str | None = None,
    workers: int | None = None,
    cpus_per_worker: int = 1,
    source: str | None = None,
) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    """Make the segments of the batches ``todo`` (``(batch, first row, end row)``) on a Ray
    cluster; yields ``(batch, packed segment, {"seconds": per part, "node": Ray node id})`` as
    they finish, in any order.
    ``read_lines(lo, hi)`` gives the passages' JSON lines. ``workers`` actors of
    ``cpus_per_worker`` CPUs each (default: as many as the cluster's CPUs allow)."""
    if cpus_per_worker <= 0:
        raise ConfigError(f"cpus_per_worker must be positive, got {cpus_per_worker}")
    ray = connect(address)
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)) // cpus_per_worker)
    if workers <= 0:
        raise ConfigError(f"workers must be positive, got {workers}")
    kwargs = {
        "names": names,
        "options": options,
        "contexts": contexts,
        "threads": cpus_per_worker,
        "source": source,
    }
    window: list[dict[str, Any]] = []
    size = 0
    for i, (b, lo, hi) in enumerate(todo):
        lines = read_lines(lo, hi)
        window.append({"batch": b, "lines": lines})
        size += len(lines)
        if size >= WINDOW_BYTES or i == len(todo) - 1:
            yield from _run_window(ray, window, workers, cpus_per_worker, kwargs)
            window, size = [], 0


def _run_window(
    ray: Any, items: list[dict[str, Any]], workers: int, cpus: int, kwargs: dict[str, Any]
) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    ds = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
        SegmentMaker,
        batch_size=1,
        batch_format="numpy",
        # one batch at a time per actor: a batch is minutes of work, and with Ray's default of
        # several in flight an actor that starts first can queue every batch of a small window
        # while the others are still loading (seen: all 4 batches of a test on one node)
        compute=ray.data.ActorPoolStrategy(
            size=min(workers, len(items)), max_tasks_in_flight_per_actor=1
        ),
        num_cpus=cpus,
        fn_constructor_kwargs=kwargs,
    )
    for row in ds.iter_rows():
        made = {"seconds": json.loads(str(row["seconds"])), "node": str(row["node"])}
        yield int(row["batch"]), bytes(row["segment"]), made
