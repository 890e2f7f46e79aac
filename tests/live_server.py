"""`hopgraph serve` in its own process for the tests that talk to it over HTTP: a free loopback
port, the command started, /health awaited."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    stdout: Any = subprocess.PIPE,
) -> tuple[subprocess.Popen, str]:
    """``hopgraph serve ARGS --port P`` started and answering ``/health``: the process and its
    URL. A server that exits or does not answer within ``timeout`` seconds is killed and the
    test fails with its stderr."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "serve", *args, "--port", str(port)],
        stdout=stdout, stderr=subprocess.PIPE, env=None if env is None else dict(env), text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"hopgraph serve did not start: {proc.communicate()[1][-3000:]}")


def stop_server(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
