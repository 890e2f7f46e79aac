"""Never fewer hits than asked: every method answers exactly ``k`` hits (every passage when
the corpus has fewer), a short ranking continued by the method's seed or first-stage ranking,
then corpus order, below its last hit, without repeats, within the filter, and each filled hit
explained as such. The corpus has no capitalised name, so the entity graph has no edge and the
SPRIG walk reaches only its seeds."""

from __future__ import annotations

import numpy as np
import pytest

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever, list_methods
from hopgraph.retrieve.base import Retriever

TOPICS = {
    "bread": [
        "baking bread needs flour, water, salt and yeast.",
        "sourdough bread rises slowly with a wild starter.",
        "a hot oven gives bread a dark crisp crust.",
        "rye bread is dense and keeps for many days.",
        "kneading the dough builds gluten for a chewy loaf.",
        "flatbread is baked quickly on a hot stone.",
    ],
    "bees": [
        "honey bees collect nectar from flowers in spring.",
        "a hive has one queen and thousands of workers.",
        "bees dance to tell the others where flowers grow.",
        "beekeepers smoke the hive before opening it.",
        "wax comb stores honey and young bees.",
        "wild bees nest alone in holes in dead wood.",
    ],
    "rivers": [
        "a river carries sand and mud down to the sea.",
        "floods spread silt over the fields near the river.",
        "a dam holds back water to make a lake.",
        "salmon swim upstream to lay their eggs.",
        "the river delta splits into many small channels.",
        "mills once used the river current to grind grain.",
    ],
    "stars": [
        "stars are giant balls of hot glowing gas.",
        "a telescope gathers faint light from far stars.",
        "the night sky shows a band of the galaxy.",
        "old stars swell and shed their outer layers.",
        "a comet grows a tail near the sun.",
        "sailors steered by the stars at night.",
    ],
    "chess": [
        "chess is played on a board of sixty four squares.",
        "the knight moves in the shape of the letter l.",
        "castling moves the king and a rook at once.",
        "a pawn that reaches the far rank becomes a queen.",
        "an opening is the first few moves of a game.",
        "checkmate ends the game when the king cannot escape.",
    ],
}
QUERIES = ["how do bees make honey", "what makes bread rise", "zzzqqq"]
FILTER = {"topic": {"$in": ["bread", "bees"]}}
METHODS = list_methods()


@pytest.fixture(scope="module")
def lower_index() -> Index:
    """30 lowercase passages indexed with every part the built-in methods need."""
    from hopgraph.defaults import DEFAULT_PARTS, detected_options

    corpus = Corpus(
        [
            Passage(f"{topic}-{i}", f"{topic} note {i}", text, {"topic": topic})
            for topic, texts in TOPICS.items()
            for i, text in enumerate(texts)
        ]
    )
    parts = list(dict.fromkeys([*DEFAULT_PARTS, "links", "corpus_graph", "triples",
                                "partial_triples", "same_as"]))  # fmt: skip
    options, _ = detected_options(corpus, parts)
    return Index.build(corpus, parts, options, progress=False)


@pytest.fixture(scope="module")
def gat_folder(tmp_path_factory, lower_index) -> str:
    """An untrained tiny GAT ranker (grapher_gat needs one; its scores do not matter here)."""
    torch = pytest.importorskip("torch")
    from hopgraph.models.gat import GATRanker, save_ranker

    torch.manual_seed(0)
    dim = lower_index.part("dense").embeddings.shape[1]
    model = GATRanker(1 + 2 * dim, hidden=8, heads=2, layers=2, fc_hidden=4)
    return str(save_ranker(model, tmp_path_factory.mktemp("gat") / "ranker"))


@pytest.fixture(autouse=True)
def keep_torch_threads(monkeypatch):
    monkeypatch.setenv("HOPGRAPH_KEEP_TORCH_THREADS", "1")  # grapher_gat: leave torch as it is


def _retriever(index: Index, method: str, gat_folder: str) -> Retriever:
    params = {"model": gat_folder} if method == "grapher_gat" else {}
    return get_retriever(index, method, **params)


