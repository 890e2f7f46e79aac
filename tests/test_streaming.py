"""Streaming, resumable builds: batches of passages into segments, merged into the same index
a build in one go makes; a build killed mid-way resumes to the same bytes as one that never
stopped."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hopgraph.config import make_options
from hopgraph.corpus import iter_corpus, load_corpus, load_dataset
from hopgraph.corpus.filecorpus import FileCorpus, write_passages
from hopgraph.data import demo_dataset_path
from hopgraph.errors import CorpusError, OutputExistsError
from hopgraph.index import Index
from hopgraph.index.part import merge_records
from hopgraph.index.streaming import PartialBuildError, build_index, partial_folder
from hopgraph.retrieve import get_retriever

PARTS = ["sparse", "entities"]


def _files(folder: Path) -> dict[str, str]:
    """sha256 of every file of an index folder but the manifest (which holds timings)."""
    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name != "manifest.json"
    }


def _manifest(folder: Path) -> dict:
    m = json.loads((folder / "manifest.json").read_text())
    for key in ("created",):
        m.pop(key)
    for part in m["parts"].values():
        part.pop("build_seconds")
    return m


def test_file_corpus_reads_what_was_written(tmp_path):
    corpus = load_corpus(demo_dataset_path())
    offsets, ids = write_passages(corpus, tmp_path / "p.jsonl")
    fc = FileCorpus(tmp_path / "p.jsonl", offsets, ids)
    assert len(fc) == len(corpus) and fc.ids == corpus.ids
    assert list(fc) == list(corpus)
    assert fc[3] == corpus[3] and fc[-1] == corpus[-1]
    assert fc[5:9] == list(corpus[5:9]) and fc[::7] == list(corpus[::7])
    pid = corpus[10].id
    assert pid in fc and fc.position(pid) == 10 and fc.get(pid) == corpus[10]
    assert FileCorpus(tmp_path / "p.jsonl").ids == ids  # offsets and ids read from the file
    with pytest.raises(IndexError):
        fc[len(corpus)]


def test_iter_corpus_streams_what_load_corpus_reads(tmp_path):
    path = demo_dataset_path()
    assert list(iter_corpus(path)) == list(load_corpus(path))
    assert list(iter_corpus(path, chunk_words=20)) == list(load_corpus(path, chunk_words=20))
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n')
    with pytest.raises(CorpusError, match=r"dup\.jsonl:3: duplicate id a"):
        list(iter_corpus(dup))


def test_merge_records_numbers_keys_as_one_pass():
    import scipy.sparse as sp

    a = sp.csr_matrix(np.array([[1, 0], [2, 3]], np.int32))  # keys x, y
    b = sp.csr_matrix(np.array([[0, 4, 5]], np.int32))  # keys y, z, x
    merged, keys = merge_records([(a, ["x", "y"]), (b, ["y", "z", "x"])])
    assert keys == ["x", "y", "z"]
    assert merged.toarray().tolist() == [[1, 0, 0], [2, 3, 0], [5, 0, 4]]


def test_streamed_index_equals_one_built_in_memory(tmp_path):
    """Batches of 5 passages, merged: the same sparse and entity arrays, vectors to float
    rounding, the same rankings as Index.build over the whole corpus."""
    path = demo_dataset_path()
    ix = build_index(path, tmp_path / "ix", batch_size=5, progress=False)
    ref = Index.build(load_corpus(path), progress=False)
    assert ix.detected == ref.detected and sorted(ix.parts) == sorted(ref.parts)
    a, b = ix.parts, ref.parts
    assert a["sparse"].vocab == b["sparse"].vocab
    assert (a["sparse"].doc_terms != b["sparse"].doc_terms).nnz == 0
    for key in ("data", "indices", "indptr"):
        assert np.array_equal(a["sparse"].bm25.scores[key], b["sparse"].bm25.scores[key])
    assert a["entities"].names == b["entities"].names
    assert (a["entities"].mentions != b["entities"].mentions).nnz == 0
    assert (a["entities"].owns != b["entities"].owns).nnz == 0
    wa, wb = a["entities"].words, b["entities"].words  # the word postings, merged from batches
    assert wa is not None and wb is not None and wa.keys == wb.keys
    assert np.array_equal(wa.indptr, wb.indptr) and np.array_equal(wa.rows, wb.rows)
    np.testing.assert_allclose(a["dense"].embeddings, b["dense"].embeddings, atol=1e-5)
    assert not partial_folder(tmp_path / "ix").exists()  # the work folder is gone
    loaded = Index.load(tmp_path / "ix")
    assert loaded.corpus.ids == ref.corpus.ids
    questions = [q.text for q in load_dataset(demo_dataset_path()).questions]
    for method in ("bm25", "graph", "default"):
        for q in questions:
            got = [h.id for h in get_retriever(loaded, method).search(q, k=5)]
            want = [h.id for h in get_retriever(ref, method).search(q, k=5)]
            assert got == want, (method, q)


def _index_cmd(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "hopgraph.cli", "index", str(demo_dataset_path()), "-o", str(out),
        "--batch-size", "2", "-q", *extra,
    ]  # fmt: skip


def _stop_mid_build(out: Path, sig: int) -> subprocess.CompletedProcess:
    """Start ``hopgraph index`` and send it ``sig`` once three batches are written. The build
    is frozen (SIGSTOP) the moment they are seen, so a busy machine that schedules this test
    late cannot let it run to its end before the signal is sent."""
    segments = partial_folder(out) / "segments"
    # Ctrl-C as in a terminal: a test run started in the background (`cmd &` in a script) hands
    # its children SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    proc = subprocess.Popen(
        _index_cmd(out),
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if segments.exists() and len(list(segments.glob("[0-9]*"))) >= 3:
            proc.send_signal(signal.SIGSTOP)
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the build ended before it could be stopped"
    done = len(list(segments.glob("[0-9]*")))
    assert done < 22, f"all {done} batches were written before the build was frozen"
    proc.send_signal(sig)
    proc.send_signal(signal.SIGCONT)
    _, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", err)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_build_stopped_by_ctrl_c_then_killed_resumes_to_the_same_index(tmp_path):
    whole = tmp_path / "whole"
    subprocess.run(_index_cmd(whole), check=True, capture_output=True)

    out = tmp_path / "ix"
    stopped = _stop_mid_build(out, signal.SIGINT)  # Ctrl-C
    assert stopped.returncode == 130 and "--resume" in stopped.stderr
    assert not out.exists() and partial_folder(out).exists()
    done = len(list((partial_folder(out) / "segments").glob("[0-9]*")))

    again = subprocess.run(_index_cmd(out), capture_output=True, text=True)
    assert again.returncode != 0 and "--resume" in again.stderr  # never starts over silently

    resumed = subprocess.Popen(_index_cmd(out, "--resume"), stderr=subprocess.PIPE, text=True)
    segments = partial_folder(out) / "segments"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and resumed.poll() is None:
        if len(list(segments.glob("[0-9]*"))) >= done + 2:
            break
        time.sleep(0.005)
    assert resumed.poll() is None
    resumed.send_signal(signal.SIGKILL)  # no clean-up at all this time
    resumed.wait(timeout=60)
    assert not out.exists()

    final = subprocess.run(_index_cmd(out, "--resume"), capture_output=True, text=True)
    assert final.returncode == 0, final.stderr
    assert "resuming" in final.stderr
    assert not partial_folder(out).exists()
    assert _files(out) == _files(whole)
    assert _manifest(out) == _manifest(whole)
    Index.load(out)  # every checksum verified


def test_resume_refuses_a_different_plan(tmp_path):
    out = tmp_path / "ix"
    with pytest.raises(KeyboardInterrupt):
        build_index(
            demo_dataset_path(), out, PARTS, batch_size=4, progress=False,
            log=_interrupt_at("merging"),
        )  # fmt: skip
    with pytest.raises(PartialBuildError, match="batch_size: 4 now 8"):
        build_index(demo_dataset_path(), out, PARTS, batch_size=8, resume=True, progress=False)
    ix = build_index(demo_dataset_path(), out, PARTS, batch_size=4, resume=True, progress=False)
    assert len(ix) == len(load_corpus(demo_dataset_path()))


def test_resume_with_nothing_to_resume_builds(tmp_path):
    lines = []
    ix = build_index(
        demo_dataset_path(), tmp_path / "ix", ["sparse"], resume=True, progress=False,
        log=lines.append,
    )  # fmt: skip
    assert any("nothing to resume" in line for line in lines) and len(ix) > 0


def test_empty_text_is_refused_before_any_part_is_built(tmp_path):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"id": "a", "text": "fine"}\n{"id": "b", "text": "   "}\n')
    with pytest.raises(CorpusError):
        build_index(bad, tmp_path / "ix", ["sparse"], progress=False)
    assert not (tmp_path / "ix").exists()


def _interrupt_at(stage: str):
    def log(line: str) -> None:
        if line.startswith(stage):
            raise KeyboardInterrupt

    return log


def test_small_corpus_in_one_batch_matches_many(tmp_path):
    one = build_index(demo_dataset_path(), tmp_path / "a", PARTS, batch_size=10_000, progress=False)
    many = build_index(demo_dataset_path(), tmp_path / "b", PARTS, batch_size=3, progress=False)
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert one.corpus.ids == many.corpus.ids


def test_a_loaded_index_reads_its_own_passages_after_the_folder_is_replaced(tmp_path):
    """Passages are read on demand from the file the index was loaded from: saving another
    index over the folder does not change what an index loaded before reads."""
    from hopgraph.corpus import Corpus, Passage

    first = Corpus([Passage(f"a{i}", f"Alpha {i}", f"alpha text {i}") for i in range(5)])
    second = Corpus([Passage(f"b{i}", f"Beta {i}", f"beta text number {i}") for i in range(7)])
    Index.build(first, ["sparse"], progress=False).save(tmp_path / "ix")
    loaded = Index.load(tmp_path / "ix")
    assert isinstance(loaded.corpus, FileCorpus)
    Index.build(second, ["sparse"], progress=False).save(tmp_path / "ix")
    assert list(loaded.corpus) == list(first) and loaded.corpus[4] == first[4]
    assert list(Index.load(tmp_path / "ix").corpus) == list(second)


def test_resume_sees_documents_changed_in_subfolders_not_its_own_output(tmp_path):
    """A folder of documents may nest them: a file changed in a subfolder makes the plan
    differ; the index being built inside the corpus folder does not."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for i in range(6):
        where = docs / "sub" if i % 2 else docs
        (where / f"d{i}.txt").write_text(f"Document {i} is about the river Velmora {i}.\n")
    out = docs / "ix"  # inside the corpus folder
    with pytest.raises(KeyboardInterrupt):
        build_index(docs, out, ["sparse"], batch_size=2, progress=False,
                    log=_interrupt_at("merging"))  # fmt: skip
    (docs / "sub" / "d1.txt").write_text("Document 1 changed while the build was stopped.\n")
    with pytest.raises(PartialBuildError, match="source_stat"):
        build_index(docs, out, ["sparse"], batch_size=2, resume=True, progress=False)
    (docs / "sub" / "d1.txt").unlink()
    shutil.rmtree(partial_folder(out))
    with pytest.raises(KeyboardInterrupt):
        build_index(docs, out, ["sparse"], batch_size=2, progress=False,
                    log=_interrupt_at("merging"))  # fmt: skip
    ix = build_index(docs, out, ["sparse"], batch_size=2, resume=True, progress=False)
    assert len(ix) == 5


