"""At most N hits per document (``max_per_doc``): neighbouring chunks of one document do not
crowd a ranking, the ranking still has k hits when the index has enough documents, and its
info says what was skipped. The default limit applies to indexes of documents only: a passage
corpus (the multi-hop sets) ranks exactly as before."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from hopgraph.corpus import Corpus, Passage, load_corpus
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever
from hopgraph.retrieve.crowding import DEFAULT_MAX_PER_DOC, documents_of, within_cap

DOCS = {
    "bread.md": """# Baking bread

Bread needs flour, water, salt and yeast. The yeast eats the sugars in the flour and breathes
out gas, and the gas is what makes the dough rise. Kneading the dough builds gluten, the
stretchy web that holds the gas in, so a well kneaded loaf is light and chewy.

A sourdough loaf rises slowly with a wild starter instead of bought yeast. The starter is a
paste of flour and water kept alive for years and fed every day. Its bacteria make the bread
sour and help it keep for a week.

A hot oven gives bread a dark crisp crust. Bakers put a tray of water in the oven so that the
steam keeps the crust soft for the first minutes and the loaf can still grow. Rye bread is
dense and dark, and flatbread is baked quickly on a hot stone.
""",
    "bees.md": """# Keeping bees

Honey bees collect nectar from flowers in spring and summer. In the hive the workers turn the
nectar into honey by fanning their wings until most of the water is gone, then they seal the
honey in wax comb for the winter.

A hive has one queen and many thousands of workers. The queen lays all the eggs, up to two
thousand a day in early summer. Workers dance to tell the others where the flowers grow: the
angle of the dance points the way and its length tells the distance.

Beekeepers smoke the hive before opening it, which calms the bees. They take only the honey
the colony can spare and leave enough for the cold months. Wild bees nest alone in holes in
dead wood and in the ground.
""",
    "rivers.md": """# Rivers

A river carries sand and mud from the hills down to the sea. Where it slows, near the coast,
the mud settles and builds a delta that splits into many small channels. Floods spread silt
over the fields near the river and make them fertile.

A dam holds back the water to make a lake for drinking water and power. Salmon swim upstream
against the current to lay their eggs in the gravel where they hatched, and fish ladders help
them pass the dams.

Mills once used the river current to grind grain. A wheel turned by the water drove the heavy
stones through wooden gears. Many towns grew beside a river ford or bridge because trade
crossed there.
""",
    "stars.md": """# Watching the stars

Stars are giant balls of hot glowing gas, held together by their own weight. A telescope
gathers faint light from far stars with a large lens or mirror, so it shows stars too dim for
the eye.

On a dark night the sky shows a pale band of light, the disk of our own galaxy seen from
inside. Old stars swell into red giants and shed their outer layers as glowing shells of gas.
A comet grows a bright tail when its orbit brings it near the sun.

Sailors steered by the stars at night long before maps were good. The pole star stays almost
still above the north, so its height above the horizon tells a sailor how far north the ship
is.
""",
    "chess.md": """# Playing chess

Chess is played on a board of sixty four squares by two players, white and black. The knight
moves in the shape of the letter L and is the only piece that jumps over others.

Castling moves the king and a rook at once and puts the king in a safer corner. A pawn that
reaches the far rank becomes a queen, or any other piece its player chooses. An opening is the
first few moves of a game, and players learn the common openings by heart.

Checkmate ends the game when the king is attacked and cannot escape. A game is drawn when
neither side can win, for example when the same position appears three times or when the
player to move has no legal move but is not in check.
""",
    "python.md": """# Reading a file in Python

Python opens a file with the built-in open function and a with block, which closes the file
when the block ends even if an error is raised:

```
with open("notes.txt", encoding="utf-8") as f:
    for line in f:
        print(line.rstrip())
```

The loop reads the file one line at a time, so a large file never has to fit in memory. The
encoding argument says how the bytes are decoded into text; without it Python uses the
locale's encoding, which differs between machines.

