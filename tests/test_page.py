"""The search page (GET /) in a real browser: headless Chromium (Debian's `chromium`, which
`make test` installs) driven by Playwright, against a real `hopgraph serve` process over the
demo corpus; plus the page's pure functions and its place among the routes (tokens, OpenAPI)."""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from fastapi.testclient import TestClient

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.serve import Settings, create_app
from hopgraph.serve.page import (
    Form,
    legend,
    parse_k,
    render_hit,
    render_page,
    route_of,
    route_svg,
)
from hopgraph.serve.problems import ApiError

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RIVER = "Which river flows through the town where the band Tinfoil Harbour was formed?"
SHIPYARD = "Who founded the shipyard that built SS Orrendale?"
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(2)>')
TOKEN = "page-test-token-0123456789"
GLORIA = {"title": "Gloria (Vivaldi)", "id": "gloria"}
VIVALDI = {"title": "Antonio Vivaldi", "id": "vivaldi"}
THREE_HOP = {
    "path": "3-hop: question → *Gloria (Vivaldi)* → *Antonio Vivaldi* → this page (it names "
    "*Venice*)",
    "route": {"hops": 3, "kind": "bridge", "via": "Antonio Vivaldi", "via_id": "vivaldi",
              "entity": "Venice", "chain": [GLORIA, VIVALDI]},
    "query_entities": ["Gloria"],
}  # fmt: skip


def artifacts_dir() -> Path:
    """Where screenshots go: ``HOPGRAPH_ARTIFACTS``, else tests/artifacts/."""
    folder = Path(os.environ.get("HOPGRAPH_ARTIFACTS") or Path(__file__).parent / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _metadata(i: int) -> dict:
    return {"source": "demo corpus", "row": i, "tags": ["demo", "fiction"]}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, demo_dataset) -> Path:
    """The demo corpus, with metadata, indexed once with the default method's parts."""
    corpus = Corpus(
        Passage(p.id, p.title, p.text, _metadata(i)) for i, p in enumerate(demo_dataset.corpus)
    )
    folder = tmp_path_factory.mktemp("page") / "index"
    Index.build(corpus, progress=False).save(folder)
    return folder