def _tree(folder: Path) -> dict[str, str]:
    """sha256 of every file under ``folder``, the manifest included."""
    return {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file()
    }


def test_a_build_refuses_what_is_at_its_output_unless_told(tmp_path):
    path = demo_dataset_path()
    out = tmp_path / "ix"
    build_index(path, out, ["sparse"], progress=False)
    before = _tree(out)
    with pytest.raises(OutputExistsError, match="already holds an index"):
        build_index(path, out, PARTS, progress=False)
    with pytest.raises(OutputExistsError, match="nothing to resume"):
        build_index(path, out, ["sparse"], resume=True, progress=False)
    assert _tree(out) == before and not partial_folder(out).exists()

    notes = tmp_path / "notes"  # not an index: what is there is named
    (notes / "drafts").mkdir(parents=True)
    (notes / "a.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match=r"not an index but holds 2 .*\(a\.txt, drafts/\)"):
        build_index(path, notes, ["sparse"], progress=False)
    assert (notes / "a.txt").read_text() == "mine" and not partial_folder(notes).exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputExistsError, match="is a file"):
        build_index(path, tmp_path / "file", ["sparse"], progress=False, overwrite=True)
    (tmp_path / "empty").mkdir()
    assert len(build_index(path, tmp_path / "empty", ["sparse"], progress=False)) > 0

    # overwrite: the old index stays until the new one is complete; a stopped build asked to
    # replace it resumes without being told again
    with pytest.raises(KeyboardInterrupt):
        build_index(
            path, out, PARTS, overwrite=True, progress=False, log=_interrupt_at("merging")
        )  # fmt: skip
    assert _tree(out) == before
    ix = build_index(path, out, PARTS, resume=True, progress=False)
    assert sorted(ix.parts) == sorted(PARTS) and _tree(out) != before


