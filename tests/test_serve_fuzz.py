"""Fuzzing the HTTP service with hypothesis: random and malformed requests never get a 500,
the server keeps answering, and the index on disk always holds exactly the passages that the
accepted updates leave."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hopgraph.index import Index
from hopgraph.serve import Settings, create_app

ROUTES = [
    ("POST", "/search"), ("POST", "/search/batch"), ("POST", "/passages"),
    ("POST", "/passages/delete"), ("GET", "/health"), ("GET", "/info"), ("GET", "/"),
    ("GET", "/indexes"), ("POST", "/indexes"), ("POST", "/indexes/one/search"),
    ("POST", "/indexes/one/passages"), ("POST", "/indexes/one/passages/delete"),
    ("GET", "/indexes/one/info"), ("DELETE", "/indexes/one"), ("DELETE", "/indexes/nope"),
]  # fmt: skip
FIELDS = [
    "query", "queries", "method", "k", "params", "explain", "passages", "ids", "id", "title",
    "text", "metadata", "filter", "name", "parts",
]  # fmt: skip
METHODS = ["bm25", "bm25_rm3", "tfidf_graph", "dense", "rrf", "graph", "nope", ""]
CONTENT_TYPES = [
    "application/json; charset=utf-8", "application/ld+json", "text/plain",
    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "\u00e9/\u00e9",
]  # fmt: skip
LIMITS = Settings(max_body_bytes=20_000, max_k=50, max_batch=8, max_add=5, max_delete=5)

surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1)
texts = st.text(max_size=30) | surrogates | st.sampled_from(["", " ", "heron", "zebra", "0"])
numbers = (
    st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats()  # NaN and infinities included
    | st.sampled_from([0, 1, -1, 10**6, 2**63, 1e308, -0.0])
    | st.integers(1, 60)
)
scalars = st.none() | st.booleans() | numbers | texts
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
field_values = (
    json_values
    | st.sampled_from(METHODS)
    | st.lists(texts, max_size=10)
    | st.dictionaries(
        st.sampled_from(["fb_docs", "fb_terms", "orig_weight", "alpha", "max_iter", "model"]),
        scalars,
    )
    | st.lists(
        st.fixed_dictionaries(
            {"id": texts, "text": texts}, optional={"title": texts, "metadata": json_values}
        ),
        max_size=3,
    )
)
requests_like = st.dictionaries(st.sampled_from(FIELDS) | texts, field_values, max_size=6)


def encode(value, ascii_only: bool) -> bytes:
    """JSON as a careless client writes it: NaN allowed, surrogates as escapes or as bytes."""
    return json.dumps(value, allow_nan=True, ensure_ascii=ascii_only).encode(
        "utf-8", "surrogatepass"
    )


targeted = st.builds(encode, requests_like, st.booleans())
bodies = st.one_of(
    targeted,
    targeted,
    targeted,
    st.builds(encode, json_values, st.booleans()),
    st.binary(max_size=200),
    st.builds(lambda b: b"\xef\xbb\xbf" + b, targeted),
    st.builds(lambda n: b'{"query": "' + b"a" * n + b'"}', st.integers(0, 30_000)),
    st.builds(lambda n: b"[" * n + b"]" * n, st.integers(1, 3000)),
)
segments = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: s not in (".", "..")
)
passage_ids = st.sampled_from(["0", "1", "43", "n1"]) | segments
passage_bodies = st.lists(
    st.fixed_dictionaries(
        {"id": passage_ids | texts, "text": texts},
        optional={"title": texts, "metadata": json_values},
    ),
    min_size=1,
    max_size=3,
)
add_requests = st.tuples(
    st.just(("POST", "/passages")),
    st.builds(lambda ps, a: encode({"passages": ps}, a), passage_bodies, st.booleans()),
)
delete_requests = st.tuples(
    st.just(("POST", "/passages/delete")),
    st.builds(
        lambda ids, a: encode({"ids": ids}, a), st.lists(passage_ids, max_size=3), st.booleans()
    ),
)
filters = json_values | st.dictionaries(
    st.sampled_from(["year", "lang", "$or", "$and", "$not", "a.b"]),
    json_values | st.dictionaries(st.sampled_from(["$eq", "$in", "$gt", "$x"]), json_values),
    max_size=3,
)
filtered_searches = st.tuples(
    st.sampled_from([("POST", "/search"), ("POST", "/search/batch")]),
    st.builds(
        lambda q, f, a: encode({"query": q, "queries": [q], "filter": f}, a),
        texts,
        filters,
        st.booleans(),
    ),
)
index_names = st.sampled_from(["one", "two", "../x", "", "a" * 70, ".h", "x/y"]) | segments
create_requests = st.tuples(
    st.just(("POST", "/indexes")),
    st.builds(
        lambda n, ps, a: encode({"name": n, "passages": ps, "parts": ["sparse"]}, a),
        index_names,
        passage_bodies,
        st.booleans(),
    ),
)
page_requests = st.tuples(
    st.sampled_from(["GET", "HEAD"]),
    st.builds(
        lambda q, k, m: f"/?q={quote(q, safe='')}&k={quote(k, safe='')}&method={quote(m)}",
        st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
        st.sampled_from(["3", "0", "-1", "x", "99999", ""]),
        st.sampled_from(METHODS),
    ),
)
other_routes = st.one_of(
    st.sampled_from(ROUTES),
    st.tuples(
        st.sampled_from(["GET", "DELETE"]),
        st.builds(lambda s: "/passages/" + quote(s, safe=""), passage_ids),
    ),
    st.tuples(
        st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]),
        st.sampled_from([r[1] for r in ROUTES])
        | st.builds(lambda a, b: f"/{quote(a, safe='')}/{quote(b, safe='')}", segments, segments),
    ),
)
requests = st.one_of(
    st.tuples(st.sampled_from(ROUTES), bodies),
    st.tuples(st.sampled_from(ROUTES), bodies),
    add_requests,
    delete_requests,
    filtered_searches,
    create_requests,
    st.tuples(page_requests, st.just(b"")),
    st.tuples(other_routes, bodies),
)


@pytest.fixture
def index_dir(tmp_path, demo_dataset):
    folder = tmp_path / "index"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    return folder


def check_error_shape(r) -> None:
    if r.status_code >= 400 and r.request.method != "HEAD":
        if r.headers.get("content-type", "").startswith("text/html"):  # the search page
            assert "<html" in r.text and "error" in r.text.lower()
            return
        error = r.json()["error"]
        assert isinstance(error["type"], str) and isinstance(error["message"], str)


TOKEN = "fuzz-token-0123456789abcdef"
AUTH = st.sampled_from(
    [None, f"Bearer {TOKEN}", f"bearer {TOKEN}", "Bearer wrong-token-0123456789", f"Basic {TOKEN}",
     "Bearer", ""]
)  # fmt: skip


@pytest.mark.parametrize("token", ["", TOKEN], ids=["open", "token"])
def test_random_requests_never_get_a_500(index_dir, demo_dataset, token):
    from dataclasses import replace

    from hopgraph.serve.auth import is_write

    expected = {p.id: p.text for p in demo_dataset.corpus}
    named = index_dir.parent / "named"  # several indexes: created and dropped at random
    limits = replace(LIMITS, token=token, indexes_dir=str(named), max_indexes=3, max_create=5)
    client = TestClient(create_app(str(index_dir), limits), raise_server_exceptions=False)
    statuses: dict[int, int] = {}

    @settings(
        max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(
        request=requests,
        ctype=st.just("application/json") | st.sampled_from(CONTENT_TYPES),
        auth=AUTH if token else st.just(None),
    )
    def one(request: tuple[tuple[str, str], bytes], ctype: str, auth: str | None) -> None:
        (method, path), body = request
        headers = {"content-type": ctype.encode("latin-1")} if ctype else {}
        if auth is not None:
            headers["authorization"] = auth.encode()
        r = client.request(method, path, content=body, headers=headers)
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        assert r.status_code < 500, (method, path, body[:200], r.text[:300])
        authorized = auth is not None and auth.lower() == f"bearer {TOKEN}".lower()
        if token and is_write(method, r.request.url.path) and not authorized:
            assert r.status_code == 401, (method, path, auth, r.status_code)
        check_error_shape(r)
        # keep the model of the corpus in step with the updates the server accepted
        if r.status_code == 201 and path == "/passages":  # not a named index's
            for p in json.loads(body)["passages"]:
                expected[p["id"]] = p["text"]
        elif r.status_code == 200 and method == "POST" and path == "/passages/delete":
            for i in set(json.loads(body)["ids"]):
                expected.pop(i)
        elif r.status_code == 200 and method == "DELETE" and path.startswith("/passages/"):
            expected.pop(r.request.url.path.removeprefix("/passages/"))
        assert client.get("/health").status_code == 200

    one()
    assert {200, 400, 404, 422} <= set(statuses) and len(statuses) >= 6, statuses
    health = client.get("/health").json()
    assert health["passages"] == len(expected)
    on_disk = Index.load(index_dir)  # checksums verified
    assert {p.id: p.text for p in on_disk.corpus} == expected


ids = st.sampled_from(["0", "1", "2", "n1", "n2", "n3", "n4", "n5", "ü/x", "n 6"])


def update_machine(base: Path) -> type[RuleBasedStateMachine]:
    """A state machine whose every run serves a fresh copy of the index folder ``base``."""
    runs = iter(range(10**6))

    class UpdateMachine(RuleBasedStateMachine):
        """Random adds, deletes, searches and reads against a model of the corpus: every
        answer has the status the model predicts, and the folder on disk equals the model."""

        def __init__(self) -> None:
            super().__init__()
            self.folder = base.parent / f"run{next(runs)}"
            shutil.copytree(base, self.folder)
            self.client = TestClient(create_app(str(self.folder), LIMITS))
            self.model = {p.id: p.text for p in Index.load(self.folder).corpus}
            self.generation = 0

        @rule(
            new=st.lists(
                st.tuples(ids, st.text(min_size=1, max_size=40).filter(str.strip)),
                min_size=1,
                max_size=3,
            )
            | st.lists(st.tuples(ids, st.just("x")), min_size=6, max_size=6)  # over max_add
        )
        def add(self, new):
            r = self.client.post(
                "/passages", json={"passages": [{"id": i, "text": t} for i, t in new]}
            )
            given_ids = [i for i, _ in new]
            if len(new) > LIMITS.max_add:
                assert r.status_code == 422, r.text
            elif len(set(given_ids)) < len(given_ids) or set(given_ids) & set(self.model):
                assert r.status_code == 409 and r.json()["error"]["type"] == "duplicate_ids"
            else:
                assert r.status_code == 201, r.text
                self.model.update(new)
                self.generation += 1
                assert r.json()["generation"] == self.generation

        @rule(gone=st.lists(ids, min_size=1, max_size=4), one=st.booleans())
        def delete(self, gone, one):
            if one:
                r = self.client.delete("/passages/" + quote(gone[0], safe=""))
                gone = gone[:1]
            else:
                r = self.client.post("/passages/delete", json={"ids": gone})
            if set(gone) - set(self.model):
                assert r.status_code == 404, r.text
            elif set(self.model) <= set(gone):
                assert r.status_code == 409, r.text
            else:
                assert r.status_code == 200, r.text
                for i in set(gone):
                    del self.model[i]
                self.generation += 1

        @rule(query=st.text(max_size=20), k=st.integers(-2, 60), passages=st.booleans())
        def search(self, query, k, passages):
            body = {"query": query, "k": k, "passages": passages, "method": "bm25"}
            r = self.client.post("/search", json=body)
            if not query.strip() or not 1 <= k <= LIMITS.max_k:
                assert r.status_code == 422, r.text
                return
            assert r.status_code == 200, r.text
            for hit in r.json()["hits"]:
                assert hit["id"] in self.model
                if passages:
                    assert hit["text"] == self.model[hit["id"]]

        @precondition(lambda self: bool(self.model))
        @rule(data=st.data())
        def get(self, data):
            pid = data.draw(st.sampled_from(sorted(self.model)) | ids)
            r = self.client.get("/passages/" + quote(pid, safe=""))
            if pid in self.model:
                assert r.status_code == 200 and r.json()["text"] == self.model[pid]
            else:
                assert r.status_code == 404

        @invariant()
        def health(self):
            h = self.client.get("/health").json()
            assert h == {"status": "ok", "generation": self.generation, "passages": len(self.model)}

        def teardown(self):
            self.client.close()
            on_disk = Index.load(self.folder)  # checksums verified
            assert {p.id: p.text for p in on_disk.corpus} == self.model
            shutil.rmtree(self.folder, ignore_errors=True)

    return UpdateMachine


def test_updates_against_a_model(tmp_path, demo_dataset):
    base = tmp_path / "base"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(base)
    machine = update_machine(base)
    machine.TestCase.settings = settings(
        max_examples=15,
        stateful_step_count=25,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    machine.TestCase().runTest()
