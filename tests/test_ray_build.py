"""``hopgraph index --engine ray`` on a real Ray cluster: a head and a second worker node on
loopback, started with ``ray start`` as a user would."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hopgraph.corpus import load_corpus, load_dataset
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.index import Index
from hopgraph.index.streaming import EngineOptions
from hopgraph.retrieve import get_retriever

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

RAY = str(Path(sys.executable).with_name("ray"))
# a loopback-only test cluster: no token (Ray 2.5x turns token auth on for clusters it starts)
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray(*args: str) -> None:
    done = subprocess.run([RAY, *args], env=ENV, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def cluster():
    """Two nodes of one CPU each on 127.0.0.1: the head and a worker that joins it."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_USAGE_STATS_ENABLED")}
    os.environ.update({k: ENV[k] for k in saved})  # this process joins the cluster too
    _ray("start", "--head", f"--port={port}", "--include-dashboard=false", *common)
    try:
        _ray("start", f"--address={address}", *common)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([RAY, "stop", "--force"], env=ENV, capture_output=True, timeout=180)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _index(out: Path, *extra: str) -> None:
    cmd = [sys.executable, "-m", "hopgraph.cli", "index", str(demo_dataset_path()), "-o", str(out)]
    done = subprocess.run(
        [*cmd, "--batch-size", "5", "-q", *extra], env=ENV, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_ray_build_ranks_as_the_local_build(cluster, tmp_path):
    _index(tmp_path / "ray", "--engine", "ray", "--address", cluster, "--workers", "2")
    _index(tmp_path / "local")
    a, b = Index.load(tmp_path / "ray"), Index.load(tmp_path / "local")
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(
            a.parts["sparse"].bm25.scores[key], b.parts["sparse"].bm25.scores[key]
        )
    assert a.parts["entities"].names == b.parts["entities"].names
    assert (a.parts["entities"].mentions != b.parts["entities"].mentions).nnz == 0
    np.testing.assert_allclose(a.parts["dense"].embeddings, b.parts["dense"].embeddings, atol=1e-5)
    questions = [q.text for q in load_dataset(demo_dataset_path()).questions]
    for method in ("bm25", "dense", "graph", "default"):
        for q in questions:
            got = get_retriever(a, method).search(q, k=10).ids
            assert got == get_retriever(b, method).search(q, k=10).ids, (method, q)


def test_segments_are_made_on_both_nodes(cluster):
    from hopgraph.config import make_options
    from hopgraph.index.ray_engine import ray_segments
    from hopgraph.index.sparse import SparseOptions

    corpus = load_corpus(demo_dataset_path())
    lines = [json.dumps({"id": p.id, "title": p.title, "text": p.text}) for p in corpus]

    def read_lines(lo: int, hi: int) -> bytes:
        return "\n".join(lines[lo:hi]).encode() + b"\n"

    size = 11  # 4 batches for 2 actors
    todo = [(b, lo, min(len(lines), lo + size)) for b, lo in enumerate(range(0, len(lines), size))]
    options = {"sparse": make_options(SparseOptions, {})}
    made = list(ray_segments(read_lines, todo, ["sparse"], options, {}, address=cluster, workers=2))
    assert sorted(b for b, _, _ in made) == [b for b, _, _ in todo]
    assert len({info["node"] for _, _, info in made}) == 2  # the work was spread
    assert all(info["seconds"]["sparse"] >= 0 for _, _, info in made)


def test_engine_options_and_cli_refuse_what_cannot_run(tmp_path):
    with pytest.raises(HopgraphError, match="engine must be one of"):
        EngineOptions("spark")
    cmd = [sys.executable, "-m", "hopgraph.cli", "index", str(demo_dataset_path())]
    done = subprocess.run(
        [*cmd, "-o", str(tmp_path / "x"), "--address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0 and "need --engine ray" in done.stderr


def test_an_unreachable_cluster_is_a_clear_error(tmp_path, monkeypatch):
    from hopgraph.index import ray_engine

    if ray.is_initialized():
        ray.shutdown()
    with pytest.raises(ConfigError, match="cannot start or reach a Ray cluster at 127.0.0.1"):
        ray_engine.connect(f"127.0.0.1:{_free_port()}")


def test_packed_segments_round_trip_and_stay_inside(tmp_path):
    import io
    import tarfile

    from hopgraph.index.ray_engine import pack_folder, unpack_folder

    src = tmp_path / "src"
    (src / "dense").mkdir(parents=True)
    np.save(src / "dense" / "embeddings.npy", np.arange(6, dtype=np.float32))
    (src / "segment.json").write_text("{}")
    dest = tmp_path / "dest"
    dest.mkdir()
    unpack_folder(pack_folder(src), dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "dense/embeddings.npy",
        "segment.json",
    ]
    np.testing.assert_array_equal(np.load(dest / "dense" / "embeddings.npy"), np.arange(6))
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(tarfile.TarError):
        unpack_folder(evil.getvalue(), dest)
    assert not (tmp_path / "outside.txt").exists()
