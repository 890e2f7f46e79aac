"""Metadata filters: the parser and its semantics, and that every method's filtered ranking is
its unfiltered ranking restricted to the matching passages (or, for the methods that draw
candidates from the matching passages first, holds only matching passages and agrees with
that restriction as far as the unfiltered candidates reach)."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import ConfigError
from hopgraph.filters import MetadataTable, matching_rows, validate_filter
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever, list_methods, method_class
from hopgraph.retrieve.base import allowed_rows

# --------------------------------------------------------------------------- semantics

ROWS = [
    {"year": 2020, "tags": ["a", "b"], "lang": "en", "date": "2020-05-01"},
    {"year": 2019.0, "lang": "de", "date": "2019-12-31"},
    None,
    {"year": True, "author": {"name": "Ada"}, "date": 7},
    {"year": "2021", "lang": "en", "tags": "b"},
]


@pytest.mark.parametrize(
    "spec, rows",
    [
        ({"year": 2020}, [0]),
        ({"year": 2019}, [1]),  # 2019 == 2019.0
        ({"year": True}, [3]),  # True is not 1
        ({"year": {"$gte": 2019}}, [0, 1]),  # strings and booleans are not numbers
        ({"year": {"$gt": 2019, "$lt": 2021}}, [0]),
        ({"date": {"$gte": "2020-01-01"}}, [0]),  # strings with strings, 7 is not a string
        ({"tags": "b"}, [0, 4]),  # a list matches when an element does
        ({"tags": {"$in": ["a", "z"]}}, [0]),
        ({"lang": {"$ne": "en"}}, [1, 2, 3]),  # $ne matches a missing field
        ({"lang": {"$nin": ["en", "de"]}}, [2, 3]),
        ({"lang": "en", "tags": "b"}, [0, 4]),
        ({"author.name": "Ada"}, [3]),
        ({"$or": [{"lang": "de"}, {"author.name": "Ada"}]}, [1, 3]),
        ({"$and": [{"lang": "en"}, {"year": {"$lt": 2100}}]}, [0]),
        ({"$not": {"lang": "en"}}, [1, 2, 3]),
        ({"lang": None}, []),  # null equals an explicit null only
        ({"missing": {"$exists_not_an_op": 1}}, None),
    ],
)
def test_semantics(spec, rows):
    table = MetadataTable(ROWS)
    if rows is None:
        with pytest.raises(ConfigError, match="unknown operator"):
            table.mask(spec)
    else:
        assert np.flatnonzero(table.mask(spec)).tolist() == rows


@pytest.mark.parametrize(
    "spec, match",
    [
        ([1], "must be an object"),
        ({"$foo": 1}, "unknown operator '\\$foo'"),
        ({"year": {"$in": 2020}}, "takes a list"),
        ({"year": {"$gt": [1]}}, "compares with a number or a string"),
        ({"year": {"$eq": {"a": 1}}}, "takes a string, number"),
        ({"$or": []}, "non-empty list"),
        ({"$and": [{}]}, "is empty"),
        ({"": 1}, "non-empty strings"),
    ],
)
def test_bad_filters_say_what(spec, match):
    with pytest.raises(ConfigError, match=match):
        validate_filter(spec)


def test_no_filter_is_none_and_masks_are_cached():
    corpus = Corpus([Passage(f"p{i}", "", f"text {i}", {"i": i}) for i in range(5)])
    assert matching_rows(corpus, None) is None and matching_rows(corpus, {}) is None
    a = matching_rows(corpus, {"i": {"$lt": 2}})
    assert a.tolist() == [True, True, False, False, False]
    assert matching_rows(corpus, {"i": {"$lt": 2}}) is a  # kept, not recomputed
    with pytest.raises(ValueError):
        a[0] = False  # shared between searches: read-only


# --------------------------------------------------------------------------- every method


@pytest.fixture(scope="module")
def meta_index(demo_dataset):
    """The demo corpus with metadata, indexed with every part the built-in methods need."""
    from hopgraph.defaults import DEFAULT_PARTS, detected_options

    passages = [
        Passage(p.id, p.title, p.text, {"year": 2000 + i % 7, "group": "ab"[i % 2]})
        for i, p in enumerate(demo_dataset.corpus)
    ]
    corpus = Corpus(passages)
    parts = list(dict.fromkeys([*DEFAULT_PARTS, "links", "corpus_graph", "triples",
                                "partial_triples", "same_as"]))  # fmt: skip
    options, _ = detected_options(corpus, parts)
    return Index.build(corpus, parts, options, progress=False)


def _methods(index):
    out = []
    for name in list_methods():
        cls = method_class(name)
        try:
            r = get_retriever(index, name)
        except Exception:  # methods that need a model folder (rerank, gar, fastinsight, ...)
            continue
        out.append((name, cls, r))
    return out


FILTER = {"year": {"$in": [2001, 2004]}, "group": "a"}
# methods that filter natively and still give exactly their unfiltered ranking restricted
EXACT_NATIVE = {"bm25", "dense", "hybrid", "bm25_2step", "bm25_rm3", "tfidf_graph", "graph",
                "graph_bm25_fallback", "graph_hybrid", "graph_dense", "graph_rrf"}  # fmt: skip


def test_every_method_ranks_only_matching_passages_as_restricted(meta_index, demo_dataset):
    allowed = matching_rows(meta_index.corpus, FILTER)
    n, n_ok = len(meta_index.corpus), int(allowed.sum())
    assert 0 < n_ok < n / 4
    queries = [q.text for q in demo_dataset.questions[:4]]
    checked = []
    for name, cls, r in _methods(meta_index):
        full = r.search_batch(queries, k=n)
        got = r.search_batch(queries, k=10, filter=FILTER)
        for q, f, g in zip(queries, full, got, strict=True):
            pos = [meta_index.corpus.position(i) for i in g.ids]
            assert all(allowed[pos]), (name, q)
            assert len(g.ids) == len(set(g.ids))
            want = [i for i in f.ids if allowed[meta_index.corpus.position(i)]]
            if not cls.filters_natively:
                assert g.ids == want[:10], (name, q)
                assert g.scores == [f.scores[f.ids.index(i)] for i in g.ids]
            elif name == "multihop":  # exact over its candidates, then matching ones by RRF
                cands = set(f.ids[: f.info["candidates"]])
                head = [i for i in want if i in cands][:10]
                assert g.ids[: len(head)] == head, (name, q)
                assert len(g.ids) == min(10, n_ok)
            elif name in EXACT_NATIVE:  # the final scores masked: the exact restriction
                assert g.ids == want[:10], (name, q)
            else:  # candidates drawn from the matching passages first: never fewer hits
                assert min(10, len(want)) <= len(g.ids) <= min(10, n_ok), (name, q)
                assert not want or set(want[:10]) & set(g.ids), (name, q)
            assert g.info["filter_matches"] == n_ok
        checked.append(name)
        assert allowed_rows() is None  # the filter does not leak past the search
    covered = {"bm25", "dense", "multihop", "rrf", "graph", "griever", "grapher_gcs", "composed"}
    assert covered <= set(checked)


def test_filter_matching_nothing_or_everything(meta_index, demo_dataset):
    q = demo_dataset.questions[0].text
    r = get_retriever(meta_index)
    assert r.search(q, k=5, filter={"year": 1900}).ids == []
    assert r.search(q, k=5, filter={"year": {"$gte": 2000}}).ids == r.search(q, k=5).ids
    one = r.search(q, k=5, filter={"year": 2003, "group": "b"})
    assert 0 < len(one.ids) <= 5
    with pytest.raises(ConfigError, match="unknown operator"):
        r.search(q, k=5, filter={"year": {"$between": [1, 2]}})


def test_explanations_follow_the_filtered_hits(meta_index, demo_dataset):
    q = demo_dataset.questions[1].text
    for method in ("rrf", "multihop"):
        g = get_retriever(meta_index, method).search(q, k=5, filter={"group": "b"})
        assert len(g.explanations) == len(g.ids) > 0


# --------------------------------------------------------------------------- CLI and HTTP


@pytest.fixture(scope="module")
def meta_index_dir(meta_index, tmp_path_factory):
    folder = tmp_path_factory.mktemp("filters") / "ix"
    meta_index.save(folder)
    return folder


def test_cli_filter(meta_index_dir, meta_index, demo_dataset):
    import json

    from click.testing import CliRunner

    from hopgraph.cli import cli

    q = demo_dataset.questions[0].text
    spec = {"group": "b", "year": {"$lte": 2003}}
    res = CliRunner().invoke(
        cli, ["search", str(meta_index_dir), q, "-k", "4", "--json", "--filter", json.dumps(spec)]
    )
    assert res.exit_code == 0, res.output
    ids = [h["id"] for h in json.loads(res.stdout)["hits"]]
    assert ids == get_retriever(meta_index).search(q, k=4, filter=spec).ids
    for pid in ids:
        meta = meta_index.corpus.get(pid).metadata
        assert meta["group"] == "b" and meta["year"] <= 2003
    bad = CliRunner().invoke(cli, ["search", str(meta_index_dir), q, "--filter", "{year: 1}"])
    assert bad.exit_code != 0 and "--filter" in bad.output and "not valid JSON" in bad.output


def test_http_filter(meta_index_dir, meta_index, demo_dataset):
    from fastapi.testclient import TestClient

    from hopgraph.serve import create_app

    q = demo_dataset.questions[2].text
    spec = {"year": {"$in": [2002, 2005]}}
    with TestClient(create_app(str(meta_index_dir))) as c:
        for method in ("default", "bm25", "rrf"):
            body = {"query": q, "k": 5, "method": method, "filter": spec}
            r = c.post("/search", json=body)
            assert r.status_code == 200, r.text
            want = get_retriever(meta_index, method).search(q, k=5, filter=spec).ids
            assert [h["id"] for h in r.json()["hits"]] == want
        r = c.post("/search/batch", json={"queries": [q, q], "k": 3, "filter": spec})
        assert r.status_code == 200
        assert all(len(x["hits"]) == 3 for x in r.json()["results"])
        r = c.post("/search", json={"query": q, "filter": {"year": {"$near": 1}}})
        assert r.status_code == 422
        assert r.json()["error"]["type"] == "invalid_filter"
        assert "$near" in r.json()["error"]["message"]