To write a file, open it with mode "w" and call the write method. Mode "a" appends to the end
of an existing file instead of replacing it. The pathlib module offers read_text and
write_text for small files that fit in memory at once.
""",
}
CHUNK_WORDS = 30
QUERIES = {  # each about one document, whose chunks rank first and crowd the list
    "bread.md": "what makes bread dough rise and how do bakers get a crisp crust",
    "bees.md": "how do honey bees make honey in the hive and what does the queen do",
    "python.md": "how do I read a text file line by line in python with open",
}
METHODS = ["default", "bm25", "dense", "rrf", "hybrid", "graph_rrf"]


@pytest.fixture(scope="module")
def docs_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs") / "my_docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def doc_index_dir(tmp_path_factory, docs_folder) -> Path:
    """The documents in 30-word chunks, indexed with the default parts and saved."""
    from hopgraph.defaults import default_build

    corpus = load_corpus(docs_folder, chunk_words=CHUNK_WORDS)
    parts, options, detected = default_build(corpus)
    index = Index.build(corpus, parts, options, progress=False)
    index.detected = detected
    return index.save(tmp_path_factory.mktemp("ix") / "index")


@pytest.fixture(scope="module")
def doc_index(doc_index_dir) -> Index:
    return Index.load(doc_index_dir)


def doc_of(index: Index, pid: str) -> str:
    return index.corpus.get(pid).metadata.get("doc_id", pid)


def per_doc(index: Index, ids: list[str]) -> Counter:
    return Counter(doc_of(index, i) for i in ids)


def test_the_documents_are_chunked(doc_index):
    counts = Counter(p.metadata.get("doc_id") for p in doc_index.corpus)
    assert set(counts) == {n.removesuffix(".md") for n in DOCS}
    assert min(counts.values()) >= 3  # several chunks each: the case of the issue
    docs = documents_of(doc_index.corpus)
    assert docs is not None and docs.chunked and docs.named == len(DOCS)


@pytest.mark.parametrize("method", METHODS)
def test_at_most_n_per_document_and_still_k_hits(doc_index, method):
    r = get_retriever(doc_index, method)
    for q in QUERIES.values():
        free = r.search(q, k=8, max_per_doc=0)
        assert max(per_doc(doc_index, free.ids).values()) > 2, (method, q)  # crowded
        assert "max_per_doc" not in free.info
        for cap, k in ((1, 6), (2, 8), (3, 8)):
            got = r.search(q, k=k, max_per_doc=cap)
            assert len(got) == k and len(set(got.ids)) == k, (method, cap, q)
            assert max(per_doc(doc_index, got.ids).values()) <= cap, (method, cap, q)
            assert got.scores == sorted(got.scores, reverse=True)
            assert len(got.explanations) == k
            assert got.info["max_per_doc"] == cap and got.info["max_per_doc_from"] == "given"
            assert got.info["crowded_out"] >= 1, (method, cap, q)
            # the document asked about stays first
            assert doc_of(doc_index, got.ids[0]) == doc_of(doc_index, free.ids[0])
        one = r.search(q, k=6, max_per_doc=1)
        assert set(per_doc(doc_index, one.ids)) == {n.removesuffix(".md") for n in DOCS}


@pytest.mark.parametrize("method", ["bm25", "dense"])
def test_the_kept_hits_are_the_methods_ranking_without_the_crowd(doc_index, method):
    """For a method whose order does not depend on k: exactly the first hits of its full
    ranking that are among the first N of their document, and crowded_out counts the others
    ranked above the last one kept."""
    r = get_retriever(doc_index, method)
    n = len(doc_index)
    for q in QUERIES.values():
        full = r.search(q, k=n, max_per_doc=0)
        for cap in (1, 2):
            got = r.search(q, k=5, max_per_doc=cap)
            seen: Counter = Counter()
            want, skipped = [], 0
            for pid in full.ids:
                d = doc_of(doc_index, pid)
                if seen[d] < cap:
                    want.append(pid)
                    if len(want) == 5:
                        break
                else:
                    skipped += 1
                seen[d] += 1
            assert got.ids == want
            assert got.info["crowded_out"] == skipped


def test_k_beyond_what_the_documents_hold(doc_index):
    """Six documents with at most one hit each: six hits, however many are asked for."""
    for method in ("default", "bm25"):
        got = get_retriever(doc_index, method).search(QUERIES["bees.md"], k=20, max_per_doc=1)
        assert len(got) == len(DOCS)
        assert len(per_doc(doc_index, got.ids)) == len(DOCS)


def test_a_filter_and_a_limit_together(doc_index):
    spec = {"source": {"$in": ["bread.md", "bees.md", "rivers.md"]}}
    for method in ("default", "bm25", "graph_rrf"):
        r = get_retriever(doc_index, method)
        got = r.search(QUERIES["bread.md"], k=5, filter=spec, max_per_doc=1)
        assert sorted(per_doc(doc_index, got.ids)) == ["bees", "bread", "rivers"]
        assert got.info["filter_matches"] > 3 and got.info["max_per_doc"] == 1
        got = r.search(QUERIES["bread.md"], k=5, filter=spec, max_per_doc=2)
        assert len(got) == 5 and max(per_doc(doc_index, got.ids).values()) <= 2
        assert {doc_index.corpus.get(i).metadata["source"] for i in got.ids} <= set(
            spec["source"]["$in"]
        )


def test_the_default_limit_on_an_index_of_documents(doc_index):
    for method in ("default", "bm25"):
        r = get_retriever(doc_index, method)
        q = QUERIES["python.md"]
        got = r.search(q, k=5)
        assert max(per_doc(doc_index, got.ids).values()) <= DEFAULT_MAX_PER_DOC
        assert got.info["max_per_doc"] == DEFAULT_MAX_PER_DOC and got.info["crowded_out"] >= 1
        assert got.info["max_per_doc_from"].startswith("default for an index of documents")
        assert got.ids == r.search(q, k=5, max_per_doc=DEFAULT_MAX_PER_DOC).ids
        batch = r.search_batch(list(QUERIES.values()), k=5)
        assert [b.ids for b in batch] == [r.search(x, k=5).ids for x in QUERIES.values()]


def test_the_default_limit_is_raised_where_the_documents_are_too_few(doc_index):
    """Six documents and k=8 (or k=20): the default rises to the smallest limit with k hits,
    as every method answers k hits; a given limit stays and answers fewer."""
    sizes = Counter(p.metadata["doc_id"] for p in doc_index.corpus)
    for method in ("default", "bm25"):
        r = get_retriever(doc_index, method)
        q = QUERIES["bees.md"]
        for k, cap in ((8, 2), (20, 4), (len(doc_index), max(sizes.values()))):
            want = sum(min(n, cap) for n in sizes.values())
            assert want >= k > sum(min(n, cap - 1) for n in sizes.values())
            got = r.search(q, k=k)
            assert len(got) == k and max(per_doc(doc_index, got.ids).values()) <= cap
            assert got.info["max_per_doc"] == cap
            assert got.info["max_per_doc_from"].endswith(
                f"raised from {DEFAULT_MAX_PER_DOC} so that the search has k hits"
            )
        assert len(r.search(q, k=8, max_per_doc=1)) == len(DOCS)


def test_the_default_leaves_passage_corpora_as_they_were(demo_index, demo_dataset):
    """The demo set is a multi-hop passage corpus: no doc_id, no limit, the same rankings."""
    assert documents_of(demo_index.corpus) is None
    for method in ("bm25", "dense", "rrf"):
        r = get_retriever(demo_index, method)
        for q in demo_dataset.questions[:5]:
            got, free = r.search(q.text, k=10), r.search(q.text, k=10, max_per_doc=0)
            assert got.ids == free.ids and got.scores == free.scores
            assert "max_per_doc" not in got.info
            # a limit given on passages without documents changes nothing either
            assert r.search(q.text, k=10, max_per_doc=1).ids == free.ids


def test_multihop_sets_have_no_documents(data_dir):
    for name in ("hotpotqa", "musique", "2wikimultihopqa"):
        corpus = load_corpus(data_dir / name)
        assert documents_of(corpus) is None, name


def test_documents_are_not_chunked_when_each_has_one_passage():
    corpus = Corpus(
        [Passage(f"p{i}", "", f"text {i}", {"doc_id": f"d{i}", "chunk": 0}) for i in range(4)]
    )
    docs = documents_of(corpus)
    assert docs is not None and not docs.chunked and docs.named == 4


def test_documents_of_a_saved_and_an_updated_index(doc_index, doc_index_dir):
    """The loaded index (its passages file scanned as bytes), the same corpus in memory, and a
    generation after an update (its base's reading reused) group the rows alike."""
    from hopgraph.corpus.filecorpus import FileCorpus

    loaded = Index.load(doc_index_dir)
    assert isinstance(loaded.corpus, FileCorpus)
    in_memory = Corpus(list(loaded.corpus))
    a, b = documents_of(loaded.corpus), documents_of(in_memory)
    assert a is not None and b is not None
    assert np.array_equal(a.group, b.group) and np.array_equal(a.sizes, b.sizes)
    ids = loaded.corpus.ids
    gone = [i for i in ids if i.startswith("chess")]
    new = [
        Passage("extra-1", "Bread again", "more about bread", {"doc_id": "bread", "chunk": 99}),
        Passage("extra-2", "Lone", "a passage of no document", {}),
    ]
    updated = loaded.updated(add=new, delete=gone)
    docs = documents_of(updated.corpus)
    assert docs is not None
    rows = {pid: i for i, pid in enumerate(updated.corpus.ids)}
    group = docs.group
    bread = [rows[i] for i in updated.corpus.ids if i.startswith("bread")] + [rows["extra-1"]]
    assert len(bread) > 2 and len({int(group[r]) for r in bread}) == 1
    assert int(docs.sizes[group[rows["extra-2"]]]) == 1
    assert docs.named == len(DOCS) - 1  # chess is gone


def test_within_cap():
    group = np.array([0, 0, 1, 0, 2, 1, 1, 0])
    assert within_cap(group, 1).tolist() == [1, 0, 1, 0, 1, 0, 0, 0]
    assert within_cap(group, 2).tolist() == [1, 1, 1, 0, 1, 1, 0, 0]
    eligible = np.array([0, 1, 1, 1, 1, 1, 1, 1], bool)  # the first is filtered out
    assert within_cap(group, 2, eligible).tolist() == [0, 1, 1, 1, 1, 1, 0, 0]


@pytest.mark.parametrize("bad", [-1, True, "2", 1.5])
def test_a_bad_limit_is_refused(doc_index, bad):
    with pytest.raises(ConfigError, match="max_per_doc"):
        get_retriever(doc_index, "bm25").search("bread", k=3, max_per_doc=bad)


# -- the command line, the HTTP service, MCP and the integrations --------------------------------


def test_cli_search_max_per_doc_and_json_passages(doc_index_dir, doc_index):
    from click.testing import CliRunner

    from hopgraph.cli import cli

    q = QUERIES["bread.md"]
    run = CliRunner().invoke
    r = run(cli, ["search", str(doc_index_dir), q, "-k", "5", "--max-per-doc", "1", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    ids = [h["id"] for h in out["hits"]]
    assert len(ids) == 5 and max(per_doc(doc_index, ids).values()) == 1
    assert out["info"]["max_per_doc"] == 1 and out["info"]["crowded_out"] >= 1
    for h in out["hits"]:
        p = doc_index.corpus.get(h["id"])
        assert (h["title"], h["text"], h["metadata"]) == (p.title, p.text, p.metadata)
        assert {"score", "why"} <= set(h)
    r = run(cli, ["search", str(doc_index_dir), q, "-k", "5", "--method", "bm25"])
    assert r.exit_code == 0, r.output
    assert f"at most {DEFAULT_MAX_PER_DOC} per document; --max-per-doc 0 shows them" in r.stdout
    r = run(cli, ["search", str(doc_index_dir), q, "--max-per-doc", "0", "--method", "bm25"])
    assert r.exit_code == 0 and "per document" not in r.stdout
    r = run(cli, ["search", str(doc_index_dir), q, "--max-per-doc", "-1"])
    assert r.exit_code != 0 and "--max-per-doc" in r.output


def test_cli_search_says_when_nothing_is_found(doc_index_dir):
    from click.testing import CliRunner

    from hopgraph.cli import cli

    spec = json.dumps({"source": "no-such-file.md"})
    r = CliRunner().invoke(cli, ["search", str(doc_index_dir), "bread", "--filter", spec])
    assert r.exit_code == 0 and "no passage matches the filter" in r.output
    r = CliRunner().invoke(cli, ["search", str(doc_index_dir), "zzqqxx", "--method", "bm25"])
    assert r.exit_code == 0 and "bm25 found no passage for this query" in r.output
    r = CliRunner().invoke(cli, ["search", str(doc_index_dir), "bread", "--method", "bm25"])
    assert r.exit_code == 0 and "found no passage" not in r.output


def test_cli_search_help_shows_every_default():
    from click.testing import CliRunner

    from hopgraph.cli import cli

    r = CliRunner().invoke(cli, ["search", "--help"], terminal_width=200)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for option in ("-k", "--method", "--set", "--json", "--filter", "--max-per-doc"):
        line = text.split(f" {option} ", 1)[1].split(" --", 1)[0]
        assert "[default:" in line, option
    assert f"[default: {DEFAULT_MAX_PER_DOC} on an index of documents" in text


def test_http_max_per_doc(doc_index_dir, doc_index):
    from fastapi.testclient import TestClient

    from hopgraph.serve import create_app

    q = QUERIES["bees.md"]
    with TestClient(create_app(str(doc_index_dir))) as c:
        for method in ("default", "bm25"):
            body = {"query": q, "k": 5, "method": method, "max_per_doc": 1, "passages": True}
            r = c.post("/search", json=body)
            assert r.status_code == 200, r.text
            hits = r.json()["hits"]
            ids = [h["id"] for h in hits]
            assert ids == get_retriever(doc_index, method).search(q, k=5, max_per_doc=1).ids
            assert len(ids) == 5 and max(per_doc(doc_index, ids).values()) == 1
            info = r.json()["info"]
            assert info["max_per_doc"] == 1 and info["crowded_out"] >= 1
            assert all(h["text"] and h["metadata"]["doc_id"] for h in hits)
        r = c.post("/search", json={"query": q, "k": 5, "method": "bm25"})  # the default
        assert r.json()["info"]["max_per_doc"] == DEFAULT_MAX_PER_DOC
        r = c.post("/search/batch", json={"queries": [q, q], "k": 6, "max_per_doc": 1})
        assert r.status_code == 200, r.text
        for res in r.json()["results"]:
            assert len(per_doc(doc_index, [h["id"] for h in res["hits"]])) == 6
            assert res["info"]["max_per_doc"] == 1
        for bad in (-1, "1", True, 1.5):
            r = c.post("/search", json={"query": q, "max_per_doc": bad})
            assert r.status_code == 422, bad
        schema = c.get("/openapi.json").json()["components"]["schemas"]
        prop = schema["SearchRequest"]["properties"]["max_per_doc"]
        assert "doc_id" in prop["description"]
        assert "info" in schema["SearchResponse"]["properties"]


def test_the_search_page_keeps_the_lines_of_a_passage(doc_index_dir):
    from fastapi.testclient import TestClient

    from hopgraph.serve import create_app

    with TestClient(create_app(str(doc_index_dir))) as c:
        r = c.get("/", params={"q": "read a file line by line with open in python", "k": "4"})
    assert r.status_code == 200
    page = r.text
    assert "white-space:pre-wrap" in page.split(".text{", 1)[1].split("}", 1)[0]
    # the code block's lines reach the page as lines, inside the passage text
    assert "as f:\n    for line in f:\n        print(line.rstrip())" in page
    assert "per document." in page  # the note on the chunks the default limit skipped


def test_mcp_tool_max_per_doc(doc_index):
    from hopgraph.mcp_server import IndexTools

    tools = IndexTools(doc_index)
    res = tools.search(QUERIES["bread.md"], k=5, max_per_doc=1)
    assert len({h.metadata["doc_id"] for h in res.hits}) == 5 and res.crowded_out >= 1


def test_langchain_max_per_doc(doc_index):
    pytest.importorskip("langchain_core")
    from hopgraph.integrations.langchain import HopgraphRetriever

    retriever = HopgraphRetriever(doc_index, method="bm25", k=4, max_per_doc=1)
    docs = retriever.invoke(QUERIES["python.md"])
    assert len({d.metadata["doc_id"] for d in docs}) == 4
    with pytest.raises(ConfigError):
        HopgraphRetriever(doc_index, max_per_doc=-2)


def test_the_other_integrations_take_max_per_doc(doc_index):
    q = QUERIES["python.md"]
    want = get_retriever(doc_index, "bm25").search(q, k=4, max_per_doc=1).ids
    pytest.importorskip("llama_index.core")
    from hopgraph.integrations.llamaindex import HopgraphRetriever as LlamaRetriever

    got = LlamaRetriever(doc_index, method="bm25", k=4, max_per_doc=1).retrieve(q)
    assert [n.node.id_ for n in got] == want
    pytest.importorskip("haystack")
    from hopgraph.integrations.haystack import HopgraphRetriever as HaystackRetriever

    docs = HaystackRetriever(doc_index, method="bm25", k=4, max_per_doc=1).run(q)["documents"]
    assert [d.id for d in docs] == want
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyterrier")
    from hopgraph.integrations.pyterrier import HopgraphRetriever as TerrierRetriever

    frame = TerrierRetriever(doc_index, method="bm25", k=4, max_per_doc=1).transform(
        pd.DataFrame({"qid": ["1"], "query": [q]})
    )
    assert frame["docno"].tolist() == want
