"""benchmarks/scale.py corpus: the N-passage corpus that buries a QA set's pool."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from hopgraph.corpus import load_dataset
from hopgraph.data import demo_dataset_path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"


@pytest.fixture(scope="module")
def scale():
    spec = importlib.util.spec_from_file_location("hopgraph_bench_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


@pytest.fixture
def small_data(tmp_path) -> Path:
    """A data folder: the demo set as the pool, two wiki-like sets (one repeating a demo
    passage) and a BEIR-style set with ``_id`` records."""
    root = tmp_path / "data"
    demo = demo_dataset_path()
    (root / "demo").mkdir(parents=True)
    for name in ("corpus.jsonl", "questions.jsonl"):
        (root / "demo" / name).write_bytes((demo / name).read_bytes())
    pool = _lines(demo / "corpus.jsonl")
    wiki = [
        {"idx": i, "title": f"Place {i} (town)", "text": f"Place {i} is a town in Ostmark. "
         f"It has {i + 2} churches. St. Anne's is the oldest. The river Velm runs past it."}
        for i in range(30)
    ]  # fmt: skip
    _write(root / "wiki_a" / "corpus.jsonl", wiki)
    dup = {"idx": 0, "title": pool[3]["title"], "text": pool[3]["text"]}
    other = [dup] + [
        {"idx": i, "title": f"Person {i}", "text": f"Person {i} (born {1900 + i}) was a painter. "
         f"She lived in Place {i}. Her work is in the U.S. National Gallery."}
        for i in range(1, 20)
    ]  # fmt: skip
    _write(root / "wiki_b" / "corpus.jsonl", other)
    beir = [{"_id": f"d{i}", "title": f"Paper {i}", "text": f"Result {i} holds."} for i in range(5)]
    _write(root / "beir" / "corpus.jsonl", beir)
    return root


SOURCES = ("demo", "wiki_a", "wiki_b", "beir")


def test_pool_first_then_real_then_synthetic(scale, small_data, tmp_path):
    out = tmp_path / "out"
    info = scale.make_corpus("demo", 400, out, small_data, sources=SOURCES, progress=False)
    rows = _lines(out / "corpus.jsonl")
    pool = _lines(demo_dataset_path() / "corpus.jsonl")
    assert len(rows) == 400 and [r["idx"] for r in rows] == list(range(400))
    assert rows[: len(pool)] == pool  # the pool keeps its idx, so the gold stays valid
    counts = {k: v["passages"] for k, v in info["by_source"].items()}
    assert counts == {
        "pool:demo": len(pool), "wiki_a": 30, "wiki_b": 19, "beir": 5,
        "synthetic": 400 - len(pool) - 54,
    }  # fmt: skip
    assert info["duplicates_skipped"] == {"wiki_b": 1}
    titles = [r["title"] for r in rows]
    assert len(set(titles)) == len(titles) and info["checks"]["titles_unique"]
    assert info["checks"]["synthetic_title_collisions"] == 0
    synthetic = rows[len(pool) + 54 :]
    real_sentences = {r["text"] for r in rows[: len(pool) + 54]}
    for r in synthetic:  # "Name (disambiguator)", made from the wiki sets, never pool or beir
        assert r["title"].startswith(("Place ", "Person ")) and r["title"].endswith(")")
        assert not r["text"].startswith(("Result", *[p["text"][:20] for p in pool]))
        assert r["text"] not in real_sentences
    assert info["sha256"] == hashlib.sha256((out / "corpus.jsonl").read_bytes()).hexdigest()
    assert json.loads((out / "scale.json").read_text())["sha256"] == info["sha256"]
    # the folder is a dataset: the demo questions with their gold titles
    ds = load_dataset(out)
    assert len(ds.questions) == 12
    for q in ds.questions:
        assert [ds.corpus.get(g).title for g in q.gold] == list(q.metadata["gold_titles"])


def test_same_arguments_same_bytes(scale, small_data, tmp_path):
    a = scale.make_corpus("demo", 300, tmp_path / "a", small_data, sources=SOURCES, progress=False)
    b = scale.make_corpus("demo", 300, tmp_path / "b", small_data, sources=SOURCES, progress=False)
    c = scale.make_corpus(
        "demo", 300, tmp_path / "c", small_data, seed=1, sources=SOURCES, progress=False
    )
    assert (tmp_path / "a" / "corpus.jsonl").read_bytes() == (
        tmp_path / "b" / "corpus.jsonl"
    ).read_bytes()
    assert a["sha256"] == b["sha256"] != c["sha256"]


def test_small_n_samples_the_other_real_passages(scale, small_data, tmp_path):
    info = scale.make_corpus(
        "demo", 60, tmp_path / "o", small_data, sources=SOURCES, progress=False
    )
    rows = _lines(tmp_path / "o" / "corpus.jsonl")
    n_pool = info["by_source"]["pool:demo"]["passages"]
    assert len(rows) == 60 and "synthetic" not in info["by_source"]
    assert sum(v["passages"] for v in info["by_source"].values()) == 60
    assert all(not r["title"].endswith(("(film)", "(album)")) for r in rows[n_pool:])
    with pytest.raises(SystemExit, match="smaller than the pool"):
        scale.make_corpus("demo", 10, tmp_path / "p", small_data, sources=SOURCES)


def test_refuses_to_overwrite(scale, small_data, tmp_path):
    scale.make_corpus("demo", 60, tmp_path / "o", small_data, sources=SOURCES, progress=False)
    with pytest.raises(SystemExit, match="--overwrite"):
        scale.make_corpus("demo", 60, tmp_path / "o", small_data, sources=SOURCES)


def test_split_sentences_and_names(scale):
    text = (
        "Teutberga( died 875) was a queen. She lived at St. Maurice's Abbey in the U.S. Army era."
    )
    assert scale.split_sentences(text) == [
        "Teutberga( died 875) was a queen.",
        "She lived at St. Maurice's Abbey in the U.S. Army era.",
    ]
    assert scale.split_sentences("John F. Kennedy won! Did he? Yes.") == [
        "John F. Kennedy won!", "Did he?", "Yes.",
    ]  # fmt: skip
    assert scale.base_name("Theodred II (Bishop of Elmham)") == "Theodred II"
    assert scale.base_name("(film)") == "(film)"


def test_real_data_byte_identical(scale, data_dir, tmp_path):
    """On the shared data: every real passage, a few synthetic ones, twice the same bytes."""
    a = scale.make_corpus("musique", 23000, tmp_path / "a", data_dir, progress=False)
    b = scale.make_corpus("musique", 23000, tmp_path / "b", data_dir, progress=False)
    assert a["sha256"] == b["sha256"]
    assert a["by_source"]["synthetic"]["passages"] == 23000 - a["real_passages_available"]
    assert a["checks"]["synthetic_title_collisions"] == 0
    ds = load_dataset(tmp_path / "a")
    orig = load_dataset(data_dir / "musique")
    assert [q.gold for q in ds.questions] == [q.gold for q in orig.questions]
    for q in orig.questions:
        for g in q.gold:
            assert ds.corpus.get(g).title == orig.corpus.get(g).title


def test_skip_pool_titles_leaves_out_other_versions_of_pool_pages(scale, small_data, tmp_path):
    """With skip_pool_titles, a passage of another set whose title a pool passage has is left
    out even when its text differs; the rest are as without it."""
    pool = _lines(small_data / "demo" / "corpus.jsonl")
    variant = {"idx": 0, "title": pool[5]["title"], "text": "Another version of this page."}
    wiki_c = [variant, {"idx": 1, "title": "Unrelated page", "text": "Nothing shared here."}]
    _write(small_data / "wiki_c" / "corpus.jsonl", wiki_c)
    n = len(pool) + 60
    kept = scale.make_corpus(
        "demo", n, tmp_path / "plain", small_data, sources=(*SOURCES, "wiki_c")
    )
    skipped = scale.make_corpus(
        "demo", n, tmp_path / "skip", small_data, sources=(*SOURCES, "wiki_c"),
        skip_pool_titles=True,
    )  # fmt: skip
    plain_texts = {r["text"] for r in _lines(tmp_path / "plain" / "corpus.jsonl")}
    skip_rows = _lines(tmp_path / "skip" / "corpus.jsonl")
    assert variant["text"] in plain_texts and kept["pool_titles_skipped"] is None
    assert variant["text"] not in {r["text"] for r in skip_rows}
    assert "Nothing shared here." in {r["text"] for r in skip_rows}
    assert skipped["pool_titles_skipped"] == {"wiki_c": 1}
    pool_titles = {r["title"] for r in pool}
    assert sum(r["title"] in pool_titles for r in skip_rows) == len(pool)  # only the pool's own


def test_built_index_makes_corpus_and_index_once(scale, small_data, tmp_path):
    """The scale benchmark's and the ranker recipe's corpora: made, indexed with `hopgraph index`
    (the default parts), and found again rather than rebuilt."""
    work = tmp_path / "work"
    corpus, index = scale.built_index("demo", 200, work, small_data, sources=SOURCES)
    assert (corpus, index) == (work / "demo-200" / "corpus", work / "demo-200" / "index")
    manifest = json.loads((index / "manifest.json").read_text())
    assert sorted(manifest["parts"]) == ["dense", "entities", "sparse"]
    assert len(_lines(corpus / "corpus.jsonl")) == 200
    build = work / "demo-200" / "build.json"
    assert json.loads(build.read_text())["wall_seconds"] > 0
    stamp = (build.stat().st_mtime_ns, (index / "manifest.json").stat().st_mtime_ns)
    assert scale.built_index("demo", 200, work, small_data, sources=SOURCES) == (corpus, index)
    assert (build.stat().st_mtime_ns, (index / "manifest.json").stat().st_mtime_ns) == stamp