def _unfilled(r: Retriever, query: str, k: int):
    """The method's own ranking, before any fill."""
    qvecs = r.index.part("dense").encode_queries([query]) if r.uses_dense else [None]
    return r._search_many([query], k, qvecs)[0]


def _check(ranking, k: int) -> None:
    assert len(ranking) == k
    assert len(set(ranking.ids)) == k
    assert ranking.scores == sorted(ranking.scores, reverse=True)
    assert len(ranking.explanations) == k


@pytest.mark.parametrize("method", METHODS)
def test_every_method_answers_k_hits(lower_index, gat_folder, method):
    r = _retriever(lower_index, method, gat_folder)
    n = len(lower_index.corpus)
    for k in (10, n + 20):
        want = min(k, n)
        batch = r.search_batch(QUERIES, k=k)
        for q, got in zip(QUERIES, batch, strict=True):
            _check(got, want)
            assert got.ids == r.search(q, k=k).ids  # one at a time as in a batch
            own = _unfilled(r, q, want)
            m = len(own)
            assert got.ids[:m] == own.ids, (method, q)
            whys = got.explanations
            assert not any("filled" in w for w in whys[:m]), (method, q)
            assert all(isinstance(w.get("filled"), str) for w in whys[m:]), (method, q)
            assert got.info.get("filled", 0) == want - m
            if m and m < want:
                assert max(got.scores[m:]) < own.scores[-1]


def test_graph_rrf_fills_from_its_seed_ranking(lower_index):
    """The case of the issue: without names the walk stays on the RRF top 5 (seed_k), and
    R@10 was R@5; the next five are RRF's next passages."""
    q = QUERIES[0]
    got = get_retriever(lower_index, "graph_rrf").search(q, k=10)
    seeds = get_retriever(lower_index, "rrf").search(q, k=10)
    assert got.info["filled"] == 5
    assert set(got.ids[:5]) == set(seeds.ids[:5])
    assert got.ids[5:] == seeds.ids[5:]
    assert got.explanations[5]["filled"] == "seed ranking (rrf), after graph_rrf's 5 hits"


def test_bm25_fills_in_corpus_order(lower_index):
    got = get_retriever(lower_index, "bm25").search("zzzqqq", k=3)
    assert got.ids == ["bread-0", "bread-1", "bread-2"]
    assert got.explanations[0]["filled"] == "corpus order, after bm25's 0 hits"
    # a reranker over BM25 has nothing to rescore: its base adds nothing, corpus order does
    got = get_retriever(lower_index, "rerank", base="bm25", n=5).search("zzzqqq", k=3)
    assert got.ids == ["bread-0", "bread-1", "bread-2"]
    assert got.explanations[0]["filled"] == "corpus order, after rerank's 0 hits"


def test_grapher_fills_past_its_candidates_from_its_base(lower_index):
    q = QUERIES[1]
    got = get_retriever(lower_index, "grapher_gcs", n=5).search(q, k=10)
    base = get_retriever(lower_index, "hybrid").search(q, k=10)
    assert set(got.ids[:5]) == set(base.ids[:5]) and got.ids[5:] == base.ids[5:]
    assert got.explanations[5]["filled"] == "base ranking (hybrid), after grapher_gcs's 5 hits"


@pytest.mark.parametrize("method", METHODS)
def test_filled_hits_match_the_filter(lower_index, gat_folder, method):
    r = _retriever(lower_index, method, gat_folder)
    corpus = lower_index.corpus
    topic = np.array([p.metadata["topic"] for p in corpus])
    n_ok = int(np.isin(topic, FILTER["topic"]["$in"]).sum())
    for k in (10, 50):
        for q in QUERIES:
            got = r.search(q, k=k, filter=FILTER)
            _check(got, min(k, n_ok))
            assert all(corpus.get(i).metadata["topic"] in ("bread", "bees") for i in got.ids)
            assert all(
                ("filled" in w) == (i >= len(got) - got.info.get("filled", 0))
                for i, w in enumerate(got.explanations)
            )
