"""The OpenAPI document states each method's ``params`` (issue 64): every option of every
method's ``Params`` is in ``Params_METHOD`` (but those only the operator sets), and what that
schema admits is exactly what the server takes: the same probes go to the JSON Schema and to
the server's own check (:meth:`ServedIndex.retriever`, what ``POST /search`` calls), and to
``POST /search`` itself for whole requests (``method`` keyed ``oneOf``, ``default``, none)."""

from __future__ import annotations

import dataclasses
import itertools
import typing

import jsonschema
import pytest
from fastapi.testclient import TestClient

from hopgraph.config import option_choices, server_only_options
from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index
from hopgraph.retrieve.registry import method_class, supported_methods
from hopgraph.serve import Settings, create_app
from hopgraph.serve.state import RequestError

NUMBERS = [
    -1e7, -1000, -1, -0.5, 0, 1e-9, 0.5, 1, 1.5, 2, 3.0, 99, 100, 101, 1000, 1001, 10_000,
    10_001, 100_000, 100_001, 1e6, 1e6 + 1, 1e12, 2e12, True, "1", None,
]  # fmt: skip
BOOLEANS = [True, False, 0, 1, "true", None]
STRINGS = ["nope", "", 1, True, None]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("params_schema")
    index = folder / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse"], progress=False).save(index)
    settings = Settings(reload_interval=0, indexes_dir=str(folder / "named"))
    with TestClient(create_app(str(index), settings)) as client:
        yield client


@pytest.fixture(scope="module")
def spec(app):
    return app.get("/openapi.json").json()


def _validator(spec, name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": spec["components"]}
    )


def test_every_option_of_every_method_is_in_its_params_schema(spec):
    models = spec["components"]["schemas"]
    for method in supported_methods(None):
        params = method_class(method).Params
        stated = models[f"Params_{method}"]
        hidden = server_only_options(params)
        names = {f.name for f in dataclasses.fields(params)}
        assert set(stated["properties"]) == names - hidden, method
        assert stated["additionalProperties"] is False
    rerank = models["Params_rerank"]["properties"]
    assert "model" not in rerank and "base" in rerank and "dense" in rerank["base"]["enum"]
    multihop = models["Params_multihop"]["properties"]
    assert multihop["alpha"]["minimum"] == 0 and multihop["alpha"]["maximum"] == 1
    assert multihop["depth"]["exclusiveMinimum"] == 0 and multihop["depth"]["maximum"] == 10_000
    assert multihop["ppr"]["enum"] == ["auto", "power", "local"]


def _probes(params: type) -> list[dict[str, typing.Any]]:
    """One option at a time over values in, at and beyond its bounds and of other types; each
    pair of numbers at 0 (rules between options); an unknown name; the operator's options."""
    hints = typing.get_type_hints(params)
    out: list[dict[str, typing.Any]] = [{}, {"no_such_option": 1}]
    numeric = []
    for f in dataclasses.fields(params):
        tp = hints[f.name]
        if tp is bool:
            values = BOOLEANS
        elif tp is str:
            values = [*(option_choices(f) or ()), *STRINGS]
        else:
            values = NUMBERS
            numeric.append(f.name)
        out += [{f.name: v} for v in values]
    out += [{a: 0, b: 0} for a, b in itertools.combinations(numeric, 2)]
    out += [{name: ""} for name in server_only_options(params)]
    return out


def _server_takes(app, method: str, params: dict[str, typing.Any]) -> bool:
    """Whether the server takes ``params`` for ``method`` (a missing index part is no refusal
    of the parameters: the method needs parts this index lacks)."""
    served = app.app.state.served
    try:
        served.retriever(served.snapshot, method, params)
    except RequestError as exc:
        return exc.kind == "missing_index_part"
    return True


@pytest.mark.parametrize("method", supported_methods(None))
def test_the_params_schema_admits_what_the_server_takes(app, spec, method):
    schema = _validator(spec, f"Params_{method}")
    for params in _probes(method_class(method).Params):
        admitted = schema.is_valid(params)
        assert admitted == _server_takes(app, method, params), (method, params, admitted)


REQUESTS = [
    # (route, body, taken): the served index has the sparse part alone (default: bm25)
    ("/search", {"query": "heron"}, True),
    ("/search", {"query": "heron", "method": "default", "params": {}}, True),
    ("/search", {"query": "heron", "params": {"fb_docs": 2}}, False),
    ("/search", {"query": "heron", "method": "default", "params": {"fb_docs": 2}}, False),
    ("/search", {"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": 2}}, True),
    ("/search", {"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": 2.0}}, True),
    ("/search", {"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": "2"}}, False),
    ("/search", {"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": 0}}, False),
    ("/search", {"query": "heron", "method": "tfidf_graph", "params": {"fb_docs": 2}}, False),
    ("/search", {"query": "heron", "method": "tfidf_graph", "params": {"alpha": 0.3}}, True),
    ("/search", {"query": "heron", "params": {"x-schemathesis-additional": None}}, False),
    ("/search/batch", {"queries": ["heron"], "method": "bm25_rm3", "params": {}}, True),
    ("/search/batch", {"queries": ["heron"], "params": {"orig_weight": 0.2}}, False),
]


@pytest.mark.parametrize(("route", "body", "taken"), REQUESTS)
def test_a_search_request_is_taken_as_its_schema_says(app, spec, route, body, taken):
    model = "SearchRequest" if route == "/search" else "BatchSearchRequest"
    assert _validator(spec, model).is_valid(body) == taken, body
    r = app.post(route, json=body)
    assert (r.status_code == 200) == taken, r.text
    if not taken:
        assert r.json()["error"]["type"] in ("invalid_params", "validation_error"), r.text


def test_a_named_index_without_a_method_takes_no_params(app, spec):
    """Each named index chooses its default by its parts; the schema states the options every
    choice takes (none: bm25 takes none), and a method named gets its own. (An index with the
    default's parts takes the default's options too: the schema is the narrower promise.)"""
    passages = [{"id": "a", "text": "heron"}]
    made = app.post("/indexes", json={"name": "one", "passages": passages, "parts": ["sparse"]})
    assert made.status_code == 201, made.text
    named = _validator(spec, "NamedSearchRequest")
    for body, taken in [
        ({"query": "heron"}, True),
        ({"query": "heron", "params": {"alpha": 0.5}}, False),
        ({"query": "heron", "method": "bm25_rm3", "params": {"fb_docs": 1}}, True),
    ]:
        assert named.is_valid(body) == taken, body
        r = app.post("/indexes/one/search", json=body)
        assert (r.status_code == 200) == taken, (body, r.text)
