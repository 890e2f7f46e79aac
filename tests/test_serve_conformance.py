"""HTTP conformance of the service (issue 39): HEAD wherever GET is served, a 405's Allow lists
every method of its path, the OpenAPI document states the token and the constraints the
server enforces, and integer fields take integral floats."""

from __future__ import annotations

import os
import re

import httpx
import jsonschema
import pytest
from fastapi.testclient import TestClient
from live_server import start_server, stop_server

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError
from hopgraph.filters import validate_filter
from hopgraph.index import Index
from hopgraph.serve import Settings, create_app
from hopgraph.serve.multi import NAME_PATTERN

TOKEN = "s3cret-token-for-tests-0123456789"
RIGHT = {"Authorization": f"Bearer {TOKEN}"}
PASSAGES = [{"id": "z1", "title": "Zebra", "text": "Plains zebras graze on the savanna."}]
GET_ROUTES = [
    "/health", "/info", "/", "/?q=heron&method=bm25", "/passages/{pid}", "/passages/missing",
    "/openapi.json", "/docs", "/indexes", "/indexes/one/info", "/indexes/one/passages/z1",
    "/indexes/nope/info",
]  # fmt: skip


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("conformance") / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(folder)
    return folder


def _app(sparse_dir, tmp_path, **settings):
    named = tmp_path / "named"
    return create_app(
        str(sparse_dir), Settings(reload_interval=0, indexes_dir=str(named), **settings)
    )


@pytest.fixture
def client(sparse_dir, tmp_path):
    with TestClient(_app(sparse_dir, tmp_path, role="reader")) as c:
        yield c


def _pid(sparse_dir) -> str:
    return Index.load(sparse_dir).corpus.ids[0]


def test_head_answers_as_get_without_a_body(sparse_dir, tmp_path):
    with TestClient(_app(sparse_dir, tmp_path)) as c:
        made = c.post("/indexes", json={"name": "one", "passages": PASSAGES, "parts": ["sparse"]})
        assert made.status_code == 201, made.text
        for route in GET_ROUTES:
            path = route.format(pid=_pid(sparse_dir))
            got, head = c.get(path), c.head(path)
            assert head.status_code == got.status_code, path
            assert head.content == b"", path
            assert head.headers["content-type"] == got.headers["content-type"], path
            if path != "/docs" and not path.startswith("/?"):  # no volatile parts
                assert head.headers["content-length"] == str(len(got.content)), path
        statuses = {p: c.head(p.format(pid=_pid(sparse_dir))).status_code for p in GET_ROUTES}
        assert statuses["/passages/missing"] == 404 and statuses["/indexes/nope/info"] == 404
        assert statuses["/health"] == statuses["/indexes/one/passages/z1"] == 200


@pytest.mark.parametrize(
    "method,path,allow",
    [
        ("OPTIONS", "/passages/13", "GET, HEAD, DELETE"),
        ("PUT", "/passages/13", "GET, HEAD, DELETE"),
        # a concrete path wins over the template (OpenAPI): not also the passage "delete"
        ("PATCH", "/passages/delete", "POST"),
        ("GET", "/passages/delete", "POST"),
        ("DELETE", "/indexes/one/passages/delete", "POST"),
        ("OPTIONS", "/indexes", "GET, HEAD, POST"),
        ("DELETE", "/indexes", "GET, HEAD, POST"),
        ("PUT", "/indexes/one", "DELETE"),
        ("OPTIONS", "/indexes/one/passages/13", "GET, HEAD, DELETE"),
        ("GET", "/search", "POST"),
        ("HEAD", "/search", "POST"),
        ("POST", "/health", "GET, HEAD"),
        ("POST", "/openapi.json", "GET, HEAD"),
    ],
)
def test_a_405_lists_every_method_of_its_path(client, method, path, allow):
    r = client.request(method, path)
    assert r.status_code == 405, r.text
    assert r.headers["allow"] == allow
    if method != "HEAD":
        assert r.json()["error"]["type"] == "method_not_allowed"
        assert r.json()["error"]["message"].endswith(f"it takes {allow}") or path == "/search"


def _operations(spec: dict):
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            yield method, path, operation


