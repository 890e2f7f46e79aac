"""schemathesis (an outside suite) against a real `hopgraph serve`: every check, the coverage,
fuzzing and stateful phases, bounded examples, a fixed seed. Two servers: one plain (no token,
writes open on loopback), one with a token and named indexes (`--indexes-dir`), which
schemathesis is given; its `ignored_auth` check sends the writes without it and expects 401.

The schema states each method's ``params`` (a ``oneOf`` keyed by ``method``), so schemathesis
runs against both as a user would: no hooks, no failure filter. A valid search a named index
cannot serve with its parts answers 409 ``missing_index_part`` (the index's state, not the
request, is in the way); passages from which no triple is extracted make an empty
``partial_triples`` part, not a refusal. ``--max-response-time 60`` (as
``--request-timeout``): ``POST /indexes`` encodes passages, which takes over schemathesis's
default 10 s on a loaded 2-core machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from live_server import start_server, stop_server

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index

pytest.importorskip("schemathesis")

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("schemathesis") / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(folder)
    return folder


def _schemathesis(url: str, examples: int, cwd: Path, *extra: str) -> None:
    """Run schemathesis in ``cwd`` (it keeps its state in ``.schemathesis/`` there), no hook."""
    env = {k: v for k, v in os.environ.items() if k != "SCHEMATHESIS_HOOKS"}
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{url}/openapi.json", "--checks", "all",
        "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", str(examples),
        "--seed", "0", "--generation-database", "none", "--no-color", "--request-timeout", "60",
        "--max-response-time", "60",
        *extra,
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, cwd=cwd)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-12000:]
    assert "passed" in out and "Stateful" in out, out[-3000:]


def test_schemathesis_plain_server(sparse_dir, tmp_path):
    """No token: the writes are open (loopback), every route of the served index."""
    env = {k: v for k, v in os.environ.items() if k != "HOPGRAPH_TOKEN"}
    proc, url = start_server([str(sparse_dir), "--log-level", "warning"], env=env, timeout=120)
    try:
        _schemathesis(url, 5, tmp_path)
    finally:
        stop_server(proc)


def test_schemathesis_token_and_named_indexes(sparse_dir, tmp_path):
    """A token and named indexes: the writes need the token (schemathesis checks that they
    refuse requests without it), indexes are created, searched, changed and dropped."""
    env = {**os.environ, "HOPGRAPH_TOKEN": TOKEN}
    args = [str(sparse_dir), "--indexes-dir", str(tmp_path / "named"), "--log-level", "warning"]
    proc, url = start_server(args, env=env, timeout=120)
    try:
        _schemathesis(url, 3, tmp_path, "-H", f"Authorization: Bearer {TOKEN}")
    finally:
        stop_server(proc)
