"""The HTTP service: every endpoint, every validation rule, updates and concurrent searches."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from hopgraph.cli import cli
from hopgraph.corpus import Passage
from hopgraph.errors import IndexError_
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.serve import ServedIndex, Settings, create_app

JSON = {"content-type": "application/json"}
ZEBRA = {"id": "z1", "title": "Zebra", "text": "Plains zebras graze on the savanna of Kenya."}
BM25 = {"method": "bm25"}  # the sparse-only test index cannot serve the default method


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory, demo_dataset) -> Path:
    """The demo corpus with the sparse part, built once; tests serve copies of it."""
    folder = tmp_path_factory.mktemp("serve") / "sparse"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    return folder


@pytest.fixture
def index_dir(sparse_dir, tmp_path) -> Path:
    folder = tmp_path / "index"
    shutil.copytree(sparse_dir, folder)
    return folder


@pytest.fixture
def client(index_dir):
    with TestClient(create_app(str(index_dir))) as c:
        yield c


def err(r: httpx.Response, status: int, type_: str | None = None) -> dict:
    """Assert the common error shape; return its ``error`` object."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    e = r.json()["error"]
    assert set(e) == {"type", "message", "details"} and e["message"]
    if type_ is not None:
        assert e["type"] == type_, e
    return e