@pytest.fixture(scope="module")
def server(index_dir) -> Iterator[str]:
    """A real `hopgraph serve` process on a free loopback port; its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "serve", str(index_dir), "--port", str(port),
         "--max-k", "20", "--reload-interval", "0", "--log-level", "warning"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError(f"server did not start: {proc.communicate()[1]}")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is absent: install Debian's chromium (`apt-get install chromium`; "
            "`make test` does it) to run the browser tests"
        )
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Tab:
    """A browser page that records dialogs and refuses (and records) every request that does
    not go to the server: the page must work offline."""

    def __init__(self, browser, server: str):
        self.context = browser.new_context(viewport={"width": 1000, "height": 900})
        self.page = self.context.new_page()
        self.dialogs: list[str] = []
        self.outside: list[str] = []
        self.page.on("dialog", self._dialog)
        self.context.route("**/*", self._route(server))

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _route(self, server: str):
        def handle(route) -> None:
            if route.request.url.startswith(server + "/"):
                route.continue_()
            else:
                self.outside.append(route.request.url)
                route.abort()

        return handle


@pytest.fixture
def tab(browser, server) -> Iterator[Tab]:
    t = Tab(browser, server)
    yield t
    t.context.close()


def _api(server: str, query: str, **extra) -> dict:
    r = httpx.post(f"{server}/search", json={"query": query, **extra}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def _plain(summary: str) -> str:
    """The sentence of an explanation as the page shows it (titles emphasised, no asterisks)."""
    return summary.partition(". lifted by: ")[0].replace("*", "")


# -- in the browser -----------------------------------------------------------------------------
def test_the_page_shows_the_hits_of_post_search(server, tab):
    api = _api(server, RIVER, k=5, passages=True)
    resp = tab.page.goto(f"{server}/?{urlencode({'q': RIVER, 'k': 5})}")
    assert resp.status == 200 and resp.headers["content-type"].startswith("text/html")
    hits = tab.page.locator("li.hit")
    assert hits.count() == 5
    assert hits.locator("h2.title").all_inner_texts() == [h["title"] for h in api["hits"]]
    # the explanation in words, as the default method says it
    sentences = hits.locator(".why .summary").all_inner_texts()
    assert sentences == [_plain(h["why"]["summary"]) for h in api["hits"]]
    assert "2-hop: question → Tinfoil Harbour → this page" in sentences
    assert "first-hop passage" in tab.page.locator("p.legend").inner_text()
    assert "1-hop: the question names Tinfoil Harbour" in sentences
    # one picture per hit, drawn, ending at the hit
    for i, hit in enumerate(api["hits"]):
        svg = hits.nth(i).locator("figure.route svg")
        assert svg.count() == 1
        box = svg.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 20
        assert svg.locator("g.node.question").count() == 1
        assert svg.locator("g.node.hit title").text_content() == hit["title"]
        if hit["why"]["path"].startswith("2-hop"):  # the first-hop passage is drawn
            via = hit["why"]["path"].split("*")[1]
            assert svg.locator("g.node.passage title").text_content() == via
        route = hit["why"].get("route") or {}  # every passage on the way, in order
        chain = [c["title"] for c in route.get("chain", [])]
        assert svg.locator("g.node.passage > title").all_text_contents() == chain
    # metadata as a key/value list; /search carries it too
    first = api["hits"][0]
    assert first["metadata"]["source"] == "demo corpus" and first["metadata"]["tags"] == [
        "demo",
        "fiction",
    ]
    meta = hits.nth(0).locator("dl.meta").first.inner_text()
    assert "source" in meta and "demo corpus" in meta and f"{first['metadata']['row']}" in meta
    assert tab.page.locator("input[name=q]").input_value() == RIVER
    assert tab.outside == [] and tab.dialogs == []


def test_typing_a_question_and_submitting(server, tab):
    resp = tab.page.goto(f"{server}/")
    assert resp.status == 200
    assert tab.page.locator("li.hit").count() == 0
    assert "Type a question" in tab.page.locator("p.hint").inner_text()
    box = tab.page.locator("input[name=q]")
    box.fill(SHIPYARD)
    tab.page.locator("input[name=k]").fill("4")
    with tab.page.expect_navigation():
        box.press("Enter")
    assert "q=Who+founded" in tab.page.url and "k=4" in tab.page.url
    titles = tab.page.locator("li.hit h2.title").all_inner_texts()
    assert len(titles) == 4 and {"SS Orrendale", "Rookwell Shipyards"} <= set(titles)
    assert tab.page.locator("li.hit figure.route svg").count() == 4
    assert "4 hits for" in tab.page.locator("p.stats").inner_text()
    shot = artifacts_dir() / "search-page.png"
    tab.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    # the method box searches with another method
    tab.page.locator("select[name=method]").select_option("bm25")
    with tab.page.expect_navigation():
        tab.page.locator("button[type=submit]").click()
    assert "method bm25" in tab.page.locator("p.stats").inner_text()
    assert tab.page.locator("li.hit figure.route svg g.node.word").count() > 0
    assert "word it matches" in tab.page.locator("p.legend").inner_text()
    assert tab.outside == [] and tab.dialogs == []


def test_a_three_hop_picture_is_drawn_in_order_within_its_card(tab):
    hit = {"id": "venice", "title": "Venice", "text": "On the lagoon.", "why": THREE_HOP}
    tab.page.set_content(render_page(Form(query="q"), {"query": "q", "hits": [hit]}))
    svg = tab.page.locator("figure.route svg")
    boxes = [svg.locator(f"g.node.{kind} rect").bounding_box() for kind in ("question", "entity")]
    passages = svg.locator("g.node.passage rect")
    assert passages.count() == 2 and svg.locator("g.node.passage.later").count() == 1
    boxes += [passages.nth(0).bounding_box(), passages.nth(1).bounding_box()]
    boxes.append(svg.locator("g.node.hit rect").bounding_box())
    xs = [b["x"] for b in boxes if b is not None]
    assert len(xs) == 5 and xs == sorted(xs)  # question, entity, Gloria, Vivaldi, hit
    card, drawn = tab.page.locator("li.hit").bounding_box(), svg.bounding_box()
    assert card is not None and drawn is not None
    assert drawn["x"] + drawn["width"] <= card["x"] + card["width"]  # scaled to the card
    assert "passage on the way" in tab.page.locator("p.legend").inner_text()
    assert tab.outside == [] and tab.dialogs == []


ARABIC = {"id": "cairo", "title": "القاهرة", "text": "القاهرة هي عاصمة مصر وأكبر مدنها."}
JAPANESE = {"id": "tsuyu", "title": "梅雨", "text": "梅雨は、東アジアの広範囲においてみられる。"}


def test_right_to_left_and_japanese_text_are_laid_out_by_their_script(tab):
    hits = [{**h, "why": {"summary": "1-hop", "path": "1-hop: bm25"}} for h in (ARABIC, JAPANESE)]
    query = "ما هي عاصمة مصر؟"
    tab.page.set_content(render_page(Form(query=query), {"query": query, "hits": hits}))
    cards = tab.page.locator("li.hit")
    assert cards.locator("h2.title").all_inner_texts() == ["القاهرة", "梅雨"]
    assert cards.locator("p.text").all_inner_texts() == [ARABIC["text"], JAPANESE["text"]]
    rtl = "e => e.matches(':dir(rtl)')"
    assert cards.nth(0).locator("p.text").evaluate(rtl) is True
    assert cards.nth(0).locator("h2.title").evaluate(rtl) is True
    assert cards.nth(1).locator("p.text").evaluate(rtl) is False
    assert tab.page.locator("input[name=q]").evaluate(rtl) is True
    assert tab.page.locator("input[name=q]").input_value() == query
    # the Arabic paragraph starts at the card's right edge
    card, text = cards.nth(0).bounding_box(), cards.nth(0).locator("p.text").bounding_box()
    right = (
        cards.nth(0)
        .locator("p.text")
        .evaluate(
            "e => { const r = document.createRange(); r.selectNodeContents(e); "
            "return r.getBoundingClientRect().right; }"
        )
    )
    assert card is not None and text is not None and right > text["x"] + text["width"] - 5
    shot = artifacts_dir() / "search-page-scripts.png"
    tab.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 5_000
    assert tab.outside == [] and tab.dialogs == []


def test_clip_never_parts_a_letter_from_its_marks():
    from hopgraph.serve.page import clip

    assert clip("กรุงเทพ", 3) == "ก…"  # not "กร…": ร's vowel sign would be cut off
    assert clip("กรุงเทพ", 4) == "กรุ…"
    assert clip("abcdef", 4) == "abc…" and clip("abc", 4) == "abc"
    # a terminal line: wide characters take two columns, marks none
    assert clip("梅雨前線", 5, by_columns=True) == "梅雨…"
    assert clip("กรุงเทพ", 5, by_columns=True) == "กรุงเ…"
    assert clip("abcdef", 6, by_columns=True) == "abcdef"


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_query_is_shown_escaped(server, tab, hostile):
    tab.page.goto(f"{server}/")
    tab.page.locator("input[name=q]").fill(hostile)
    with tab.page.expect_navigation():
        tab.page.locator("button[type=submit]").click()
    tab.page.wait_for_load_state("load")
    assert tab.dialogs == []  # no script ran
    assert tab.page.locator("script").count() == 0 and tab.page.locator("img").count() == 0
    assert tab.page.locator("input[name=q]").input_value() == hostile
    assert tab.page.locator("p.stats q").inner_text() == hostile
    assert tab.page.title().startswith(hostile)
    raw = httpx.get(f"{server}/", params={"q": hostile}, timeout=60)
    assert raw.status_code == 200 and hostile not in raw.text
    assert "default-src 'none'" in raw.headers["content-security-policy"]
    assert tab.outside == []


@pytest.mark.parametrize(
    ("params", "status", "words"),
    [
        ({"q": "heron", "method": "nope<b>"}, 422, "unknown method 'nope<b>'"),
        ({"q": "heron", "k": "1000"}, 422, "k=1000 is over the limit of 20"),
        ({"q": "heron", "k": "ten"}, 422, "k must be a whole number"),
        ({"q": "heron", "k": "0"}, 422, "k must be a whole number"),
        ({"q": "x" * 2001}, 422, "the limit is 2000"),
    ],
)
def test_errors_are_readable_messages_on_the_page(server, tab, params, status, words):
    resp = tab.page.goto(f"{server}/?{urlencode(params)}")
    assert resp.status == status and resp.headers["content-type"].startswith("text/html")
    error = tab.page.locator("div.error[role=alert]")
    assert words.lower() in error.inner_text().lower()
    assert tab.page.locator("li.hit").count() == 0
    assert tab.page.locator("input[name=q]").input_value() == params["q"]  # kept to edit
    if "method" in params:
        assert tab.page.locator("b").count() == 0  # the method is shown escaped
        tab.page.screenshot(path=str(artifacts_dir() / "search-page-error.png"))
    api = httpx.post(f"{server}/search", json={"query": params["q"], **_as_json(params)})
    assert api.status_code == status  # the same answer as the JSON API


def _as_json(params: dict) -> dict:
    out: dict = {}
    if "method" in params:
        out["method"] = params["method"]
    if "k" in params and params["k"].isdigit():
        out["k"] = int(params["k"])
    elif "k" in params:
        out["k"] = params["k"]  # refused by the strict schema (422) as by the page
    return out


# -- without a browser -------------------------------------------------------------------------
def test_search_hits_carry_metadata_only_with_passages(server):
    with_p = _api(server, SHIPYARD, k=3, method="bm25", passages=True)["hits"]
    assert all(set(h["metadata"]) == {"source", "row", "tags"} for h in with_p)
    without = _api(server, SHIPYARD, k=3, method="bm25")["hits"]
    assert all(h["metadata"] is None and h["title"] is None for h in without)


def test_the_page_is_a_read_for_tokens_and_not_in_the_openapi_schema(index_dir):
    with TestClient(create_app(str(index_dir), Settings(token=TOKEN, reload_interval=0))) as c:
        assert c.get("/").status_code == 200  # reads are open by default
        assert "/" not in c.get("/openapi.json").json()["paths"]
    settings = Settings(token=TOKEN, protect_reads=True, reload_interval=0)
    with TestClient(create_app(str(index_dir), settings)) as c:
        r = c.get("/", params={"q": "heron"})
        assert r.status_code == 401 and r.json()["error"]["type"] == "unauthorized"
        assert (
            c.get("/", headers={"Authorization": "Bearer wrong-token-0123456789"}).status_code
            == 401
        )
        r = c.get("/", params={"q": "heron", "k": 3}, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200 and r.text.count('<li class="hit">') == 3


def test_route_of_each_kind_of_explanation():
    bridge = route_of(
        {"path": "2-hop: question → *A* → this page (it names *B*)", "query_entities": ["Q"]}
    )
    assert (bridge.kind, bridge.via, bridge.nodes) == ("bridge", "A", ("Q",))
    back = route_of({"path": "2-hop: question → *A*b* ← this page mentions it"})
    assert (back.kind, back.via) == ("backlink", "A*b")
    named = route_of({"path": "1-hop: the question names *T*", "query_entities": []})
    assert (named.kind, named.via) == ("named", None)
    assert route_of({"path": "1-hop: found by the question itself (words)"}).kind == "direct"
    words = route_of({"bm25": 3.2, "matched_terms": ["ship", "yard"]})
    assert (words.kind, words.nodes, words.node_kind) == ("none", ("ship", "yard"), "word")
    assert route_of({"cosine": 0.71234, "dense_rank": 1}).label == "cosine 0.7123"
    assert route_of({"summary": "after the candidates, in RRF order"}).kind == "none"


def test_route_of_a_three_hop_explanation():
    route = route_of(THREE_HOP)
    assert (route.kind, route.via, route.chain) == ("bridge", "Antonio Vivaldi", (GLORIA["title"],))
    assert route.nodes == ("Gloria",)
    # the sentence alone (older servers' JSON has no route)
    said = route_of({"path": THREE_HOP["path"], "query_entities": ["Gloria"]})
    assert said == route
    back = route_of({"path": "3-hop: question → *A* → *B*c* ← this page mentions it"})
    assert (back.kind, back.chain, back.via) == ("backlink", ("A",), "B*c")
    four = route_of({"path": "4-hop: question → *A* → *B* → *C* → this page"})
    assert (four.kind, four.chain, four.via) == ("bridge", ("A", "B"), "C")
    # 2 hops: the chain holds the one passage, via; nothing comes before it
    two = {"hops": 2, "kind": "bridge", "via": "A", "chain": [{"title": "A", "id": "a"}]}
    assert route_of({"route": two}).chain == () and route_of({"route": two}).via == "A"


@pytest.mark.parametrize(
    "chain",
    [None, "Gloria", 3, [], [1, 2], [{"id": "gloria"}, VIVALDI], [{"title": 3}, VIVALDI],
     [GLORIA], [VIVALDI, GLORIA], {"title": "Antonio Vivaldi"}],
)  # fmt: skip
def test_a_malformed_chain_is_left_out(chain):
    why = {**THREE_HOP, "route": {**THREE_HOP["route"], "chain": chain}}
    if chain is None:
        del why["route"]["chain"]
    route = route_of(why)
    assert (route.kind, route.via, route.chain) == ("bridge", "Antonio Vivaldi", ())
    out = render_hit(1, {"id": "venice", "title": "Venice", "why": why})
    assert out.count("<svg") == 1 and "Antonio Vivaldi" in out


def _width(svg: str) -> int:
    return int(svg.split('width="', 1)[1].split('"', 1)[0])


def test_the_picture_of_a_three_hop_route_draws_every_passage():
    svg = route_svg(route_of(THREE_HOP), "Venice", 1)
    passages = re.findall(r'<g class="node (passage[^"]*)"><title>([^<]*)</title>', svg)
    assert passages == [("passage", "Gloria (Vivaldi)"), ("passage later", "Antonio Vivaldi")]
    assert svg.index("Gloria (Vivaldi)</title>") < svg.index("Antonio Vivaldi</title>")
    assert "leads to" in svg and "names" in svg and "mentions" not in svg
    assert 'aria-label="question → Gloria → Gloria (Vivaldi) → Antonio Vivaldi → Venice"' in svg
    two = {"path": "2-hop: question → *Antonio Vivaldi* → this page", "query_entities": ["G"]}
    assert _width(svg) > _width(route_svg(route_of(two), "Venice", 2))
    four = route_of({"path": "4-hop: question → *A* → *B* → *C* ← this page mentions it"})
    assert _width(route_svg(four, "D", 3)) > _width(svg)
    # the legend names the later passages only where a picture has them
    assert "passage on the way" in legend([route_of(THREE_HOP)])
    assert "first-hop passage" in legend([route_of(THREE_HOP)])
    assert "passage on the way" not in legend([route_of(two)])


@pytest.mark.parametrize("hostile", HOSTILE)
def test_the_titles_of_a_chain_are_escaped(hostile):
    route = {**THREE_HOP["route"], "chain": [{"title": hostile, "id": "x"}, VIVALDI]}
    hit = {"id": "venice", "title": "Venice", "why": {**THREE_HOP, "route": route}}
    out = render_hit(1, hit)
    assert hostile not in out and "<script" not in out and "<img" not in out
    assert f"<title>{html.escape(hostile)}</title>" in out
    said = {"path": f"3-hop: question → *{hostile}* → *Antonio Vivaldi* → this page"}
    out = render_hit(1, {"id": "venice", "title": "Venice", "why": said})
    assert hostile not in out and f"<title>{html.escape(hostile)}</title>" in out


def test_everything_from_the_index_is_escaped():
    evil = "<i>x</i>&\"'"
    hit = {
        "id": evil,
        "score": float("nan"),
        "title": evil,
        "text": evil,
        "metadata": {evil: evil, "n": [1, evil]},
        "why": {"summary": f"2-hop: question → *{evil}* → this page. lifted by: {evil}",
                "path": f"2-hop: question → *{evil}* → this page", "query_entities": [evil],
                "hop": {"through": evil, "cosine": 0.5}, "signals": {evil: 1.0}},
    }  # fmt: skip
    out = render_hit(1, hit)
    assert "<i>" not in out and "&lt;i&gt;x&lt;/i&gt;&amp;&quot;&#x27;" in out
    assert "score —" in out and out.count("<svg") == 1
    page = render_page(Form(query=evil, method=evil), {"query": evil, "hits": [hit]})
    assert "<i>" not in page and "<script" not in page
    error = ApiError(422, "unknown_method", f"unknown method {evil!r}")
    assert "<i>" not in render_page(Form(query=evil), error=error)


def test_parse_k():
    assert parse_k(" 7 ") == 7
    for bad in ("", "0", "-1", "1.5", "seven", "٣"):
        with pytest.raises(ApiError, match="k must be a whole number"):
            parse_k(bad)
