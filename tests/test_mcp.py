"""``hopgraph mcp``: the MCP server driven by the real MCP client over stdio, on the demo corpus
(the default method's parts, built once; every passage carries metadata for the filters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.mcp_server import MAX_K, MAX_QUERY_CHARS
from hopgraph.retrieve import get_retriever

pytestmark = pytest.mark.anyio

QUESTION = "In which town was the director of The Lantern Keeper born?"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, demo_dataset) -> Path:
    """The demo corpus with ``{"half": "even"|"odd", "n": i}`` metadata, default parts."""
    passages = [
        Passage(p.id, p.title, p.text, {"half": "even" if i % 2 == 0 else "odd", "n": i})
        for i, p in enumerate(demo_dataset.corpus)
    ]
    folder = tmp_path_factory.mktemp("mcp") / "index"
    Index.build(Corpus(passages), progress=False).save(folder)
    return folder


@pytest.fixture(scope="module")
def index(index_dir) -> Index:
    return Index.load(index_dir)


def server_params(index_dir: Path, *args: str) -> StdioServerParameters:
    """``hopgraph mcp`` of this venv, with this process's environment."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hopgraph.cli", "mcp", str(index_dir), *args],
        env=dict(os.environ),
    )


@pytest.fixture(scope="module")
async def session(index_dir, tmp_path_factory):
    """One server (the default method) and its client session for the module's calls."""
    log = tmp_path_factory.mktemp("mcp-log") / "stderr.txt"
    with open(log, "w") as errlog:
        async with stdio_client(server_params(index_dir), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


def error_text(result) -> str:
    assert result.is_error, result
    return result.content[0].text


async def test_lists_the_two_read_only_tools(session):
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == {"search", "get_passage"}  # no writes over MCP
    search = tools["search"]
    assert "multi-hop" in search.description and "without an LLM" in search.description
    assert "`multihop`" in search.description  # the method it runs, named
    props = search.input_schema["properties"]
    assert set(props) == {"query", "k", "method", "filter", "max_per_doc"}
    assert search.input_schema["required"] == ["query"]
    assert props["k"]["maximum"] == MAX_K and props["k"]["minimum"] == 1
    assert "bm25" in props["method"]["description"]  # the methods this index can run
    hit = search.output_schema["$defs"]["SearchHit"]["properties"]
    assert set(hit) == {"id", "title", "text", "score", "rank", "metadata", "why"}
    for t in tools.values():
        assert t.annotations.read_only_hint is True
        assert t.annotations.destructive_hint is not True


async def test_default_search_matches_the_library(session, index):
    res = await session.call_tool("search", {"query": QUESTION, "k": 5})
    assert not res.is_error, res
    out = res.structured_content
    expected = get_retriever(index).search(QUESTION, k=5)
    assert out["method"] == "multihop" and out["k"] == 5 and out["query"] == QUESTION
    assert [h["id"] for h in out["hits"]] == expected.ids
    assert [h["rank"] for h in out["hits"]] == [1, 2, 3, 4, 5]
    for h, score, why in zip(out["hits"], expected.scores, expected.explanations, strict=True):
        p = index.corpus.get(h["id"])
        assert (h["title"], h["text"], h["metadata"]) == (p.title, p.text, p.metadata)
        assert h["score"] == pytest.approx(score)
        assert h["why"] == why["summary"] and h["why"]  # the sentence, in words
    assert any(h["why"].startswith("2-hop") for h in out["hits"])
    assert json.loads(res.content[0].text) == out  # the same result as text, for older clients


async def test_other_method_and_filter(session, index):
    bm25 = get_retriever(index, "bm25")
    res = await session.call_tool("search", {"query": QUESTION, "k": 4, "method": "bm25"})
    out = res.structured_content
    assert out["method"] == "bm25"
    assert [h["id"] for h in out["hits"]] == bm25.search(QUESTION, k=4).ids
    assert "matched_terms" in out["hits"][0]["why"]  # bm25's fields on one line

    odd = {"half": "odd", "n": {"$lt": 40}}
    res = await session.call_tool("search", {"query": QUESTION, "k": 6, "filter": odd})
    hits = res.structured_content["hits"]
    assert hits and [h["id"] for h in hits] == get_retriever(index).search(QUESTION, 6, odd).ids
    assert all(h["metadata"]["half"] == "odd" and h["metadata"]["n"] < 40 for h in hits)
    res = await session.call_tool("search", {"query": QUESTION, "filter": {"half": "none"}})
    assert res.structured_content["hits"] == []


async def test_get_passage(session, index):
    p = index.corpus[3]
    res = await session.call_tool("get_passage", {"id": p.id})
    assert not res.is_error
    assert res.structured_content == {
        "id": p.id,
        "title": p.title,
        "text": p.text,
        "metadata": p.metadata,
    }
    msg = error_text(await session.call_tool("get_passage", {"id": "no-such-id"}))
    assert "no passage with id 'no-such-id'" in msg


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"method": "nope"}, "unknown method 'nope'"),
        ({"method": "griever"}, "hopgraph add-parts"),  # a method whose parts the index lacks
        ({"k": 0}, "greater than or equal to 1"),
        ({"k": MAX_K + 1}, f"less than or equal to {MAX_K}"),
        ({"k": "many"}, "valid integer"),
        ({"query": "   "}, "the query is empty"),
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, f"the limit is {MAX_QUERY_CHARS}"),
        ({"filter": {"n": {"$near": 3}}}, "unknown operator '$near'"),
        ({"filter": {"$or": "x"}}, "$or"),
    ],
)
async def test_bad_calls_are_tool_errors(session, args, expected):
    res = await session.call_tool("search", {"query": QUESTION, **args})
    assert expected in error_text(res)
    # the server is still there and answers
    ok = await session.call_tool("search", {"query": QUESTION, "k": 1, "method": "bm25"})
    assert not ok.is_error and len(ok.structured_content["hits"]) == 1