WRITES = {
    ("post", "/passages"), ("post", "/passages/delete"), ("delete", "/passages/{passage_id}"),
    ("post", "/indexes"), ("delete", "/indexes/{name}"), ("post", "/indexes/{name}/passages"),
    ("post", "/indexes/{name}/passages/delete"),
    ("delete", "/indexes/{name}/passages/{passage_id}"),
}  # fmt: skip


def test_openapi_with_a_token_declares_the_bearer_scheme_on_the_writes(sparse_dir, tmp_path):
    with TestClient(_app(sparse_dir, tmp_path, token=TOKEN)) as c:
        spec = c.get("/openapi.json").json()
        scheme = spec["components"]["securitySchemes"]["bearerToken"]
        assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
        assert "security" not in spec  # not on the reads
        seen = set()
        for method, path, op in _operations(spec):
            if (method, path) in WRITES:
                seen.add((method, path))
                assert op["security"] == [{"bearerToken": []}], (method, path)
                r401 = op["responses"]["401"]
                assert "WWW-Authenticate" in r401["headers"]
                assert r401["content"]["application/json"]["schema"]["$ref"].endswith(
                    "/ErrorResponse"
                )
            else:
                assert "security" not in op and "401" not in op["responses"], (method, path)
        assert seen == WRITES
        assert "has a token: the writes need" in spec["info"]["description"]
        # and the server does what it says: each write without the token is a 401
        r = c.delete("/passages/anything")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")


def test_openapi_with_protect_reads_covers_all_but_health(sparse_dir, tmp_path):
    with TestClient(_app(sparse_dir, tmp_path, token=TOKEN, protect_reads=True)) as c:
        spec = c.get("/openapi.json", headers=RIGHT).json()
        for method, path, op in _operations(spec):
            needs = (method, path) != ("get", "/health")
            assert ("security" in op) == needs and ("401" in op["responses"]) == needs, path


def test_openapi_without_a_token_says_writes_are_open_on_loopback(client):
    spec = client.get("/openapi.json").json()
    assert "securitySchemes" not in spec["components"]
    for *_, op in _operations(spec):
        assert "security" not in op and "401" not in op["responses"]
    text = " ".join(spec["info"]["description"].split())
    assert "This server has no token: every request, writes included" in text
    assert "only when it listens on a loopback address" in text and "--role reader" in text


def test_the_schema_states_what_the_server_enforces(client):
    models = client.get("/openapi.json").json()["components"]["schemas"]

    def prop(model: str, name: str) -> dict:
        return models[model]["properties"][name]

    blank_checked = [
        prop("SearchRequest", "query"), prop("BatchSearchRequest", "queries")["items"],
        prop("PassageIn", "id"), prop("PassageIn", "text"), prop("DeleteRequest", "ids")["items"],
    ]  # fmt: skip
    for field in blank_checked:
        assert field["minLength"] == 1 and field["pattern"] == r"\S", field
    name = prop("CreateIndexRequest", "name")
    assert name["pattern"] == f"^{NAME_PATTERN}$"
    assert re.fullmatch(name["pattern"].strip("^$"), "ok-name.1")
    for model in ("SearchRequest", "BatchSearchRequest"):
        k = prop(model, "k")
        assert k["type"] == "integer" and k["minimum"] == 1 and k["maximum"] == 1000
        per_doc = prop(model, "max_per_doc")["anyOf"][0]
        assert per_doc == {"type": "integer", "minimum": 0}
    assert prop("SearchRequest", "query")["maxLength"] == 2000
    assert prop("BatchSearchRequest", "queries")["maxItems"] == 64
    assert prop("AddRequest", "passages")["maxItems"] == 1000
    assert prop("DeleteRequest", "ids")["maxItems"] == 10_000
    assert prop("CreateIndexRequest", "passages")["maxItems"] == 10_000

    # and the server refuses what the schema excludes
    search = {"method": "bm25"}
    for bad in ("", "   ", "\t\n"):
        assert client.post("/search", json=search | {"query": bad}).status_code == 422
        assert client.post("/search/batch", json=search | {"queries": [bad]}).status_code == 422
    created = client.post("/indexes", json={"name": "-bad", "passages": PASSAGES})
    assert created.status_code == 422 and created.json()["error"]["type"] == "invalid_index_name"