def test_the_indexing_bar_moves_within_a_batch_and_reading_is_counted(tmp_path, capfd):
    """One batch of all 44 passages, encoded 4 at a time: the indexing bar moves as the
    encoder's batches end (not once at the batch's end) and stops at exactly 44; a bar counts
    the passages read. TQDM_MININTERVAL=0 and TQDM_MINITERS=1 make tqdm print every update."""
    n = len(load_corpus(demo_dataset_path()))
    cmd = [
        sys.executable, "-m", "hopgraph.cli", "index", str(demo_dataset_path()),
        "-o", str(tmp_path / "ix"), "--parts", "sparse,dense", "--set", "dense.batch_size=4",
        "--batch-size", "1000",
    ]  # fmt: skip
    env = {**os.environ, "TQDM_MININTERVAL": "0", "TQDM_MINITERS": "1"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    shown = [int(m) for m in re.findall(rf"indexing:[^|]*\|[^|]*\| *(\d+)/{n}\b", done.stderr)]
    assert shown and shown[-1] == n and shown == sorted(shown), shown
    assert len(set(shown) - {0, n}) >= 5, shown  # sparse's end, then the encoder's batches
    read = [int(m) for m in re.findall(r"reading: (\d+) passages", done.stderr)]
    assert read and read[-1] == n, done.stderr

    build_index(demo_dataset_path(), tmp_path / "quiet", ["sparse"], progress=False)
    err = capfd.readouterr().err
    assert "reading:" not in err and "indexing:" not in err


def test_dense_segments_merge_in_order_and_leave_no_segment_mapped(
    tmp_path, demo_dataset, monkeypatch
):
    """The merged vectors are the segments' rows in order, and no segment file is still mapped
    when the part (its HNSW graph) is made from them: at 1M the float32 segments' 1.5 GB of
    pages stayed resident beside the graph."""
    from hopgraph.index.dense import ENCODER_FILE, DensePart

    rng = np.random.default_rng(0)
    blocks = [rng.standard_normal((k, 384)).astype(np.float32) for k in (3, 5, 2)]
    blocks = [b / np.linalg.norm(b, axis=1, keepdims=True) for b in blocks]
    folders = []
    for i, b in enumerate(blocks):
        f = tmp_path / f"seg{i}"
        f.mkdir()
        np.save(f / "embeddings.npy", b)
        (f / ENCODER_FILE).write_text("same")
        folders.append(f)
    maps = Path("/proc/self/maps")
    seen = []
    make = DensePart.from_vectors.__func__

    def from_vectors(cls, options, vectors, **kw):
        seen.append(maps.read_text() if maps.exists() else "")
        return make(cls, options, vectors, **kw)

    monkeypatch.setattr(DensePart, "from_vectors", classmethod(from_vectors))
    options = make_options(DensePart.Options, {}, what="dense")
    part = DensePart.from_segments(demo_dataset.corpus, options, folders, {})
    np.testing.assert_array_equal(part.embeddings, np.concatenate(blocks))
    assert len(seen) == 1 and str(tmp_path) not in seen[0]


def test_heap_trim_runs_where_glibc_is():
    from hopgraph import heap

    assert heap.trim() is (heap.libc() is not None)