async def test_server_method_and_params(index_dir, index, tmp_path):
    """--method and --set choose what a call without a method runs."""
    params = server_params(index_dir, "--method", "rrf", "--set", "k_rrf=5")
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert "`rrf`" in tools["search"].description
                out = (await s.call_tool("search", {"query": QUESTION, "k": 5})).structured_content
    assert out["method"] == "rrf"
    assert [h["id"] for h in out["hits"]] == get_retriever(index, "rrf", k_rrf=5).search(
        QUESTION, 5
    ).ids
    assert "serving" in (tmp_path / "stderr.txt").read_text()  # the log went to stderr


def test_stdout_carries_only_the_protocol(index_dir):
    """Raw stdio: every line the server writes to stdout is a JSON-RPC message, start-up and a
    first default search (which loads the models) included."""
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": QUESTION, "k": 2}},
        },
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hopgraph.cli", "mcp", str(index_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    replies = []
    try:
        for m in msgs:
            proc.stdin.write(json.dumps(m) + "\n")
            proc.stdin.flush()
            if "id" in m:
                line = proc.stdout.readline()
                replies.append(json.loads(line))  # not JSON: something else reached stdout
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["serverInfo"]["name"] == "hopgraph"
    assert len(replies[1]["result"]["structuredContent"]["hits"]) == 2
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines() if line)
    assert "serving" in proc.stderr.read()


def test_start_up_errors_exit_with_a_message(index_dir):
    for args, expected in [
        (["--method", "nope"], "unknown method 'nope'"),
        (["--method", "bm25", "--set", "depth=3"], "unknown option(s) 'depth'"),
    ]:
        r = subprocess.run(
            [sys.executable, "-m", "hopgraph.cli", "mcp", str(index_dir), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 2, r.stderr
        assert expected in r.stderr and r.stdout == ""


async def test_partial_index_searches_with_the_best_method_it_has(demo_dataset, tmp_path):
    """A sparse-only index: the server starts, a search without a method uses bm25 and says why
    (with the add-parts command), on stderr at start and in the answer; a method named
    explicitly without its parts stays a tool error."""
    folder = tmp_path / "sparse"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with stdio_client(server_params(folder), errlog=errlog) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert "hopgraph add-parts" in tools["search"].description
                out = (await s.call_tool("search", {"query": QUESTION, "k": 3})).structured_content
                named = await s.call_tool("search", {"query": QUESTION, "method": "default"})
                dense = await s.call_tool("search", {"query": QUESTION, "method": "dense"})
    assert out["method"] == "bm25" and len(out["hits"]) == 3
    assert "hopgraph add-parts" in out["note"] and "dense" in out["note"]
    assert named.structured_content["method"] == "bm25"
    assert "hopgraph add-parts" in error_text(dense)
    log = (tmp_path / "stderr.txt").read_text()
    assert "method bm25" in log and "hopgraph add-parts" in log


async def test_follows_updates_committed_by_another_process(demo_dataset, tmp_path):
    """`hopgraph add` and `hopgraph delete` while the server runs: the next calls see them,
    without a restart."""
    folder = tmp_path / "live"
    Index.build(demo_dataset.corpus, ["sparse"], progress=False).save(folder)
    new = tmp_path / "new.jsonl"
    new.write_text(
        json.dumps({"id": "zz1", "title": "Quokka Island", "text": "Quokkas live on Rottnest."})
        + "\n"
    )

    def cli(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "hopgraph.cli", *args], check=True, timeout=300)

    async with stdio_client(server_params(folder, "--method", "bm25")) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            before = await s.call_tool("get_passage", {"id": "zz1"})
            cli("add", str(folder), str(new), "-q")
            await anyio.sleep(1.2)  # past the reload interval
            found = await s.call_tool("search", {"query": "quokka rottnest", "k": 1})
            passage = await s.call_tool("get_passage", {"id": "zz1"})
            cli("delete", str(folder), "zz1")
            await anyio.sleep(1.2)
            gone = await s.call_tool("get_passage", {"id": "zz1"})
    assert "no passage" in error_text(before)
    assert found.structured_content["hits"][0]["id"] == "zz1"
    assert passage.structured_content["title"] == "Quokka Island"
    assert "no passage" in error_text(gone)
