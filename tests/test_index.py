"""Index save/load: round trip, atomic writes, and clear errors for broken indexes."""

from __future__ import annotations

import json
import shutil

import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError, HopgraphError, IndexError_
from hopgraph.index import Index, available_parts, split_part_options
from hopgraph.retrieve import get_retriever


def test_round_trip_gives_identical_rankings(demo_dataset, demo_index_dir):
    built = Index.load(demo_index_dir, mmap=False)
    loaded = Index.load(demo_index_dir)
    assert loaded.corpus.ids == demo_dataset.corpus.ids
    for method in ("bm25", "bm25_rm3", "dense", "rrf", "hybrid", "composed"):
        for q in demo_dataset.questions[:4]:
            a = get_retriever(built, method).search(q.text, k=10)
            b = get_retriever(loaded, method).search(q.text, k=10)
            assert a.ids == b.ids and a.scores == pytest.approx(b.scores)


def test_manifest_records_versions_counts_checksums(demo_index_dir):
    m = json.loads((demo_index_dir / "manifest.json").read_text())
    assert m["format"] == "hopgraph-index" and m["format_version"] == 1
    assert m["corpus"]["passages"] == 44
    assert set(m["parts"]) == {"sparse", "dense"}
    assert m["parts"]["dense"]["options"]["hnsw"] is True
    assert m["parts"]["sparse"]["stats"]["passages"] == 44
    assert "parts/dense/embeddings.npy" in m["files"]
    assert all(len(f["sha256"]) == 64 for f in m["files"].values())


@pytest.fixture
def copy_index(demo_index_dir, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(demo_index_dir, dst)
    return dst


def test_corrupt_file_is_detected(copy_index):
    f = copy_index / "parts" / "dense" / "embeddings.npy"
    data = bytearray(f.read_bytes())
    data[-10] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(IndexError_, match="checksum mismatch in parts/dense/embeddings.npy"):
        Index.load(copy_index)


def test_writers_skip_checksums_but_a_new_base_checks_them(copy_index):
    """`hopgraph add` / `delete` load without checksums (sizes only: a commit reads no more of
    the base than it must); the corrupt base is refused when a new base would be written from
    it, and by `--verify`."""
    from click.testing import CliRunner

    from hopgraph.cli import cli

    f = copy_index / "parts" / "dense" / "embeddings.npy"
    data = bytearray(f.read_bytes())
    data[-10] ^= 0xFF
    f.write_bytes(bytes(data))
    first = Index.load(copy_index, verify=False).corpus.ids[0]
    res = CliRunner().invoke(cli, ["delete", str(copy_index), first, "-q", "--nice", "0"])
    assert res.exit_code == 0, res.output  # a delta commit: the base is not rewritten
    assert (copy_index / "deltas").is_dir()
    second = Index.load(copy_index, verify=False).corpus.ids[0]
    res = CliRunner().invoke(
        cli, ["delete", str(copy_index), second, "-q", "--nice", "0", "--verify"]
    )
    assert res.exit_code != 0
    assert "checksum mismatch in parts/dense/embeddings.npy" in str(res.exception)
    index = Index.load(copy_index, verify=False)
    with pytest.raises(IndexError_, match="checksum mismatch in parts/dense/embeddings.npy"):
        index.compact()
    assert len(Index.load(copy_index, verify=False)) == len(index)  # the folder is unchanged


def test_truncated_file_is_detected(copy_index):
    f = copy_index / "parts" / "sparse" / "doc_terms.data.npy"
    f.write_bytes(f.read_bytes()[:-8])
    with pytest.raises(IndexError_, match="doc_terms.data.npy has"):
        Index.load(copy_index)


def test_missing_file_is_detected(copy_index):
    (copy_index / "passages.jsonl").unlink()
    with pytest.raises(IndexError_, match="missing passages.jsonl"):
        Index.load(copy_index)


def test_partial_index_without_manifest(copy_index):
    (copy_index / "manifest.json").unlink()
    with pytest.raises(IndexError_, match="partial build"):
        Index.load(copy_index)


def test_corrupt_manifest(copy_index):
    (copy_index / "manifest.json").write_text("{not json")
    with pytest.raises(IndexError_, match="corrupt manifest"):
        Index.load(copy_index)


def test_incompatible_format_version(copy_index):
    m = json.loads((copy_index / "manifest.json").read_text())
    m["format_version"] = 99
    (copy_index / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(IndexError_, match="format version 99"):
        Index.load(copy_index)


def test_missing_folder(tmp_path):
    with pytest.raises(IndexError_, match="does not exist"):
        Index.load(tmp_path / "nope")


def test_missing_part_names_how_to_add_it(demo_dataset, tmp_path):
    index = Index.build(demo_dataset.corpus, ["sparse"], progress=False)
    with pytest.raises(ConfigError, match="no 'dense' part"):
        get_retriever(index, "rrf")
    with pytest.raises(ConfigError) as exc:
        index.part("entities")
    assert str(exc.value) == (
        "this index has no 'entities' part (it has: sparse); "
        "add it with `hopgraph add-parts INDEX_DIR --parts entities`"
    )
    # every part a method lacks in one message; a saved index is named by its folder
    index.save(tmp_path / "my ix")
    with pytest.raises(ConfigError) as exc:
        get_retriever(Index.load(tmp_path / "my ix"), "multihop")  # named: no fallback
    assert "method 'multihop' needs more index parts" in str(exc.value)
    assert "no 'entities' part (it has: sparse)" in str(exc.value)  # dense: optional
    assert "(with dense, which it ranks better with)" in str(exc.value)
    assert f"`hopgraph add-parts '{tmp_path / 'my ix'}' --parts dense,entities`" in str(exc.value)


def test_save_replaces_atomically_and_leaves_no_temp(demo_dataset, tmp_path):
    folder = tmp_path / "ix"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    first = json.loads((folder / "manifest.json").read_text())
    small = Corpus([Passage("a", "A", "alpha beta"), Passage("b", "B", "beta gamma")])
    Index.build(small, ["sparse"], progress=False).save(folder)
    assert len(Index.load(folder)) == 2
    assert first["corpus"]["passages"] == 44
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


def test_failed_save_keeps_previous_index(demo_dataset, tmp_path, monkeypatch):
    folder = tmp_path / "ix"
    index = Index.build(demo_dataset.corpus, ["sparse"], progress=False)
    index.save(folder)

    def boom(self, folder):
        raise OSError("disk full")

    monkeypatch.setattr(type(index.part("sparse")), "save", boom)
    with pytest.raises(OSError):
        index.save(folder, compact=True)
    assert len(Index.load(folder)) == 44
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


def test_add_parts_to_loaded_index(demo_dataset, tmp_path):
    folder = tmp_path / "ix"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    index = Index.load(folder)
    assert index.add_parts(["sparse", "dense"], progress=False) == ["dense"]
    index.save(folder)
    assert set(Index.load(folder).parts) == {"sparse", "dense"}


def test_unknown_part_and_options():
    small = Corpus([Passage("a", "A", "alpha")])
    with pytest.raises(ConfigError, match="unknown index part 'graph'"):
        Index.build(small, ["graph"], progress=False)
    with pytest.raises(ConfigError, match="part.option=value"):
        split_part_options({"hnsw": "1"})
    assert split_part_options({"dense.hnsw": "1"}) == {"dense": {"hnsw": "1"}}
    assert {"sparse", "dense"} <= set(available_parts())


def test_empty_corpus_is_refused():
    with pytest.raises(HopgraphError, match="empty corpus"):
        Index.build(Corpus([]), ["sparse"], progress=False)
