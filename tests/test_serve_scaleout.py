"""Several `hopgraph serve` processes over one index folder: one writer, readers that name it
and pick up each committed generation without a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from live_server import free_port, start_server

from hopgraph.atomic import WriterRole
from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError, NotWriterError
from hopgraph.index import Index
from hopgraph.serve import ServedIndex, Settings

ZEBRA = {"id": "z1", "title": "Zebra", "text": "Plains zebras graze on the savanna of Kenya."}
BM25 = {"method": "bm25"}


@pytest.fixture
def index_dir(tmp_path) -> Path:
    folder = tmp_path / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(folder)
    return folder


def _serve(index_dir: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    args = [str(index_dir), "--reload-interval", "0.2", "--log-level", "warning", *extra]
    return start_server(args)


def _until(check, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_one_writer_and_readers_that_follow_it(index_dir):
    writer, w_url = _serve(index_dir)
    reader, r_url = _serve(index_dir)
    procs = [writer, reader]
    try:
        w_info, r_info = httpx.get(f"{w_url}/info").json(), httpx.get(f"{r_url}/info").json()
        assert (w_info["role"], r_info["role"]) == ("writer", "reader")
        assert f"pid {writer.pid}" in r_info["writer"] and w_url in r_info["writer"]
        # a write sent to the reader is refused, naming the writer; nothing changes
        r = httpx.post(f"{r_url}/passages", json={"passages": [ZEBRA]})
        assert r.status_code == 409 and r.json()["error"]["type"] == "not_the_writer"
        assert w_url in r.json()["error"]["message"]
        assert httpx.get(f"{w_url}/passages/z1").status_code == 404
        # the writer commits a generation; the reader serves it without a restart
        gen = httpx.get(f"{r_url}/health").json()["generation"]
        r = httpx.post(f"{w_url}/passages", json={"passages": [ZEBRA]})
        assert r.status_code == 201 and r.json()["generation"] == gen + 1
        assert _until(lambda: httpx.get(f"{r_url}/passages/z1").status_code == 200)
        assert httpx.get(f"{r_url}/health").json()["generation"] == gen + 1
        hits = httpx.post(f"{r_url}/search", json=BM25 | {"query": "zebras savanna", "k": 1})
        assert hits.json()["hits"][0]["id"] == "z1"
        # a second writer cannot start while the role is held
        third = subprocess.run(
            [sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--role", "writer",
             "--port", str(free_port())],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert third.returncode != 0 and "already has a writer" in third.stderr
        assert f"pid {writer.pid}" in third.stderr
        # `hopgraph delete` from another process: both servers follow it
        done = subprocess.run(
            [sys.executable, "-m", "hopgraph.cli", "delete", str(index_dir), "z1"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        for url in (w_url, r_url):
            assert _until(lambda url=url: httpx.get(f"{url}/passages/z1").status_code == 404)
        # the writer stops: readers say there is none now
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
        assert "nobody now" in httpx.get(f"{r_url}/info").json()["writer"]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)


def test_roles_in_process(index_dir):
    a = ServedIndex(index_dir, Settings(reload_interval=0))
    b = ServedIndex(index_dir, Settings(reload_interval=0))
    try:
        assert (a.role, b.role) == ("writer", "reader")
        assert f"pid {os.getpid()}" in b.writer()
        with pytest.raises(NotWriterError, match="only reads"):
            b.update(delete=[a.snapshot.index.corpus.ids[0]])
        with pytest.raises(ConfigError, match="already has a writer"):
            ServedIndex(index_dir, Settings(role="writer", reload_interval=0))
        reader = ServedIndex(index_dir, Settings(role="reader", reload_interval=0))
        assert reader.role == "reader"
        first = a.snapshot.index.corpus.ids[0]
        a.update(delete=[first])
        assert b.reload_if_changed() and first not in b.snapshot.index.corpus
        assert not b.reload_if_changed()  # nothing new
        assert b.snapshot.generation == a.snapshot.generation == 1
        a.close()
        assert "nobody now" in b.writer()
    finally:
        a.close()
        b.close()


def test_writer_role_lock(tmp_path):
    folder = tmp_path / "ix"
    one, two = WriterRole(folder), WriterRole(folder)
    assert one.is_free() and one.acquire("pid 1 on a")
    assert not two.is_free() and not two.acquire("pid 2 on b")
    assert two.holder() == "pid 1 on a"
    one.release()
    assert two.is_free() and two.acquire("pid 2 on b") and two.holder() == "pid 2 on b"
    two.release()
    with pytest.raises(ConfigError, match="server role"):
        Settings(role="leader")
    with pytest.raises(ConfigError, match="reload_interval"):
        Settings(reload_interval=-1)


def test_a_read_only_folder_is_served_read_only(index_dir, monkeypatch):
    def refuse(self, holder):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(WriterRole, "acquire", refuse)
    served = ServedIndex(index_dir, Settings(reload_interval=0))
    assert served.role == "reader"
    with pytest.raises(ConfigError, match="cannot take the writer role"):
        ServedIndex(index_dir, Settings(role="writer", reload_interval=0))
