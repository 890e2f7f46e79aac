"""Staged builds (issue 38, "searchable in minutes"): the index saved searchable without its
passage vectors, the vectors encoded after and committed as the next generation; the same index
as a build in one stage; a build stopped in either stage resumes; while the vectors are pending
the index searches, refuses writes, and says how far the build is (info, /info, serve's log)."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hopgraph.cli import cli
from hopgraph.corpus import Passage
from hopgraph.data import demo_dataset_path
from hopgraph.errors import BuildPendingError, ConfigError, PartialBuildError
from hopgraph.index import Index
from hopgraph.index import batches as batches_module
from hopgraph.index.dense_options import DenseOptions
from hopgraph.index.staged import STAGED_MIN_PASSAGES, build_stage, in_stages
from hopgraph.index.streaming import build_index, partial_folder
from hopgraph.index.writes import add_parts_to_folder, compact_folder, update_folder
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.query_vectors import TOP as QV_TOP
from hopgraph.serve import Settings, create_app

BATCH = 4  # 44 demo passages: 11 batches
QUERY = "Who founded the shipyard that built SS Orrendale?"


def _stop_after_vector_batches(n: int):
    """A stand-in for ``commit_segment`` that stops the build (as Ctrl-C does) once ``n``
    batches of passage vectors are committed; it counts the first stage's batches too."""
    real = batches_module.commit_segment
    counts = {"segments": 0, "vectors": 0}

    def commit(tmp: Path, folder: Path, *args, **kwargs) -> None:
        real(tmp, folder, *args, **kwargs)
        counts[folder.parent.name] += 1
        if folder.parent.name == "vectors" and counts["vectors"] >= n:
            raise KeyboardInterrupt

    return commit, counts


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The demo corpus built in one stage."""
    out = tmp_path_factory.mktemp("whole") / "ix"
    build_index(demo_dataset_path(), out, batch_size=BATCH, progress=False, staged="off")
    return out


@pytest.fixture(scope="module")
def stopped(tmp_path_factory) -> Path:
    """A staged build of the demo corpus stopped after 2 of its 11 batches of vectors."""
    out = tmp_path_factory.mktemp("stopped") / "ix"
    commit, _ = _stop_after_vector_batches(2)
    with pytest.MonkeyPatch.context() as mp, pytest.raises(KeyboardInterrupt):
        mp.setattr(batches_module, "commit_segment", commit)
        build_index(demo_dataset_path(), out, batch_size=BATCH, progress=False, staged="on")
    return out


@pytest.fixture
def pending(stopped, tmp_path) -> Path:
    """A copy of the stopped build (its searchable index and its work folder)."""
    out = tmp_path / "ix"
    shutil.copytree(stopped, out)
    shutil.copytree(partial_folder(stopped), partial_folder(out))
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(f.relative_to(folder)): f.read_bytes()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != "manifest.json"
    }


def _same_index(a: Path, b: Path) -> None:
    """The same files, parts, options and detected settings (timings and generation aside);
    the same vectors, BM25 scores and rankings."""
    assert _files(a) == _files(b)
    ma, mb = (json.loads((f / "manifest.json").read_text()) for f in (a, b))
    for key in ("detected", "profile", "files", "corpus", "format_version"):
        assert ma[key] == mb[key], key
    assert ma["base"]["id"] == mb["base"]["id"] and "pending" not in ma
    for name in ("options", "stats"):
        assert {n: p[name] for n, p in ma["parts"].items()} == {
            n: p[name] for n, p in mb["parts"].items()
        }
    ia, ib = Index.load(a), Index.load(b)
    assert np.array_equal(ia.part("dense").embeddings, ib.part("dense").embeddings)
    for key in ("data", "indices", "indptr"):
        sa, sb = ia.part("sparse").bm25.scores[key], ib.part("sparse").bm25.scores[key]
        assert np.array_equal(sa, sb)
    for method in ("bm25", "dense", "default"):
        got = get_retriever(ia, method).search(QUERY, k=5)
        want = get_retriever(ib, method).search(QUERY, k=5)
        assert got.ids == want.ids and got.scores == pytest.approx(want.scores), method


# -- the build ------------------------------------------------------------------------------
def test_a_staged_build_is_searchable_first_and_ends_as_a_build_in_one_stage(whole, tmp_path):
    out = tmp_path / "ix"
    lines: list[str] = []
    seen: dict[str, object] = {}

    def log(line: str) -> None:
        lines.append(line)
        if line.startswith("searchable: "):  # the first stage is on disk: look at it
            seen["stage"] = build_stage(out)
            seen["parts"] = sorted(Index.load(out).parts)

    ix = build_index(
        demo_dataset_path(), out, batch_size=BATCH, progress=False, staged="on", log=log
    )
    assert seen["parts"] == ["entities", "sparse"]
    assert seen["stage"] == {
        "stage": "searchable", "pending_parts": ["dense"], "vectors_done": 0,
        "vectors_total": 44, "building": True,
    }  # fmt: skip
    searchable = next(line for line in lines if line.startswith("searchable: "))
    assert f"{out} (sparse, entities) in " in searchable and "passage vectors next" in searchable
    assert lines.index(searchable) < lines.index("merging the dense segments")
    assert ix.generation == 1 and ix.pending is None  # the next generation, complete
    assert build_stage(out) == {
        "stage": "complete", "pending_parts": [], "vectors_done": 44, "vectors_total": 44,
        "building": False,
    }  # fmt: skip
    assert not partial_folder(out).exists()
    _same_index(out, whole)


def test_a_build_stopped_while_encoding_resumes_without_redoing_the_first_stage(pending, whole):
    work = partial_folder(pending)
    assert len(list((work / "vectors").glob("[0-9]*"))) == 2
    with pytest.raises(PartialBuildError, match="staged=on"):  # it began in stages
        build_index(demo_dataset_path(), pending, batch_size=BATCH, resume=True, staged="off")
    commit, counts = _stop_after_vector_batches(10**6)
    lines: list[str] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batches_module, "commit_segment", commit)
        # staged="auto" (the default) goes on as the build began
        ix = build_index(
            demo_dataset_path(), pending, batch_size=BATCH, resume=True, progress=False,
            log=lines.append,
        )  # fmt: skip
    assert counts == {"segments": 0, "vectors": 9}  # only the missing batches of vectors
    assert "merging the dense segments" in lines
    assert not any(line.startswith(("merging the sparse", "searchable: ")) for line in lines)
    assert ix.generation == 1 and not work.exists()
    _same_index(pending, whole)


def test_a_build_stopped_in_its_first_stage_resumes(whole, tmp_path):
    out = tmp_path / "ix"

    def stop(line: str) -> None:
        if line.startswith("merging the entities"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_index(
            demo_dataset_path(), out, batch_size=BATCH, progress=False, staged="on", log=stop
        )
    assert not out.exists() and not (partial_folder(out) / "vectors").exists()
    build_index(demo_dataset_path(), out, batch_size=BATCH, resume=True, progress=False)
    _same_index(out, whole)


def test_when_a_build_runs_in_stages(tmp_path):
    order, later = ["sparse", "dense", "entities"], ["dense"]
    out = tmp_path / "ix"

    def decide(staged: str, n: int, name: str, order=order, later=later) -> bool:
        work = tmp_path / name
        work.mkdir()
        return in_stages(staged, order, later, n, out, work)

    assert decide("auto", STAGED_MIN_PASSAGES, "a") is True
    assert decide("auto", STAGED_MIN_PASSAGES - 1, "b") is False
    assert decide("auto", 10**6, "c", order=["sparse"], later=[]) is False  # no dense part
    assert decide("on", 10, "d") is True and decide("off", 10**6, "e") is False
    with pytest.raises(ConfigError, match="no dense|have none"):
        decide("on", 10, "f", order=["sparse"], later=[])
    with pytest.raises(ConfigError, match="staged must be one of"):
        decide("sometimes", 10, "g")
    out.mkdir()
    (out / "manifest.json").write_text("{}")  # a rebuild keeps the old index until the end
    assert decide("auto", 10**6, "h") is False
    # decided once: a resumed build goes on as it began, whatever auto would say now
    assert in_stages("auto", order, later, 10, out, tmp_path / "a") is True
    with pytest.raises(PartialBuildError, match="started with staged=on"):
        in_stages("off", order, later, 10, out, tmp_path / "a")


# -- while the vectors are pending ----------------------------------------------------------
def test_the_searchable_stage_searches_and_refuses_every_write(pending):
    ix = Index.load(pending)
    assert sorted(ix.parts) == ["entities", "sparse"]
    assert {k: v for k, v in ix.pending.items() if k != "options"} == {
        "parts": ["dense"], "passages": 44,
    }  # fmt: skip
    # the pending part's options: a search encodes with its model before the vectors exist
    assert ix.pending["options"]["dense"] == asdict(DenseOptions())
    assert build_stage(pending) == {
        "stage": "searchable", "pending_parts": ["dense"], "vectors_done": 8,
        "vectors_total": 44, "building": True,
    }  # fmt: skip
    assert get_retriever(ix, "bm25").search(QUERY, k=3).ids
    found = get_retriever(ix).search(QUERY, k=3)  # without a method: what the index allows
    assert found.ids and found.info["query_vectors"] == QV_TOP  # the top reranked meanwhile
    with pytest.raises(ConfigError, match="no 'dense' part yet.*encoding its passage vectors"):
        get_retriever(ix, "dense")
    refused = "still being built: passage vectors 8 / 44 encoded; writes open when the build"
    before = (pending / "manifest.json").read_bytes()
    new = Passage("z1", "Zebra", "Plains zebras graze on the savanna.")
    with pytest.raises(BuildPendingError, match=refused):
        update_folder(pending, add=[new], delete=[], progress=False)
    with pytest.raises(BuildPendingError, match=refused):
        update_folder(pending, add=[], delete=[ix.corpus.ids[0]], progress=False)
    with pytest.raises(BuildPendingError, match=refused):
        compact_folder(pending)
    with pytest.raises(BuildPendingError, match=refused):
        add_parts_to_folder(pending, ["dense"], progress=False)
    with pytest.raises(BuildPendingError, match=refused):  # the library, without the lock
        ix.updated(add=[new]).save(pending)
    assert (pending / "manifest.json").read_bytes() == before


def test_the_command_line_builds_in_stages_and_info_shows_the_stage(tmp_path):
    out = tmp_path / "ix"
    args = ["index", str(demo_dataset_path()), "-o", str(out), "--batch-size", str(BATCH), "-q"]
    commit, _ = _stop_after_vector_batches(3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batches_module, "commit_segment", commit)
        r = CliRunner().invoke(cli, [*args, "--staged", "on"])
    assert r.exit_code == 130 and "searchable: " in r.output and "--resume" in r.output
    r = CliRunner().invoke(cli, ["info", str(out)])
    assert r.exit_code == 0
    info = json.loads(r.stdout)
    assert info["pending"]["parts"] == ["dense"] and info["pending"]["passages"] == 44
    assert info["pending"]["options"]["dense"]["model"] == DenseOptions().model
    assert info["build"]["stage"] == "searchable" and info["build"]["vectors_done"] == 12
    assert "passage vectors 12 / 44 encoded (27 %)" in r.stderr and "--resume" in r.stderr
    first = Index.load(out).corpus.ids[0]
    r = CliRunner().invoke(cli, ["delete", str(out), first, "--nice", "0", "-q"])
    assert isinstance(r.exception, BuildPendingError) and "12 / 44 encoded" in str(r.exception)
    r = CliRunner().invoke(cli, [*args, "--resume"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["info", str(out)])
    assert json.loads(r.stdout)["build"]["stage"] == "complete" and not r.stderr


def test_index_help_documents_staged_with_its_default():
    r = CliRunner().invoke(cli, ["index", "--help"])
    flat = " ".join(r.output.split())
    assert "--staged [auto|on|off]" in flat and "[default: auto]" in flat
    assert f"{STAGED_MIN_PASSAGES:,} passages" in flat


def test_the_server_says_the_stage_refuses_writes_and_loads_the_complete_index(pending, caplog):
    caplog.set_level(logging.INFO, logger="hopgraph.serve")
    app = create_app(str(pending), Settings(reload_interval=0))  # reloaded when the test asks
    served = app.state.served
    with TestClient(app) as client:
        info = client.get("/info").json()
        assert info["build"] == {
            "stage": "searchable", "pending_parts": ["dense"], "vectors_done": 8,
            "vectors_total": 44, "building": True,
        }  # fmt: skip
        assert "encoding the passage vectors (8 / 44)" in info["default_note"]
        r = client.post("/search", json={"query": QUERY, "k": 3})
        assert r.status_code == 200 and r.json()["hits"]
        r = client.post("/search", json={"query": QUERY, "k": 3, "method": "dense"})
        assert r.status_code == 409 and r.json()["error"]["type"] == "missing_index_part"
        assert "restart" not in r.json()["error"]["message"]
        r = client.post("/passages", json={"passages": [{"id": "z1", "text": "Zebra."}]})
        assert r.status_code == 409 and r.json()["error"]["type"] == "index_building"
        assert "passage vectors 8 / 44 encoded" in r.json()["error"]["message"]
        r = client.post("/passages/delete", json={"ids": ["nope"]})
        assert r.status_code == 409 and r.json()["error"]["type"] == "index_building"

        build_index(demo_dataset_path(), pending, batch_size=BATCH, resume=True, progress=False)
        assert served.reload_if_changed()
        assert any("index complete: passage vectors in" in m for m in caplog.messages)
        info = client.get("/info").json()
        assert info["build"]["stage"] == "complete" and info["generation"] == 1
        assert info["default_used"] == info["default_method"]
        r = client.post("/search", json={"query": QUERY, "k": 3, "method": "dense"})
        assert r.status_code == 200
        r = client.post("/passages", json={"passages": [{"id": "z1", "text": "Zebra."}]})
        assert r.status_code == 201, r.text


def test_serve_says_the_stage_at_start(pending, monkeypatch):
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    r = CliRunner().invoke(cli, ["serve", str(pending), "--reload-interval", "0"])
    assert r.exit_code == 0, r.output
    assert "build stage: searchable without dense: passage vectors 8 / 44 encoded" in r.output
    assert "writes are refused until the build commits the complete index" in r.output
    assert "add-parts" not in r.output
