"""hopgraph eval DATASET --index INDEX_DIR: evaluating against a prebuilt index, no rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError
from hopgraph.eval.prebuilt import GoldNotInIndexError

QUALITY = ("recall@1", "recall@2", "recall@5", "recall@10", "hit@10", "mrr", "ndcg@10", "pr@10")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _index(corpus: Path, out: Path) -> Path:
    r = run("index", str(corpus), "-o", str(out), "--parts", "sparse", "-q")
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture(scope="module")
def demo_sparse(tmp_path_factory) -> Path:
    """A sparse index of the demo corpus (the eval path's own corpus)."""
    return _index(demo_dataset_path(), tmp_path_factory.mktemp("ix") / "demo")


def test_same_numbers_as_the_normal_eval(demo_sparse, tmp_path):
    demo = str(demo_dataset_path())
    common = ("--method", "bm25", "-q", "--per-query")
    r = run("eval", demo, "--index", str(demo_sparse), "--json", str(tmp_path / "a.json"), *common)
    assert r.exit_code == 0, r.output
    assert "loaded index" in r.output and "19 gold passages found" in r.output
    cache = str(tmp_path / "cache")
    r = run("eval", demo, "--index-dir", cache, "--json", str(tmp_path / "b.json"), *common)
    assert r.exit_code == 0, r.output
    a = json.loads((tmp_path / "a.json").read_text())
    b = json.loads((tmp_path / "b.json").read_text())
    assert a["n_questions"] == b["n_questions"] == 12
    assert {k: a[k] for k in QUALITY} == {k: b[k] for k in QUALITY}
    assert [q["top10"] for q in a["per_query"]] == [q["top10"] for q in b["per_query"]]


def test_pool_buried_in_a_larger_corpus(tmp_path):
    """The demo pool first (its idx kept), then other passages: the gold ids still match, and
    the extra passages are searched too."""
    pool = _rows(demo_dataset_path() / "corpus.jsonl")
    extra = [
        {"idx": len(pool) + i, "title": f"{p['title']} (novel)", "text": p["text"]}
        for i, p in enumerate(pool)
    ]
    ix = _index(_write(tmp_path / "big" / "corpus.jsonl", pool + extra), tmp_path / "ix")
    out = tmp_path / "r.json"
    r = run(
        "eval", str(demo_dataset_path()), "--index", str(ix), "--method", "bm25", "-q",
        "--per-query", "--json", str(out), "--limit", "5",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"({2 * len(pool)} passages; parts: sparse)" in r.output
    data = json.loads(out.read_text())
    assert data["n_questions"] == 5
    top = [i for q in data["per_query"] for i in q["top10"]]
    assert any(int(i) >= len(pool) for i in top)  # the copies compete with the pool


def test_some_gold_missing_is_an_error(tmp_path):
    pool = _rows(demo_dataset_path() / "corpus.jsonl")
    ix = _index(_write(tmp_path / "c" / "corpus.jsonl", pool[:20]), tmp_path / "ix")
    r = run("eval", str(demo_dataset_path()), "--index", str(ix), "--method", "bm25", "-q")
    assert isinstance(r.exception, GoldNotInIndexError), r.output
    msg = str(r.exception)
    assert "of 12 questions of demo have gold passages" in msg and "e.g. '" in msg
    assert "hopgraph index" in msg and "scale.py corpus" in msg


def test_no_gold_at_all_is_another_error(tmp_path):
    rows = [{"id": f"x{p['idx']}", "title": p["title"], "text": p["text"]} for p in _rows(
        demo_dataset_path() / "corpus.jsonl"
    )]  # fmt: skip
    ix = _index(_write(tmp_path / "c.jsonl", rows), tmp_path / "ix")
    r = run("eval", str(demo_dataset_path()), "--index", str(ix), "--method", "bm25", "-q")
    assert isinstance(r.exception, GoldNotInIndexError)
    assert "none of the 19 gold passages" in str(r.exception)


def test_colliding_ids_with_other_titles_are_an_error(tmp_path):
    pool = _rows(demo_dataset_path() / "corpus.jsonl")
    shifted = [{**p, "title": pool[(i + 1) % len(pool)]["title"]} for i, p in enumerate(pool)]
    ix = _index(_write(tmp_path / "c" / "corpus.jsonl", shifted), tmp_path / "ix")
    r = run("eval", str(demo_dataset_path()), "--index", str(ix), "--method", "bm25", "-q")
    assert isinstance(r.exception, GoldNotInIndexError)
    assert "19 of 19 gold passages of demo have another title" in str(r.exception)


def test_missing_parts_message(demo_sparse):
    r = run("eval", str(demo_dataset_path()), "--index", str(demo_sparse), "--method", "dense")
    assert isinstance(r.exception, ConfigError)
    assert "hopgraph add-parts" in str(r.exception) and "--parts dense" in str(r.exception)


@pytest.mark.parametrize(
    "extra",
    [
        ("--pool-by", "db_id"),
        ("--index-set", "entities.ner=regex"),
        ("--preset", "sprig"),
        ("--index-dir", "somewhere"),
    ],
)
def test_incompatible_options(demo_sparse, extra):
    r = run("eval", str(demo_dataset_path()), "--index", str(demo_sparse), *extra)
    assert r.exit_code == 2 and "cannot be combined with" in r.output and extra[0] in r.output
