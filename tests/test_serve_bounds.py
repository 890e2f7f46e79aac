"""Every numeric method parameter a client may send has an upper bound: beyond it, 422 naming
the parameter before any work; /info lists the bounds; the operator's fixed values are not
bounded."""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index
from hopgraph.retrieve import list_methods, method_class
from hopgraph.serve import Settings, create_app
from hopgraph.serve.bounds import param_bounds


@pytest.fixture
def index_dir(tmp_path):
    folder = tmp_path / "ix"
    Index.build(load_corpus(demo_dataset_path()), ["sparse", "entities"], progress=False).save(
        folder
    )
    return folder


def test_every_numeric_parameter_has_a_bound_that_admits_its_default():
    for name in list_methods():
        params = method_class(name).Params
        bounds = param_bounds(params)
        for f in dataclasses.fields(params):
            if isinstance(f.default, bool) or not isinstance(f.default, int | float):
                continue
            assert f.name in bounds, (name, f.name)
            assert abs(f.default) <= bounds[f.name], (name, f.name, f.default)


def test_a_parameter_beyond_its_bound_is_refused_before_any_work(index_dir):
    app = create_app(str(index_dir), Settings(reload_interval=0))
    with TestClient(app) as c:
        for params in ({"max_iter": 10**9}, {"edge_cap": -(10**9)}, {"alpha": 0.15, "eps": 1e300}):
            r = c.post("/search", json={"query": "heron", "method": "graph", "params": params})
            assert r.status_code == 422, (params, r.text)
            err = r.json()["error"]
            assert err["type"] == "invalid_params"
            name = next(k for k in params if k != "alpha")
            assert repr(name) in err["message"] and "GET /info" in err["message"]
        assert app.state.served.snapshot.retrievers.entries() == []  # nothing was built
        ok = c.post(
            "/search", json={"query": "heron", "method": "graph", "params": {"max_iter": 100}}
        )
        assert ok.status_code == 200


def test_info_lists_the_bounds_and_the_operator_is_not_bounded(index_dir):
    settings = Settings(reload_interval=0, method_params={"graph": {"max_iter": 500}})
    with TestClient(create_app(str(index_dir), settings)) as c:
        info = c.get("/info").json()
        graph = next(m for m in info["methods"] if m["name"] == "graph")
        by_name = {p["name"]: p for p in graph["params"]}
        assert by_name["max_iter"]["max"] == 100 and by_name["query_matcher"]["max"] is None
        r = c.post("/search", json={"query": "heron", "method": "graph"})
        assert r.status_code == 200  # the server's own max_iter=500 is its choice
