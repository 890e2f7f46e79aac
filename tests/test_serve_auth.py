"""Tokens on the HTTP service: writes need `Authorization: Bearer <token>`, reads too with
--protect-reads; a refused request changes nothing; no token beyond loopback refuses to start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
from fastapi.testclient import TestClient

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.serve import Settings, create_app
from hopgraph.serve.auth import is_loopback, is_write

TOKEN = "s3cret-token-for-tests-0123456789"
ZEBRA = {"id": "z1", "title": "Zebra", "text": "Plains zebras graze on the savanna of Kenya."}
SEARCH = {"query": "heron", "method": "bm25", "k": 3}
RIGHT = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def index_dir(tmp_path):
    folder = tmp_path / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(folder)
    return folder


def _client(index_dir, **settings) -> TestClient:
    return TestClient(create_app(str(index_dir), Settings(reload_interval=0, **settings)))


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
    ids=["none", "wrong", "basic", "empty", "no-scheme", "longer"],
)
def test_writes_without_the_token_are_refused_and_change_nothing(index_dir, headers):
    first, second = load_corpus(demo_dataset_path()).ids[:2]
    with _client(index_dir, token=TOKEN) as c:
        before = c.get("/health").json()
        for method, path, body in (
            ("POST", "/passages", {"passages": [ZEBRA]}),
            ("POST", "/passages/delete", {"ids": [first]}),
            ("DELETE", f"/passages/{second}", None),
        ):
            r = c.request(method, path, json=body, headers=headers)
            assert r.status_code == 401, (method, path, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
            err = r.json()["error"]
            assert err["type"] == "unauthorized" and "Authorization: Bearer" in err["message"]
        assert c.get("/health").json() == before
    assert len(Index.load(index_dir)) == before["passages"]


def test_the_token_lets_writes_through_and_reads_stay_open(index_dir):
    with _client(index_dir, token=TOKEN) as c:
        assert c.post("/search", json=SEARCH).status_code == 200
        assert c.get("/info").json()["auth"] == {"writes": True, "reads": False}
        r = c.post("/passages", json={"passages": [ZEBRA]}, headers=RIGHT)
        assert r.status_code == 201
        lower = {"Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
        assert c.delete("/passages/z1", headers=lower).status_code == 200


def test_the_token_is_checked_before_the_body(index_dir):
    with _client(index_dir, token=TOKEN, max_body_bytes=1000) as c:
        big = b'{"passages": [' + b" " * 5000 + b"]}"
        assert c.post("/passages", content=big).status_code == 401  # not 413
        assert c.post("/passages", content=b"{not json").status_code == 401  # not 400
        assert c.post("/passages", content=big, headers=RIGHT).status_code == 413


def test_protect_reads_closes_all_but_health(index_dir):
    with _client(index_dir, token=TOKEN, protect_reads=True) as c:
        assert c.get("/health").status_code == 200
        for method, path in (("POST", "/search"), ("GET", "/info"), ("GET", "/openapi.json")):
            r = c.request(method, path, json=SEARCH if method == "POST" else None)
            assert r.status_code == 401, path
        assert c.post("/search", json=SEARCH, headers=RIGHT).status_code == 200


def test_the_comparison_is_constant_time(index_dir, monkeypatch):
    import hmac

    from hopgraph.serve import auth

    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    with _client(index_dir, token=TOKEN) as c:
        c.post("/passages", json={"passages": [ZEBRA]}, headers={"Authorization": "Bearer nope"})
    assert calls == [(b"nope", TOKEN.encode())]


def test_settings_refuse_weak_tokens_and_reads_without_one():
    with pytest.raises(ConfigError, match="at least 16 characters"):
        Settings(token="short")
    with pytest.raises(ConfigError, match="protect_reads needs a token"):
        Settings(protect_reads=True)
    assert "s3cret" not in repr(Settings(token=TOKEN))


def test_route_and_host_classification():
    assert is_write("POST", "/passages") and is_write("POST", "/passages/delete")
    assert is_write("DELETE", "/passages/a/b") and not is_write("GET", "/passages/a")
    assert not is_write("POST", "/search") and not is_write("POST", "/passages/batch")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.3.4.5") and is_loopback("[::1]")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("example.org")


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_refuses_to_listen_beyond_loopback_without_a_token(index_dir):
    env = {k: v for k, v in os.environ.items() if k != "HOPGRAPH_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--host", "0.0.0.0",
         "--port", str(_port())],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in done.stderr
    assert "HOPGRAPH_TOKEN" in done.stderr and "Traceback" not in done.stderr


def test_cli_with_a_token_from_the_environment(index_dir):
    port = _port()
    env = {**os.environ, "HOPGRAPH_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--host", "0.0.0.0",
         "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        assert httpx.post(f"{url}/passages", json={"passages": [ZEBRA]}).status_code == 401
        r = httpx.post(f"{url}/passages", json={"passages": [ZEBRA]}, headers=RIGHT)
        assert r.status_code == 201
        assert httpx.post(f"{url}/search", json=SEARCH).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert TOKEN.encode() not in proc.stderr.read()  # never logged