# -- search ------------------------------------------------------------------------------------
def test_search_matches_the_library_and_explains(client, sparse_dir):
    query = "director of The Lantern Keeper"
    r = client.post("/search", json={"query": query, "k": 5, "method": "bm25"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["method"] == "bm25" and body["k"] == 5 and body["generation"] == 0
    assert body["query"] == query and body["params"] == {} and body["latency_ms"] >= 0
    expected = get_retriever(Index.load(sparse_dir), "bm25").search(query, k=5)
    assert [h["id"] for h in body["hits"]] == expected.ids
    assert [h["score"] for h in body["hits"]] == pytest.approx(expected.scores)
    for hit in body["hits"]:
        assert hit["why"]["bm25"] == pytest.approx(hit["score"])
        assert hit["why"]["matched_terms"] and hit["title"] is None and hit["text"] is None


def test_search_passages_and_no_explanations(client, demo_dataset):
    r = client.post(
        "/search",
        json={
            "query": "lantern keeper",
            "method": "bm25",
            "k": 3,
            "passages": True,
            "explain": False,
        },
    )
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert len(hits) == 3
    for h in hits:
        p = demo_dataset.corpus.get(h["id"])
        assert (h["title"], h["text"], h["why"]) == (p.title, p.text, None)


def test_batch_equals_single_searches(client, demo_dataset):
    queries = [q.text for q in demo_dataset.questions[:5]]
    r = client.post(
        "/search/batch",
        json={"queries": queries, "method": "bm25_rm3", "k": 4, "params": {"fb_docs": 5}},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["method"] == "bm25_rm3" and body["params"]["fb_docs"] == 5
    assert [x["query"] for x in body["results"]] == queries
    for q, result in zip(queries, body["results"], strict=True):
        one = client.post(
            "/search", json={"query": q, "method": "bm25_rm3", "k": 4, "params": {"fb_docs": 5}}
        ).json()
        assert [h["id"] for h in result["hits"]] == [h["id"] for h in one["hits"]]
        assert all("bm25_rm3" in h["why"] for h in result["hits"])


def test_params_as_json_types_over_the_server_settings(index_dir):
    """The operator's --set values are read as on the command line; a request's params are
    JSON values of the types /openapi.json states (a string is not a number)."""
    settings = Settings(method_params={"bm25_rm3": {"fb_terms": "3"}})
    with TestClient(create_app(str(index_dir), settings)) as c:
        body = c.post(
            "/search", json={"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": 2}}
        ).json()
        assert body["params"] == {"fb_docs": 2, "fb_terms": 3, "orig_weight": 0.5}
        e = err(
            c.post(
                "/search", json={"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": "2"}}
            ),
            422,
            "invalid_params",
        )
        assert "expects integer" in e["message"]
        info = c.get("/info").json()
        rm3 = next(m for m in info["methods"] if m["name"] == "bm25_rm3")
        assert rm3["server_params"] == {"fb_terms": "3"}
        e = err(
            c.post("/search", json={"query": "x", "method": "rerank", "params": {"model": "/"}}),
            422,
            "server_only_param",
        )
        assert "--set rerank.model" in e["message"]


# -- validation --------------------------------------------------------------------------------
BAD_REQUESTS = [
    # (path, json body or raw bytes, headers, status, error type)
    ("/search", {"query": ""}, None, 422, "validation_error"),
    ("/search", {"query": " \t\n"}, None, 422, "validation_error"),
    ("/search", {}, None, 422, "validation_error"),
    ("/search", {"query": "x" * 2001}, None, 422, "query_too_long"),
    ("/search/batch", {"queries": ["ok", "x" * 2001]}, None, 422, "query_too_long"),
    ("/search/batch", {"queries": ["ok", " "]}, None, 422, "validation_error"),
    ("/search/batch", {"queries": []}, None, 422, "validation_error"),
    ("/search/batch", {"queries": ["q"] * 65}, None, 422, "too_many_queries"),
    ("/search", b'{"query": "caf\xe9"}', JSON, 400, "invalid_encoding"),
    ("/search", b'{"query": "\xed\xa0\x80"}', JSON, 400, "invalid_encoding"),  # UTF-8 surrogate
    ("/search", b'{"query": "\\ud800"}', JSON, 422, "invalid_string"),
    ("/search", b'{"query": "ok", "params": {"\\udfff": 1}}', JSON, 422, "invalid_string"),
    (
        "/passages",
        b'{"passages": [{"id": "a", "text": "t", "metadata": {"k": ["\\ud83d"]}}]}',
        JSON,
        422,
        "invalid_string",
    ),  # fmt: skip
    ("/search", b'{"query": ', JSON, 400, "invalid_json"),
    ("/search", b"[1, 2", JSON, 400, "invalid_json"),
    ("/search", b'{"query": "x", "k": NaN}', JSON, 400, "invalid_json"),
    ("/search", b'{"query": "x", "k": 1e999}', JSON, 400, "invalid_json"),
    ("/search", b'{"query": "x", "k": ' + b"9" * 5000 + b"}", JSON, 400, "invalid_json"),
    ("/search", b"[" * 100 + b"]" * 100, JSON, 422, "too_deep"),
    ("/search", b'{"query": "x"}', {"content-type": "text/plain"}, 415, "unsupported_media_type"),
    ("/search", [1, 2], None, 422, "validation_error"),
    ("/search", {"query": "x", "method": "no_such_method"}, None, 422, "unknown_method"),
    ("/search", {"query": "x", "method": "dense"}, None, 409, "missing_index_part"),
    ("/search", {"query": "x", "method": "rrf"}, None, 409, "missing_index_part"),
    (
        "/search",
        {"query": "x", "method": "bm25_rm3", "params": {"nope": 1}},
        None,
        422,
        "invalid_params",
    ),  # fmt: skip
    (
        "/search",
        {"query": "x", "method": "bm25_rm3", "params": {"fb_docs": "many"}},
        None,
        422,
        "invalid_params",
    ),  # fmt: skip
    (
        "/search",
        {"query": "x", "method": "bm25_rm3", "params": {"orig_weight": 7}},
        None,
        422,
        "invalid_params",
    ),  # fmt: skip
    (
        "/search",
        {"query": "x", "method": "tfidf_graph", "params": {"alpha": "inf"}},
        None,
        422,
        "invalid_params",
    ),  # fmt: skip
    ("/search", {"query": "x", "params": {"a": [1]}}, None, 422, "validation_error"),
    ("/search", {"query": "x", "k": 0}, None, 422, "validation_error"),
    ("/search", {"query": "x", "k": -3}, None, 422, "validation_error"),
    ("/search", {"query": "x", "k": 1001}, None, 422, "k_too_large"),
    ("/search", {"query": "x", "k": 10**30}, None, 422, "k_too_large"),
    ("/search", {"query": "x", "k": "5"}, None, 422, "validation_error"),
    ("/search", {"query": "x", "k": 5.5}, None, 422, "validation_error"),  # 5.0 is taken
    ("/search", {"query": "x", "k": True}, None, 422, "validation_error"),
    ("/search", {"query": "x", "explain": "yes"}, None, 422, "validation_error"),
    ("/search", {"query": 5}, None, 422, "validation_error"),
    ("/search", {"query": "x", "limit": 3}, None, 422, "validation_error"),
    (
        "/passages",
        {"passages": [{"id": "a", "text": "t", "extra": 1}]},
        None,
        422,
        "validation_error",
    ),  # fmt: skip
    ("/passages", {"passages": [{"id": "a", "text": "   "}]}, None, 422, "validation_error"),
    ("/passages", {"passages": [{"id": "a"}]}, None, 422, "validation_error"),
    ("/passages", {"passages": [{"id": "", "text": "t"}]}, None, 422, "validation_error"),
    ("/passages", {"passages": []}, None, 422, "validation_error"),
    ("/passages", {"passages": [ZEBRA] * 1001}, None, 422, "too_many_passages"),
    ("/passages/delete", {"ids": []}, None, 422, "validation_error"),
    ("/passages/delete", {"ids": [1]}, None, 422, "validation_error"),
    ("/passages/delete", {"ids": ["x"] * 10_001}, None, 422, "too_many_ids"),
]


@pytest.mark.parametrize("path,body,headers,status,type_", BAD_REQUESTS)
def test_bad_requests(client, path, body, headers, status, type_):
    if isinstance(body, bytes):
        r = client.post(path, content=body, headers=headers)
    else:
        r = client.post(path, json=body, headers=headers)
    err(r, status, type_)
    if isinstance(body, bytes):  # the raw input is never echoed back
        assert b"\xe9" not in r.content and b"9999999999" not in r.content
    assert client.get("/health").json()["generation"] == 0  # nothing changed


def test_validation_details_name_the_field_not_the_input(client):
    secret = "do-not-echo-" + "s" * 50
    e = err(client.post("/search", json={"query": "x", secret: 1}), 422, "validation_error")
    assert e["details"][0]["loc"][:1] == ["body"] and e["details"][0]["type"] == "extra_forbidden"
    e = err(client.post("/search", json={"query": "x", "k": secret}), 422, "validation_error")
    assert secret not in json.dumps(e)
    assert e["details"] == [
        {"loc": ["body", "k"], "msg": "Input should be a valid integer", "type": "int_type"}
    ]


def test_body_size_limit_declared_and_streamed(index_dir):
    with TestClient(create_app(str(index_dir), Settings(max_body_bytes=200))) as c:
        small = {"query": "heron award", "method": "bm25"}
        assert c.post("/search", json=small).status_code == 200
        big = json.dumps({"query": "heron " * 100}).encode()
        err(c.post("/search", content=big, headers=JSON), 413, "body_too_large")
        # no Content-Length: the body is streamed in chunks and counted as it arrives
        chunks = (big[i : i + 50] for i in range(0, len(big), 50))
        r = c.post("/search", content=chunks, headers=JSON)
        err(r, 413, "body_too_large")
        ok = json.dumps(small).encode()
        assert c.post("/search", content=iter([ok[:5], ok[5:]]), headers=JSON).status_code == 200
        err(c.post("/passages", content=big, headers=JSON), 413, "body_too_large")
        assert c.get("/health").json() == {"status": "ok", "generation": 0, "passages": 44}


def test_unknown_paths_and_methods(client):
    err(client.get("/nope"), 404, "not_found")
    r = client.put("/search", json={"query": "x"})
    err(r, 405, "method_not_allowed")
    assert "POST" in r.headers["allow"]
    assert err(r, 405)["message"] == "this route does not take PUT; it takes POST"
    e = err(client.get("/search"), 405)  # what a user trying curl "/search?q=..." is told
    assert "takes POST with a JSON body" in e["message"] and "GET /?q=" in e["message"]


# -- passages and updates ---------------------------------------------------------------------
def test_add_search_get_delete(client, index_dir):
    r = client.post("/passages", json={"passages": [ZEBRA]})
    assert r.status_code == 201, r.text
    assert r.json()["added"] == 1 and r.json()["passages"] == 45 and r.json()["generation"] == 1
    assert client.get("/health").json() == {"status": "ok", "generation": 1, "passages": 45}
    hits = client.post("/search", json=BM25 | {"query": "zebra savanna", "k": 3}).json()["hits"]
    assert hits[0]["id"] == "z1" and hits[0]["why"]["matched_terms"] == ["savanna", "zebra"]
    got = client.get("/passages/z1")
    assert got.status_code == 200 and got.json() == {**ZEBRA, "metadata": {}}
    on_disk = Index.load(index_dir)  # the served state is what is on disk
    assert "z1" in on_disk.corpus and len(on_disk) == 45

    r = client.delete("/passages/z1")
    assert r.status_code == 200 and r.json()["deleted"] == 1 and r.json()["generation"] == 2
    err(client.get("/passages/z1"), 404, "unknown_id")
    hits = client.post("/search", json=BM25 | {"query": "zebra savanna", "k": 3}).json()["hits"]
    assert "z1" not in [h["id"] for h in hits]
    err(client.delete("/passages/z1"), 404, "unknown_ids")
    assert "z1" not in Index.load(index_dir).corpus
    info = client.get("/info").json()
    assert info["generation"] == 2 and info["index"]["passages"] == 44


def test_batch_delete_and_odd_ids(client):
    odd = [
        {"id": "a/b c", "title": "", "text": "slashes and spaces in ids", "metadata": {"n": [1]}},
        {"id": "ünï", "text": "non ascii id"},
    ]
    assert client.post("/passages", json={"passages": odd}).status_code == 201
    assert client.get("/passages/a%2Fb%20c").json()["metadata"] == {"n": [1]}
    assert client.get("/passages/a/b c").json()["text"] == "slashes and spaces in ids"
    assert client.get("/passages/ünï").json()["title"] == ""
    r = client.post("/passages/delete", json={"ids": ["a/b c", "ünï", "ünï"]})
    assert r.status_code == 200 and r.json()["deleted"] == 2 and r.json()["passages"] == 44
    err(client.get("/passages/ünï"), 404)


def test_refused_updates_change_nothing(client, index_dir, demo_dataset):
    ids = demo_dataset.corpus.ids
    before = (index_dir / "manifest.json").read_bytes()
    e = err(client.post("/passages", json={"passages": [{"id": ids[0], "text": "x"}]}), 409)
    assert e["type"] == "duplicate_ids" and e["details"] == [{"ids": [ids[0]]}]
    twice = {"passages": [{"id": "n", "text": "one"}, {"id": "n", "text": "two"}]}
    err(client.post("/passages", json=twice), 409, "duplicate_ids")
    e = err(client.post("/passages/delete", json={"ids": [ids[0], "missing"]}), 404)
    assert e["type"] == "unknown_ids" and e["details"] == [{"ids": ["missing"]}]
    err(client.post("/passages/delete", json={"ids": ids}), 409, "update_refused")
    assert (index_dir / "manifest.json").read_bytes() == before
    assert client.get("/health").json() == {"status": "ok", "generation": 0, "passages": 44}
    assert len(Index.load(index_dir)) == 44


def test_update_limits(index_dir):
    with TestClient(create_app(str(index_dir), Settings(max_add=2, max_delete=2))) as c:
        three = [{"id": f"p{i}", "text": f"passage {i}"} for i in range(3)]
        err(c.post("/passages", json={"passages": three}), 422, "too_many_passages")
        assert c.post("/passages", json={"passages": three[:2]}).status_code == 201
        err(c.post("/passages/delete", json={"ids": ["p0", "p1", "0"]}), 422, "too_many_ids")
        assert c.post("/passages/delete", json={"ids": ["p0", "p1"]}).status_code == 200


# -- info, health, OpenAPI --------------------------------------------------------------------
def test_health_and_info(client):
    assert client.get("/health").json() == {"status": "ok", "generation": 0, "passages": 44}
    info = client.get("/info").json()
    assert info["generation"] == 0 and info["index"]["passages"] == 44
    assert set(info["index"]["parts"]) == {"sparse"}
    assert info["limits"] == {
        "max_query_chars": 2000, "max_body_bytes": 10 * 1024 * 1024, "max_k": 1000,
        "max_batch": 64, "max_add": 1000, "max_delete": 10_000, "max_cached_retrievers": 32,
        "max_search_seconds": 30.0, "max_filter_conditions": 256, "max_filter_in_values": 10_000,
    }  # fmt: skip
    methods = {m["name"]: m for m in info["methods"]}
    assert methods["bm25"]["available"] and methods["bm25"]["parts"] == ["sparse"]
    assert not methods["rrf"]["available"] and methods["rrf"]["parts"] == ["sparse", "dense"]
    params = {p["name"]: p for p in methods["bm25_rm3"]["params"]}
    assert params["fb_docs"]["default"] == 10 and params["fb_docs"]["type"] == "int"
    assert {p["name"]: p["server_only"] for p in methods["rerank"]["params"]}["model"]


def test_openapi_describes_the_bodies(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert set(paths) == {
        "/search", "/search/batch", "/passages", "/passages/delete", "/passages/{passage_id}",
        "/health", "/info",
    }  # fmt: skip
    assert set(paths["/passages/{passage_id}"]) == {"get", "delete"}

    def body_ref(path: str) -> str:
        return paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]

    assert body_ref("/search").endswith("/SearchRequest")
    assert body_ref("/search/batch").endswith("/BatchSearchRequest")
    assert body_ref("/passages").endswith("/AddRequest")
    assert body_ref("/passages/delete").endswith("/DeleteRequest")
    assert set(paths["/passages"]["post"]["responses"]) >= {"201", "409", "413", "422"}
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas  # 422 answers are ErrorResponse
    err422 = paths["/search"]["post"]["responses"]["422"]["content"]["application/json"]
    assert err422["schema"]["$ref"].endswith("/ErrorResponse")
    search = schemas["SearchRequest"]
    assert search["required"] == ["query"] and search["additionalProperties"] is False
    assert set(search["properties"]) == {
        "method",
        "k",
        "params",
        "filter",
        "max_per_doc",
        "explain",
        "passages",
        "query",
    }
    assert schemas["PassageIn"]["required"] == ["id", "text"]
    ok = paths["/search"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/SearchResponse")
    assert "why" in schemas["Hit"]["properties"]
    assert client.get("/docs").status_code == 200


# -- robustness ---------------------------------------------------------------------------------
def test_unexpected_error_is_a_500_json_and_the_server_goes_on(index_dir, caplog):
    from hopgraph.retrieve.base import _METHODS, Retriever, register_method
    from hopgraph.retrieve.sparse import NoParams

    @register_method
    class Broken(Retriever):
        name = "test_broken"
        Params = NoParams

        def _search(self, query, k, qvec):
            raise RuntimeError("boom")

    try:
        with TestClient(create_app(str(index_dir)), raise_server_exceptions=False) as c:
            r = c.post("/search", json={"query": "x", "method": "test_broken"})
            e = err(r, 500, "internal_error")
            assert "boom" not in e["message"]
            assert c.post("/search", json=BM25 | {"query": "heron"}).status_code == 200
        assert any("unexpected error" in rec.getMessage() for rec in caplog.records)
    finally:
        _METHODS.pop("test_broken", None)


def test_old_snapshot_keeps_answering_after_an_update(index_dir):
    served = ServedIndex(index_dir)
    old = served.snapshot
    bm25 = served.retriever(old, "bm25", {})
    result = served.update(add=[_passage(ZEBRA)], delete=["0"])
    assert result.generation == 1 and served.snapshot is not old
    # the old snapshot's files were replaced on disk; its mmaps still answer, unchanged
    assert bm25.search("heron award", k=1).ids == ["0"]
    assert "z1" not in bm25.search("zebra", k=44).ids
    new = served.retriever(served.snapshot, "bm25", {})
    assert new is not bm25 and new.search("zebra", k=1).ids == ["z1"]
    assert "0" not in new.search("heron award", k=44).ids


def test_concurrent_searches_see_whole_generations(index_dir, demo_dataset):
    """Searches in threads while updates run: every answer is 200 and exactly the corpus of
    the generation it reports (never a mix, never an error)."""
    steps = [  # one generation each
        ("add", {"z1": "zebra one grazes the savanna"}),
        ("delete", ["z1"]),
        ("add", {"z1": "zebra two runs on the savanna", "z2": "savanna zebra herd"}),
        ("delete", ["0", "z1"]),
        ("add", {"z3": "a zebra foal on the savanna"}),
        ("delete", ["z2", "z3", "1", "2"]),
        ("add", {"z1": "zebra three, savanna"}),
    ]
    corpora = [{p.id: p.text for p in demo_dataset.corpus}]
    for op, arg in steps:
        last = corpora[-1]
        corpora.append(
            {**last, **arg} if op == "add" else {i: t for i, t in last.items() if i not in arg}
        )
    stop = threading.Event()
    problems: list[str] = []
    answers: list[int] = []

    def searcher(client: TestClient, batch: bool) -> None:
        try:
            search(client, batch)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            problems.append(f"search raised {exc!r}")

    def search(client: TestClient, batch: bool) -> None:
        while not stop.is_set():
            q = {"k": 60, "passages": True, "method": "bm25"}
            if batch:
                r = client.post("/search/batch", json={**q, "queries": ["zebra savanna", "heron"]})
            else:
                r = client.post("/search", json={**q, "query": "zebra savanna"})
            if r.status_code != 200:
                problems.append(f"{r.status_code} {r.text}")
                continue
            body = r.json()
            corpus = corpora[body["generation"]]
            hits = body["results"][0]["hits"] if batch else body["hits"]
            got = {h["id"]: h["text"] for h in hits}
            if any(corpus.get(i) != t for i, t in got.items()):
                problems.append(f"generation {body['generation']}: hits not of its corpus")
            zebras = {i for i in corpus if i.startswith("z")}
            if not zebras <= set(got):
                problems.append(f"generation {body['generation']}: missing {zebras - set(got)}")
            answers.append(body["generation"])

    with TestClient(create_app(str(index_dir))) as client:
        threads = [threading.Thread(target=searcher, args=(client, i % 2 == 1)) for i in range(6)]
        for t in threads:
            t.start()
        try:
            for op, arg in steps:
                time.sleep(0.05)
                if op == "add":
                    new = [{"id": i, "text": t} for i, t in arg.items()]
                    r = client.post("/passages", json={"passages": new})
                    assert r.status_code == 201, r.text
                else:
                    r = client.post("/passages/delete", json={"ids": arg})
                    assert r.status_code == 200, r.text
            time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        final = client.get("/health").json()
    assert not problems, problems[:5]
    assert final["generation"] == len(steps) and final["passages"] == len(corpora[-1])
    assert len(set(answers)) >= 4 and len(answers) > 50
    on_disk = Index.load(index_dir).corpus
    assert {p.id: p.text for p in on_disk} == corpora[-1]


def _passage(d: dict):
    from hopgraph.corpus import Passage

    return Passage(d["id"], d.get("title", ""), d["text"], d.get("metadata", {}))


# -- the default method ------------------------------------------------------------------------
def test_default_method_on_an_index_without_its_parts(client, index_dir):
    """A sparse-only index: a search without a method falls back to bm25 and says so; naming
    the default's own method still answers 422."""
    add = f"`hopgraph add-parts {index_dir} --parts dense,entities`"
    bm25 = client.post("/search", json={"query": "heron", "method": "bm25"}).json()
    for body in ({"query": "heron"}, {"query": "heron", "method": "default"}):
        r = client.post("/search", json=body)
        assert r.status_code == 200, r.text
        got = r.json()
        assert got["method"] == "bm25" and got["info"]["method"] == "bm25"
        assert [h["id"] for h in got["hits"]] == [h["id"] for h in bm25["hits"]]
        fallback = got["info"]["default_fallback"]
        assert fallback["default"] == "multihop"
        assert fallback["missing_parts"] == ["dense", "entities"] and add in fallback["note"]
    assert "default_fallback" not in bm25["info"]  # named explicitly: no note
    batch = client.post("/search/batch", json={"queries": ["heron"]})
    assert batch.status_code == 200 and batch.json()["method"] == "bm25"
    assert batch.json()["results"][0]["info"]["default_fallback"]["default"] == "multihop"
    e = err(client.post("/search", json={"query": "heron", "method": "multihop"}), 409)
    assert e["type"] == "missing_index_part" and add in e["message"]
    assert "method 'multihop' needs more index parts" in e["message"]
    info = client.get("/info").json()
    assert info["default_method"] == "multihop" and info["default_available"] is False
    assert info["default_used"] == "bm25" and add in info["default_note"]
    flags = {m["name"]: m["default"] for m in info["methods"]}
    assert flags["multihop"] is True and sum(flags.values()) == 1


@pytest.fixture(scope="module")
def default_dir(tmp_path_factory, demo_dataset) -> Path:
    """The demo corpus with the default parts (Index.build without parts), built once."""
    folder = tmp_path_factory.mktemp("serve") / "default"
    Index.build(demo_dataset.corpus, progress=False).save(folder)
    return folder


def test_search_without_method_uses_the_default(default_dir, demo_dataset):
    settings = Settings(method_params={"default": {"depth": "20"}})
    query = demo_dataset.questions[0].text
    with TestClient(create_app(str(default_dir), settings)) as c:
        info = c.get("/info").json()
        assert info["default_method"] == "multihop" and info["default_available"] is True
        assert info["default_used"] == "multihop" and info["default_note"] is None
        assert info["index"]["detected"]["entities"] == {
            "title_aliases": True,
            "alias_mentions": True,
        }
        multihop = next(m for m in info["methods"] if m["name"] == "multihop")
        assert multihop["default"] and multihop["server_params"] == {"depth": "20"}
        r = c.post("/search", json={"query": query, "k": 5})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["method"] == "multihop" and body["params"]["depth"] == 20
        assert "default_fallback" not in body["info"] and "method" not in body["info"]
        assert len(body["hits"]) == 5 and all(h["why"] is not None for h in body["hits"])
        named = c.post("/search", json={"query": query, "k": 5, "method": "default"}).json()
        assert named["method"] == "multihop"
        assert [h["id"] for h in named["hits"]] == [h["id"] for h in body["hits"]]
        batch = c.post("/search/batch", json={"queries": [query, "heron award"], "k": 5})
        assert batch.status_code == 200, batch.text
        assert batch.json()["method"] == "multihop"
        first = batch.json()["results"][0]["hits"]
        assert [h["id"] for h in first] == [h["id"] for h in body["hits"]]
    expected = get_retriever(Index.load(default_dir), depth=20).search(query, k=5)
    assert [h["id"] for h in body["hits"]] == expected.ids


# -- dense methods ------------------------------------------------------------------------------
def test_dense_and_rrf_with_updates(tmp_path, demo_dataset):
    folder = tmp_path / "dense"
    Index.build(demo_dataset.corpus, ["sparse", "dense"], progress=False).save(folder)
    with TestClient(create_app(str(folder))) as c:
        for method in ("dense", "rrf", "hybrid"):
            r = c.post(
                "/search", json={"query": "Who directed The Lantern Keeper?", "method": method}
            )
            assert r.status_code == 200, r.text
            assert len(r.json()["hits"]) == 10
        why = c.post("/search", json={"query": "lighthouse play", "method": "rrf"}).json()
        assert {"rrf", "bm25_rank", "dense_rank"} <= set(why["hits"][0]["why"])
        r = c.post("/passages", json={"passages": [ZEBRA]})
        assert r.status_code == 201, r.text
        # no shared word: only the embedding can find it
        hits = c.post("/search", json={"query": "striped horses in Africa", "method": "dense"})
        assert hits.json()["hits"][0]["id"] == "z1" and hits.json()["generation"] == 1
        batch = c.post(
            "/search/batch", json={"queries": ["zebra", "striped horses"], "method": "rrf", "k": 2}
        )
        assert [x["hits"][0]["id"] for x in batch.json()["results"]] == ["z1", "z1"]
        err(c.post("/search", json={"query": "x", "method": "dense", "params": {"mode": "hnsw"}}),
            422)  # fmt: skip
    loaded = Index.load(folder)
    assert len(loaded) == 45 and loaded.parts["dense"].embeddings.shape[0] == 45


# -- command line -------------------------------------------------------------------------------
def test_cli_serve_refuses_a_missing_index(tmp_path):
    r = CliRunner().invoke(cli, ["serve", str(tmp_path / "none")])
    assert isinstance(r.exception, IndexError_) and "does not exist" in str(r.exception)
    r = subprocess.run(
        [sys.executable, "-m", "hopgraph.cli", "serve", str(tmp_path / "none")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and r.stderr.startswith("error: no index at")
    assert "Traceback" not in r.stderr


def test_cli_serve_answers_over_http(index_dir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--port", str(port),
         "--max-k", "5", "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        assert httpx.post(f"{url}/search", json={"query": "heron"}).status_code == 422  # k=10 > 5
        r = httpx.post(f"{url}/search", json=BM25 | {"query": "film festival award", "k": 5})
        assert r.status_code == 200 and len(r.json()["hits"]) == 5
        r = httpx.post(f"{url}/passages", json={"passages": [ZEBRA]})
        assert r.status_code == 201 and httpx.get(f"{url}/passages/z1").status_code == 200
        # the process pinned its threads and bounded malloc's arenas before loading models
        proc_info = httpx.get(f"{url}/info").json()["process"]
        n = proc_info["cores"]
        assert proc_info["encoder_sessions"] == n and proc_info["onnx_threads"] == 1
        assert proc_info["blas_threads"] == 1 and proc_info["malloc_arena_max"] == 2
        assert proc_info["onnx_memory_arena"] is False
        assert proc_info["malloc_trim"] is sys.platform.startswith("linux")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "z1" in Index.load(index_dir).corpus
    log = proc.stderr.read().decode()
    assert (
        "note: searches without a method: searched with 'bm25', not the default 'multihop'" in log
    )
    assert f"hopgraph add-parts {index_dir} --parts dense,entities" in log


def test_updates_are_deltas_merged_in_the_background_while_searches_go_on(index_dir):
    """Each add is committed as a delta; once the deltas pass the policy, a background thread
    writes a new base and the server serves it; searches answer throughout."""
    from hopgraph.index.store import DeltaPolicy

    state = ServedIndex(index_dir, Settings(reload_interval=0))
    try:
        state.snapshot.index.policy = DeltaPolicy(max_deltas=2, max_share=1.0, min_rows=10**6)
        stop, answered, failures = threading.Event(), [], []

        def search() -> None:
            while not stop.is_set():
                try:
                    snap = state.snapshot
                    r = state.retriever(snap, "bm25", {})
                    answered.append(len(r.search("zebra savanna", 3).ids))
                except Exception as exc:  # noqa: BLE001
                    failures.append(exc)

        t = threading.Thread(target=search)
        t.start()
        for i in range(3):
            name = ["alpha", "beta", "gamma"][i]
            state.update(add=[Passage(f"z{i}", f"Zebra {name}", f"Zebra {name} on the savanna.")])
            if i < 2:
                assert len(state.snapshot.index.deltas) == i + 1
                assert len(list((index_dir / "deltas").iterdir())) == i + 1
        assert state._compactor is not None
        state._compactor.join(timeout=60)
        stop.set()
        t.join()
        assert not failures and answered
        assert state.snapshot.index.deltas == [] and state.snapshot.generation == 3
        assert not (index_dir / "deltas").exists() or not any((index_dir / "deltas").iterdir())
        loaded = Index.load(index_dir)
        assert loaded.generation == 3 and {"z0", "z1", "z2"} <= set(loaded.corpus.ids)
        hits = get_retriever(loaded, "bm25").search("zebra gamma", 1).ids
        served = state.retriever(state.snapshot, "bm25", {}).search("zebra gamma", 1).ids
        assert hits == served == ["z2"]
    finally:
        state.close()


def test_memory_is_given_back_after_each_published_generation(index_dir, monkeypatch):
    """An update, a compaction and a reload of another process's commit each publish a new
    generation, then call release_memory (malloc_trim in a server): the generation it sees is
    the new one, and the update's own references to the previous one are gone."""
    import gc
    import weakref

    import hopgraph.serve.state as state_module
    from hopgraph.index.store import DeltaPolicy

    state = ServedIndex(index_dir, Settings(reload_interval=0))
    reader = ServedIndex(index_dir, Settings(reload_interval=0, role="reader"))
    seen: list[tuple[str, int, bool]] = []
    previous: list[weakref.ref] = []

    def release() -> bool:
        served = reader if threading.current_thread().name == "reload" else state
        gc.collect()
        freed = all(ref() is None for ref in previous)
        seen.append((threading.current_thread().name, served.snapshot.generation, freed))
        return True

    monkeypatch.setattr(state_module, "release_memory", release)
    try:
        state.snapshot.index.policy = DeltaPolicy(max_deltas=2, max_share=1.0, min_rows=10**6)
        previous.append(weakref.ref(state.snapshot))
        state.update(add=[Passage("z0", "Zebra", "Zebra on the savanna.")])
        writer = "hopgraph-writer_0"  # updates run on the server's one writer thread
        assert seen == [(writer, 1, True)]
        previous[:] = [weakref.ref(state.snapshot)]
        state.update(add=[Passage("z1", "Zebra", "Zebra in the zoo.")])
        state.update(delete=["z0"])  # the third delta: merged by a background compaction
        assert state._compactor is not None
        state._compactor.join(timeout=60)
        assert [s[:2] for s in seen] == [
            (writer, 1),
            (writer, 2),
            (writer, 3),
            ("hopgraph-compact", 3),
        ]
        assert seen[1][2] and state.snapshot.index.deltas == []
        previous.clear()
        t = threading.Thread(target=reader.reload_if_changed, name="reload")
        t.start()
        t.join()
        assert seen[-1][:2] == ("reload", 3) and len(seen) == 5
    finally:
        reader.close()
        state.close()


def test_configure_serving_sets_the_memory_settings():
    """In a fresh process: the ranker scoring without lightgbm, scikit-learn or pandas ever
    imported (its trees in numpy, issue 62), as it does in a process that has them, ONNX
    Runtime's arena off, and release_memory trimming malloc's heaps (glibc)."""
    script = """
import json, os, sys
import numpy as np
from hopgraph.serve.process import configure_serving, release_memory
before = release_memory()
info = configure_serving()
from hopgraph.models.ranker import load_ranker
ranker = load_ranker().for_kind("entity_titles")
X = np.random.default_rng(0).random((50, len(ranker.features)))
scores = ranker.score(X).tolist()
loaded = sorted(m for m in ("lightgbm", "sklearn", "pandas") if m in sys.modules)
print(json.dumps({"info": info, "before": before, "after": release_memory(), "loaded": loaded,
                  "arena": os.environ["HOPGRAPH_ORT_ARENA"], "scores": scores}))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "lightgbm_lean" not in out["info"] and out["loaded"] == []
    assert out["arena"] == "0" and out["info"]["onnx_memory_arena"] is False
    assert out["before"] is False  # nothing is trimmed unless a server asked for it
    if sys.platform.startswith("linux"):
        assert out["info"]["malloc_trim"] is True and out["after"] is True
    from hopgraph.models.ranker import load_ranker

    ranker = load_ranker().for_kind("entity_titles")
    X = np.random.default_rng(0).random((50, len(ranker.features)))
    import pandas  # noqa: F401  # this process has them: the same scores
    import sklearn  # noqa: F401

    assert out["scores"] == ranker.score(X).tolist()


def test_a_search_past_the_time_limit_answers_503_and_the_server_goes_on(index_dir):
    """max_search_seconds: the client gets a 503 naming the limit instead of waiting; the
    abandoned search finishes on its thread and the next searches are answered."""
    import hopgraph.serve.app as app_module

    slow = threading.Event()
    real = app_module._run

    def slow_run(*args, **kwargs):
        if slow.is_set():
            time.sleep(1.0)
        return real(*args, **kwargs)

    app_module._run = slow_run
    try:
        with TestClient(create_app(str(index_dir), Settings(max_search_seconds=0.2))) as c:
            slow.set()
            t0 = time.perf_counter()
            r = c.post("/search", json=BM25 | {"query": "zebra", "k": 3})
            assert time.perf_counter() - t0 < 0.9
            e = err(r, 503, "search_timeout")
            assert "0.2 s" in e["message"] and "max_search_seconds" in e["message"]
            err(c.post("/search/batch", json=BM25 | {"queries": ["a", "b"]}), 503, "search_timeout")
            slow.clear()
            assert c.post("/search", json=BM25 | {"query": "zebra", "k": 3}).status_code == 200
    finally:
        app_module._run = real