def test_the_schema_lists_the_choices_the_server_has(client):
    """``method``: what the served (sparse-only) index runs, any method on a named index;
    ``parts``: the part names; the filter: its grammar, which the server and the schema judge
    alike."""
    spec = client.get("/openapi.json").json()
    models = spec["components"]["schemas"]
    served = models["SearchRequest"]["properties"]["method"]["enum"]
    assert served[0] == "default" and "bm25" in served and "dense" not in served
    named = models["NamedSearchRequest"]["properties"]["method"]["enum"]
    assert {"multihop", "dense", "bm25"} <= set(named) and "grapher_gat" not in named
    body = spec["paths"]["/indexes/{name}/search"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"]["$ref"].endswith("/NamedSearchRequest")
    for method in served:
        r = client.post("/search", json={"query": "heron", "method": method})
        assert r.status_code == 200, (method, r.text)
    parts = models["CreateIndexRequest"]["properties"]["parts"]["anyOf"][0]
    assert parts["minItems"] == 1 and "sparse" in parts["items"]["enum"]
    passage_id = spec["paths"]["/passages/{passage_id}"]["get"]["parameters"][0]["schema"]
    assert passage_id["not"] == {"enum": ["delete"]}

    schema = jsonschema.validators.Draft202012Validator(
        {"$ref": "#/components/schemas/MetadataFilter", "components": spec["components"]}
    )
    filters = [
        {"year": 2020}, {"year": {"$gte": 2020, "$lt": 2030}}, {"a.b": None},
        {"$or": [{"lang": "en"}, {"n": {"$in": [1, "x", [2]]}}]}, {"$not": {"x": {"$ne": True}}},
        {}, {"": 1}, {"$nor": [{"x": 1}]}, {"x": {"$gt": True}}, {"x": {"$eq": [1]}},
        {"x": {"$in": 3}}, {"x": {}}, {"x": {"y": 1}}, {"x": {"$eq": 1, "y": 2}}, {"$and": []},
        {"$not": 3}, {"x": {"$regex": "a"}},
    ]  # fmt: skip
    for f in filters:
        try:
            validate_filter(f)
            accepted = True
        except ConfigError:
            accepted = False
        assert schema.is_valid(f) == accepted, f
        r = client.post("/search", json={"query": "heron", "method": "bm25", "filter": f})
        assert (r.status_code == 200) == accepted, (f, r.text)


def test_integer_fields_take_integral_floats(client):
    search = {"query": "heron", "method": "bm25"}
    r = client.post("/search", json=search | {"k": 3.0, "max_per_doc": 0.0})
    assert r.status_code == 200, r.text
    assert r.json()["k"] == 3 and len(r.json()["hits"]) == 3
    batch = {"queries": ["heron"], "k": 2.0, "method": "bm25"}
    assert client.post("/search/batch", json=batch).json()["k"] == 2
    for bad in ({"k": 3.5}, {"k": "3"}, {"k": True}, {"k": 0.0}, {"max_per_doc": 1.5}):
        r = client.post("/search", json=search | bad)
        assert r.status_code == 422 and r.json()["error"]["type"] == "validation_error", bad
    r = client.post("/search", json=search | {"k": 1e300})
    assert r.status_code == 422 and r.json()["error"]["type"] == "k_too_large"


def test_over_http_with_hopgraph_serve(sparse_dir, tmp_path):
    """`curl -sI /health` and `curl -X OPTIONS /passages/13` against the real server."""
    env = {**os.environ, "HOPGRAPH_TOKEN": TOKEN}
    args = [str(sparse_dir), "--role", "reader", "--log-level", "warning"]
    proc, url = start_server(args, env=env)
    try:
        head = httpx.head(f"{url}/health")
        assert head.status_code == 200 and head.content == b""
        assert int(head.headers["content-length"]) == len(httpx.get(f"{url}/health").content)
        r = httpx.options(f"{url}/passages/13")
        assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD, DELETE"
        spec = httpx.get(f"{url}/openapi.json").json()
        assert spec["paths"]["/passages"]["post"]["security"] == [{"bearerToken": []}]
    finally:
        stop_server(proc)
