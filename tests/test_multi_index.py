"""Several indexes per server (`hopgraph serve INDEX_DIR --indexes-dir DIR`): named indexes
created from passages, searched and updated under /indexes/NAME/..., dropped, kept across a
restart; creating and dropping need the token."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from live_server import start_server

from hopgraph.defaults import DEFAULT_PARTS
from hopgraph.index import Index
from hopgraph.serve import Settings, create_app

TOKEN = "multi-index-token-0123456789"
RIGHT = {"Authorization": f"Bearer {TOKEN}"}
BM25 = {"method": "bm25"}
ANIMALS = [
    {"id": "zebra", "title": "Zebra", "text": "Plains zebras graze on the savanna of Kenya."},
    {"id": "heron", "title": "Heron", "text": "The grey heron hunts fish in shallow water."},
    {"id": "lion", "title": "Lion", "text": "Lions live in prides on the African savanna.",
     "metadata": {"class": "mammal"}},
]  # fmt: skip
CITIES = [
    {"id": "paris", "title": "Paris", "text": "Paris is the capital of France, on the Seine."},
    {"id": "rome", "title": "Rome", "text": "Rome is the capital of Italy, on the Tiber."},
    {"id": "oslo", "title": "Oslo", "text": "Oslo is the capital of Norway, on a fjord."},
]
OKAPI = {"id": "okapi", "title": "Okapi", "text": "The okapi is a forest giraffe of the Congo."}


@pytest.fixture(scope="module")
def sparse_dir(tmp_path_factory, demo_dataset) -> Path:
    folder = tmp_path_factory.mktemp("multi") / "sparse"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    return folder


@pytest.fixture
def index_dir(sparse_dir, tmp_path) -> Path:
    folder = tmp_path / "ix"
    shutil.copytree(sparse_dir, folder)
    return folder


@pytest.fixture
def named_dir(tmp_path) -> Path:
    return tmp_path / "named"  # not there yet: the server makes it


def _app(index_dir: Path, named_dir: Path, **settings):
    return create_app(
        str(index_dir), Settings(indexes_dir=str(named_dir), reload_interval=0, **settings)
    )


@pytest.fixture
def client(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir)) as c:
        yield c


def _create(c: TestClient, name: str, passages: list[dict], parts=("sparse",), **kw) -> dict:
    body = {"name": name, "passages": passages}
    if parts is not None:
        body["parts"] = list(parts)
    r = c.post("/indexes", json=body, **kw)
    assert r.status_code == 201, r.text
    return r.json()


def err(r: httpx.Response, status: int, type_: str) -> dict:
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert e["type"] == type_ and e["message"], e
    return e


def _ids(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [h["id"] for h in r.json()["hits"]]


def _matched(r: httpx.Response) -> list[str]:
    """The hits the method found itself (not those filled to k in corpus order)."""
    assert r.status_code == 200, r.text
    return [h["id"] for h in r.json()["hits"] if "filled" not in h["why"]]


def _listing(c: TestClient) -> dict[str, dict]:
    r = c.get("/indexes")
    assert r.status_code == 200, r.text
    return {x["name"]: x for x in r.json()["indexes"]}


# -- create, list, search ------------------------------------------------------------------
def test_two_indexes_are_listed_and_searched_apart(client, named_dir):
    assert named_dir.is_dir() and _listing(client) == {}
    made = _create(client, "animals", ANIMALS)
    assert made["name"] == "animals" and made["passages"] == 3 and made["generation"] == 0
    assert made["parts"] == ["sparse"] and made["seconds"] >= 0
    _create(client, "cities", CITIES)
    assert (named_dir / "animals" / "manifest.json").is_file()
    assert _listing(client) == {
        "animals": {"name": "animals", "passages": 3, "generation": 0, "parts": ["sparse"]},
        "cities": {"name": "cities", "passages": 3, "generation": 0, "parts": ["sparse"]},
    }
    query = {"query": "capital on the savanna", "k": 3, **BM25}
    animals = _ids(client.post("/indexes/animals/search", json=query))
    cities = _ids(client.post("/indexes/cities/search", json=query))
    assert set(animals) <= {"zebra", "heron", "lion"} and animals[0] in ("zebra", "lion")
    assert set(cities) <= {"paris", "rome", "oslo"} and cities
    # the default index keeps serving the demo corpus at the old routes
    default = _ids(client.post("/search", json={"query": "director of The Lantern Keeper", **BM25}))
    assert default and not set(default) & {"zebra", "lion", "paris", "rome", "oslo"}
    assert client.get("/health").json()["passages"] == 44
    batch = client.post(
        "/indexes/cities/search/batch", json={"queries": ["France", "Norway fjord"], **BM25}
    )
    assert batch.status_code == 200, batch.text
    assert [r["hits"][0]["id"] for r in batch.json()["results"]] == ["paris", "oslo"]
    info = client.get("/indexes/animals/info").json()
    assert info["index"]["passages"] == 3 and info["role"] == "writer"
    assert info["limits"]["max_indexes"] == 16 and info["limits"]["max_create"] == 10_000
    lion = client.get("/indexes/animals/passages/lion").json()
    assert lion == ANIMALS[2]
    err(client.get("/indexes/cities/passages/lion"), 404, "unknown_id")


def test_updates_of_one_index_leave_the_others_alone(client):
    _create(client, "animals", ANIMALS)
    _create(client, "cities", CITIES)
    before_cities = _listing(client)["cities"]
    before_default = client.get("/health").json()
    r = client.post("/indexes/animals/passages", json={"passages": [OKAPI]})
    assert r.status_code == 201 and r.json()["passages"] == 4 and r.json()["generation"] == 1
    assert _matched(client.post("/indexes/animals/search", json={"query": "okapi", **BM25})) == [
        "okapi"
    ]
    assert _matched(client.post("/indexes/cities/search", json={"query": "okapi", **BM25})) == []
    err(client.get("/indexes/cities/passages/okapi"), 404, "unknown_id")
    err(client.get("/passages/okapi"), 404, "unknown_id")
    r = client.post("/indexes/animals/passages/delete", json={"ids": ["zebra"]})
    assert r.status_code == 200 and r.json()["passages"] == 3
    r = client.delete("/indexes/animals/passages/heron")
    assert r.status_code == 200 and r.json()["passages"] == 2 and r.json()["generation"] == 3
    err(client.post("/indexes/cities/passages/delete", json={"ids": ["zebra"]}), 404, "unknown_ids")
    assert _listing(client)["cities"] == before_cities
    assert _listing(client)["animals"]["passages"] == 2
    assert client.get("/health").json() == before_default
    assert client.get("/indexes/cities/passages/paris").json()["title"] == "Paris"


def test_an_index_with_the_default_parts(client):
    made = _create(client, "default-parts", ANIMALS + CITIES, parts=None)
    assert sorted(made["parts"]) == sorted(DEFAULT_PARTS)
    r = client.post("/indexes/default-parts/search", json={"query": "capital of Norway", "k": 2})
    assert r.status_code == 200, r.text
    assert r.json()["method"] == "multihop" and _ids(r)[0] == "oslo"
    assert client.get("/indexes/default-parts/info").json()["default_available"]


# -- drop, unknown names ---------------------------------------------------------------------
def test_drop_removes_the_index_and_its_folder(client, named_dir):
    _create(client, "animals", ANIMALS)
    _create(client, "cities", CITIES)
    r = client.delete("/indexes/animals")
    assert r.status_code == 200, r.text
    assert r.json() == {"name": "animals", "passages": 3, "generation": 0, "parts": ["sparse"]}
    assert not (named_dir / "animals").exists()
    assert not [p for p in named_dir.iterdir() if "animals" in p.name and "lock" not in p.name]
    assert list(_listing(client)) == ["cities"]
    err(
        client.post("/indexes/animals/search", json={"query": "zebra", **BM25}),
        404,
        "unknown_index",
    )
    err(client.delete("/indexes/animals"), 404, "unknown_index")
    assert _ids(client.post("/indexes/cities/search", json={"query": "Rome", **BM25}))[0] == "rome"
    _create(client, "animals", CITIES[:1])  # the name is free again
    assert _listing(client)["animals"]["passages"] == 1


@pytest.mark.parametrize(
    "method, path, body",
    [
        ("POST", "/indexes/nope/search", {"query": "zebra", **BM25}),
        ("POST", "/indexes/nope/search/batch", {"queries": ["zebra"], **BM25}),
        ("POST", "/indexes/nope/passages", {"passages": [OKAPI]}),
        ("POST", "/indexes/nope/passages/delete", {"ids": ["zebra"]}),
        ("DELETE", "/indexes/nope/passages/zebra", None),
        ("GET", "/indexes/nope/passages/zebra", None),
        ("GET", "/indexes/nope/info", None),
        ("DELETE", "/indexes/nope", None),
    ],
)
def test_unknown_index_is_404(client, method, path, body):
    _create(client, "animals", ANIMALS)
    err(client.request(method, path, json=body), 404, "unknown_index")


@pytest.mark.parametrize(
    "name", ["../x", "", "a" * 65, ".hidden", "a/b", "-x", "x y", "café", "..", "/etc"]
)
def test_bad_names_are_422_and_create_nothing(client, named_dir, name):
    err(client.post("/indexes", json={"name": name, "passages": ANIMALS, "parts": ["sparse"]}),
        422, "invalid_index_name")  # fmt: skip
    assert list(named_dir.iterdir()) == [] and _listing(client) == {}
    assert not (named_dir.parent / "x").exists()


def test_refused_creates(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir, max_indexes=2, max_create=3)) as c:
        _create(c, "a" * 64, ANIMALS)  # the longest name
        err(c.post("/indexes", json={"name": "a" * 64, "passages": CITIES}), 409, "index_exists")
        four = [*CITIES, OKAPI]
        err(c.post("/indexes", json={"name": "big", "passages": four}), 422, "too_many_passages")
        twice = [ANIMALS[0], {**ANIMALS[1], "id": "zebra"}]
        err(c.post("/indexes", json={"name": "d", "passages": twice}), 409, "duplicate_ids")
        bad = {"name": "p", "passages": CITIES, "parts": ["sparse", "nonsense"]}
        assert "nonsense" in err(c.post("/indexes", json=bad), 422, "invalid_parts")["message"]
        empty = {"name": "p", "passages": CITIES, "parts": []}
        err(c.post("/indexes", json=empty), 422, "invalid_parts")
        err(c.post("/indexes", json={"name": "p", "passages": []}), 422, "validation_error")
        blank = {"name": "p", "passages": [{"id": "x", "text": "  "}], "parts": ["sparse"]}
        err(c.post("/indexes", json=blank), 422, "validation_error")
        assert sorted(p.name for p in named_dir.iterdir() if not p.name.startswith(".")) == [
            "a" * 64
        ]
        _create(c, "cities", CITIES)
        err(c.post("/indexes", json={"name": "third", "passages": CITIES}), 409, "too_many_indexes")
        assert sorted(_listing(c)) == ["a" * 64, "cities"]


def test_a_reader_creates_and_drops_nothing(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir)) as c:
        _create(c, "animals", ANIMALS)
    with TestClient(_app(index_dir, named_dir, role="reader")) as c:
        assert list(_listing(c)) == ["animals"]
        err(c.post("/indexes", json={"name": "x", "passages": CITIES}), 409, "not_the_writer")
        err(c.delete("/indexes/animals"), 409, "not_the_writer")
        err(c.post("/indexes/animals/passages", json={"passages": [OKAPI]}), 409, "not_the_writer")
        assert (named_dir / "animals").is_dir() and not (named_dir / "x").exists()


def test_without_an_indexes_folder_there_are_no_named_routes(index_dir):
    with TestClient(create_app(str(index_dir), Settings(reload_interval=0))) as c:
        assert c.get("/indexes").status_code == 404
        assert c.post("/indexes", json={"name": "a", "passages": ANIMALS}).status_code == 404
        assert "max_indexes" not in c.get("/info").json()["limits"]


# -- tokens ----------------------------------------------------------------------------------
def test_create_and_drop_need_the_token(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir, token=TOKEN)) as c:
        body = {"name": "animals", "passages": ANIMALS, "parts": ["sparse"]}
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}):
            r = c.post("/indexes", json=body, headers=headers)
            err(r, 401, "unauthorized")
            assert r.headers["www-authenticate"].startswith("Bearer")
        assert not named_dir.exists() or list(named_dir.iterdir()) == []
        assert _listing(c) == {}  # reads stay open
        _create(c, "animals", ANIMALS, headers=RIGHT)
        err(c.post("/indexes/animals/passages", json={"passages": [OKAPI]}), 401, "unauthorized")
        err(c.post("/indexes/animals/passages/delete", json={"ids": ["lion"]}), 401, "unauthorized")
        err(c.delete("/indexes/animals/passages/lion"), 401, "unauthorized")
        err(c.delete("/indexes/animals"), 401, "unauthorized")
        assert _listing(c)["animals"]["passages"] == 3 and (named_dir / "animals").is_dir()
        assert _ids(c.post("/indexes/animals/search", json={"query": "lion", **BM25}))[0] == "lion"
        assert c.get("/indexes/animals/passages/lion").status_code == 200
        r = c.post("/indexes/animals/passages", json={"passages": [OKAPI]}, headers=RIGHT)
        assert r.status_code == 201
        assert c.delete("/indexes/animals", headers=RIGHT).status_code == 200
        assert _listing(c) == {} and not (named_dir / "animals").exists()


def test_protect_reads_covers_the_named_routes(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir, token=TOKEN, protect_reads=True)) as c:
        _create(c, "animals", ANIMALS, headers=RIGHT)
        for method, path, body in (
            ("GET", "/indexes", None),
            ("GET", "/indexes/animals/info", None),
            ("GET", "/indexes/animals/passages/lion", None),
            ("POST", "/indexes/animals/search", {"query": "lion", **BM25}),
            ("POST", "/indexes/animals/search/batch", {"queries": ["lion"], **BM25}),
        ):
            err(c.request(method, path, json=body), 401, "unauthorized")
            assert c.request(method, path, json=body, headers=RIGHT).status_code == 200
        assert c.get("/health").status_code == 200


# -- restarts --------------------------------------------------------------------------------
def test_a_restart_serves_the_named_indexes_again(index_dir, named_dir):
    with TestClient(_app(index_dir, named_dir)) as c:
        _create(c, "animals", ANIMALS)
        _create(c, "cities", CITIES)
        assert c.post("/indexes/animals/passages", json={"passages": [OKAPI]}).status_code == 201
        assert c.delete("/indexes/cities").status_code == 200
        _create(c, "birds", ANIMALS[1:2])
    (named_dir / "notes").mkdir()  # not an index: not served, but its name is taken
    (named_dir / ".old.dropped-1-abc").mkdir()  # a drop interrupted by a crash: removed
    with TestClient(_app(index_dir, named_dir)) as c:
        assert _listing(c) == {
            "animals": {"name": "animals", "passages": 4, "generation": 1, "parts": ["sparse"]},
            "birds": {"name": "birds", "passages": 1, "generation": 0, "parts": ["sparse"]},
        }
        okapi = c.post("/indexes/animals/search", json={"query": "okapi", **BM25})
        assert _matched(okapi) == ["okapi"]
        err(c.post("/indexes", json={"name": "notes", "passages": CITIES}), 409, "index_exists")
        assert not (named_dir / ".old.dropped-1-abc").exists()
    with pytest.raises(Exception, match="max_indexes"):
        _app(index_dir, named_dir, max_indexes=1).state  # noqa: B018
    Path(named_dir / "animals" / "manifest.json").write_text("{")
    with pytest.raises(Exception, match="named index 'animals'"):
        _app(index_dir, named_dir)


def _serve(index_dir: Path, named_dir: Path) -> tuple[subprocess.Popen, str]:
    return start_server(
        [str(index_dir), "--indexes-dir", str(named_dir), "--max-indexes", "4", "--log-level",
         "warning"]
    )  # fmt: skip


def test_the_command_serves_named_indexes_across_restarts(index_dir, named_dir):
    proc, url = _serve(index_dir, named_dir)
    try:
        body = {"name": "cities", "passages": CITIES, "parts": ["sparse"]}
        assert httpx.post(f"{url}/indexes", json=body, timeout=60).status_code == 201
        assert httpx.get(f"{url}/info").json()["limits"]["max_indexes"] == 4
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    proc, url = _serve(index_dir, named_dir)
    try:
        assert [x["name"] for x in httpx.get(f"{url}/indexes").json()["indexes"]] == ["cities"]
        r = httpx.post(f"{url}/indexes/cities/search", json={"query": "Italy", **BM25})
        assert r.status_code == 200 and r.json()["hits"][0]["id"] == "rome"
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert "named indexes in" in stderr and "cities" in stderr


def test_the_default_index_inside_the_indexes_folder_is_served_once(sparse_dir, tmp_path):
    named = tmp_path / "named"
    shutil.copytree(sparse_dir, named / "main")
    with TestClient(create_app(str(named / "main"), Settings(indexes_dir=str(named)))) as c:
        assert _listing(c) == {} and c.get("/info").json()["role"] == "writer"
        err(c.post("/indexes", json={"name": "main", "passages": CITIES}), 409, "index_exists")
        assert c.post("/passages", json={"passages": [OKAPI]}).status_code == 201
