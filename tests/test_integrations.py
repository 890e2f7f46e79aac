"""hopgraph.integrations: LangChain, LlamaIndex, Haystack and PyTerrier adapters, each checked
with the real framework against ``get_retriever(index).search`` on the demo corpus."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import replace

import pytest

from hopgraph.corpus import Corpus, load_dataset
from hopgraph.data import demo_dataset_path
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")
pytest.importorskip("haystack")
pytest.importorskip("pyterrier")

FRAMEWORKS = ["langchain_core", "llama_index", "haystack", "pyterrier"]
LANG_FILTER = {"lang": {"$in": ["en"]}}


@pytest.fixture(scope="module")
def dataset():
    """The demo dataset, its passages given metadata (year, lang) to carry and filter on."""
    ds = load_dataset(demo_dataset_path())
    passages = [
        replace(p, metadata={"year": 1950 + i, "lang": "de" if i % 3 == 0 else "en"})
        for i, p in enumerate(ds.corpus)
    ]
    return replace(ds, corpus=Corpus(passages))


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, dataset):
    """The default method's parts over the demo corpus, built once and saved."""
    folder = tmp_path_factory.mktemp("integrations") / "index"
    Index.build(dataset.corpus, progress=False).save(folder)
    return folder


@pytest.fixture(scope="module")
def index(index_dir):
    return Index.load(index_dir)


@pytest.fixture(scope="module")
def questions(dataset):
    return [q.text for q in dataset.questions[:4]]


def expected(index, query, k=10, method=None, filter=None, **params):
    return get_retriever(index, method, **params).search(query, k=k, filter=filter)


# --- packaging ------------------------------------------------------------------------------


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )


def test_importing_hopgraph_imports_no_framework():
    code = (
        "import sys, hopgraph, hopgraph.integrations, hopgraph.integrations._common\n"
        "hopgraph.Index, hopgraph.get_retriever\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_an_adapter_imports_only_its_framework():
    code = (
        "import sys, hopgraph.integrations.langchain\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'llama_index', 'haystack',"
        " 'pyterrier'}))\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("langchain", "langchain_core", "langchain"),
        ("llamaindex", "llama_index", "llamaindex"),
        ("haystack", "haystack", "haystack"),
        ("pyterrier", "pyterrier", "pyterrier"),
    ],
)
def test_a_missing_framework_names_the_extra(module, blocked, extra):
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "try:\n"
        f"    import hopgraph.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr
    assert f"pip install 'hopgraph[{extra}]'" in proc.stdout
    assert f"hopgraph.integrations.{module}" in proc.stdout


# --- the shared part ------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["langchain", "llamaindex", "haystack", "pyterrier"])
def test_bad_arguments_fail_when_the_adapter_is_made(index, module):
    cls = __import__(f"hopgraph.integrations.{module}", fromlist=["x"]).HopgraphRetriever
    with pytest.raises(TypeError, match="hopgraph.Index or the folder"):
        cls(42)
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        cls(index, k=0)
    with pytest.raises(ConfigError, match="unknown method"):
        cls(index, method="nope")
    with pytest.raises(ConfigError, match="k_rfr"):
        cls(index, method="rrf", k_rfr=5)
    with pytest.raises(ConfigError):
        cls(index, filter={"year": {"$between": [1, 2]}})
    with pytest.raises(ConfigError):
        cls(index, filter=["lang", "en"])


# --- LangChain ------------------------------------------------------------------------------


def test_langchain_matches_hopgraph(index, index_dir, questions):
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    from hopgraph.integrations.langchain import HopgraphRetriever

    retriever = HopgraphRetriever(index, k=5)
    assert isinstance(retriever, BaseRetriever)
    assert retriever.method == "multihop"
    from_path = HopgraphRetriever(str(index_dir), k=5)
    assert isinstance(from_path.index, Index)
    for q in questions:
        ranking = expected(index, q, k=5)
        docs = retriever.invoke(q)
        assert all(isinstance(d, Document) for d in docs)
        assert [d.id for d in docs] == ranking.ids
        assert [d.metadata["score"] for d in docs] == pytest.approx(ranking.scores)
        assert [d.id for d in from_path.invoke(q)] == ranking.ids
        for rank, (doc, why) in enumerate(zip(docs, ranking.explanations, strict=True), 1):
            passage = index.corpus.get(doc.id)
            assert doc.page_content == f"{passage.title}\n{passage.text}"
            assert doc.metadata["id"] == passage.id
            assert doc.metadata["title"] == passage.title
            assert doc.metadata["rank"] == rank
            assert doc.metadata["year"] == passage.metadata["year"]
            assert doc.metadata["lang"] == passage.metadata["lang"]
            assert doc.metadata["why"] == why["summary"]
            # the path it was reached by (1 to 3 hops with the chain round), else its signals
            assert doc.metadata["why"].startswith(("1-hop", "2-hop", "3-hop", "lifted by: "))


def test_langchain_k_method_params_and_filter(index, questions):
    from hopgraph.integrations.langchain import HopgraphRetriever

    q = questions[1]
    retriever = HopgraphRetriever(index, k=3)
    assert len(retriever.invoke(q)) == 3
    assert [d.id for d in retriever.invoke(q, k=7)] == expected(index, q, k=7).ids

    bm25 = HopgraphRetriever(index, method="bm25", k=4)
    docs = bm25.invoke(q)
    assert [d.id for d in docs] == expected(index, q, k=4, method="bm25").ids
    assert all(d.metadata["method"] == "bm25" and "why" not in d.metadata for d in docs)

    rrf = HopgraphRetriever(index, method="rrf", k=10, k_rrf=1, depth=20, tags=["hop"])
    assert rrf.tags == ["hop"] and rrf.params == {"k_rrf": 1, "depth": 20}
    want = expected(index, q, method="rrf", k_rrf=1, depth=20)
    assert [d.id for d in rrf.invoke(q)] == want.ids
    assert want.ids != expected(index, q, method="rrf").ids  # the parameters did change it

    filtered = HopgraphRetriever(index, k=5, filter=LANG_FILTER)
    docs = filtered.invoke(q)
    assert [d.id for d in docs] == expected(index, q, k=5, filter=LANG_FILTER).ids
    assert docs and all(d.metadata["lang"] == "en" for d in docs)
    older = {"year": {"$lt": 1960}}
    docs = retriever.invoke(q, filter=older)
    assert docs and all(d.metadata["year"] < 1960 for d in docs)


def test_langchain_chain_without_llm(index, questions):
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from hopgraph.integrations.langchain import HopgraphRetriever

    def format_docs(docs):
        return "\n\n".join(f"[{d.id}] {d.page_content}" for d in docs)

    retriever = HopgraphRetriever(index, k=2)
    q = questions[0]
    top = expected(index, q, k=2).ids
    context = (retriever | RunnableLambda(format_docs)).invoke(q)
    assert context.startswith(f"[{top[0]}] {index.corpus.get(top[0]).title}\n")
    assert f"[{top[1]}]" in context

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | prompt
    text = chain.invoke(q).to_string()
    assert index.corpus.get(top[0]).text in text and text.endswith(f"Question: {q}")

    assert [d.id for d in asyncio.run(retriever.ainvoke(q, k=3))] == expected(index, q, 3).ids
    batched = retriever.batch(questions[:3])
    assert [[d.id for d in docs] for docs in batched] == [
        expected(index, x, k=2).ids for x in questions[:3]
    ]


# --- LlamaIndex -----------------------------------------------------------------------------


def test_llamaindex_matches_hopgraph(index, index_dir, questions):
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

    from hopgraph.integrations.llamaindex import HopgraphRetriever

    retriever = HopgraphRetriever(index_dir, k=5)
    assert isinstance(retriever, BaseRetriever)
    for q in questions:
        ranking = expected(index, q, k=5)
        nodes = retriever.retrieve(q)
        assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
        assert [n.node.id_ for n in nodes] == ranking.ids
        assert [n.score for n in nodes] == pytest.approx(ranking.scores)
        assert [n.node.node_id for n in retriever.retrieve(QueryBundle(q))] == ranking.ids
        for rank, n in enumerate(nodes, 1):
            passage = index.corpus.get(n.node.id_)
            meta = n.node.metadata
            assert n.node.text == f"{passage.title}\n{passage.text}"
            assert (meta["id"], meta["title"], meta["rank"]) == (passage.id, passage.title, rank)
            assert meta["year"] == passage.metadata["year"] and meta["why"]
            llm_text = n.node.get_content(MetadataMode.LLM)  # passage and its own metadata
            assert passage.text in llm_text and f"year: {passage.metadata['year']}" in llm_text
            assert "why" not in llm_text and "score" not in llm_text


def test_llamaindex_k_method_and_filter(index, questions):
    from hopgraph.integrations.llamaindex import HopgraphRetriever

    q = questions[2]
    retriever = HopgraphRetriever(index, method="bm25", k=3)
    assert [n.node.id_ for n in retriever.retrieve(q)] == expected(index, q, 3, "bm25").ids
    retriever.k = 6
    assert len(retriever.retrieve(q)) == 6
    filtered = HopgraphRetriever(index, k=4, filter=LANG_FILTER)
    nodes = filtered.retrieve(q)
    assert [n.node.id_ for n in nodes] == expected(index, q, 4, filter=LANG_FILTER).ids
    assert all(n.node.metadata["lang"] == "en" for n in nodes)


# --- Haystack -------------------------------------------------------------------------------


def test_haystack_component_matches_hopgraph(index, questions):
    from haystack import Document

    from hopgraph.integrations.haystack import HopgraphRetriever

    retriever = HopgraphRetriever(index, k=5)
    for q in questions:
        ranking = expected(index, q, k=5)
        docs = retriever.run(q)["documents"]
        assert all(isinstance(d, Document) for d in docs)
        assert [d.id for d in docs] == ranking.ids
        assert [d.score for d in docs] == pytest.approx(ranking.scores)
        for rank, d in enumerate(docs, 1):
            passage = index.corpus.get(d.id)
            assert d.content == f"{passage.title}\n{passage.text}"
            assert (d.meta["title"], d.meta["rank"], d.meta["lang"]) == (
                passage.title,
                rank,
                passage.metadata["lang"],
            )
            assert d.meta["why"]
    q = questions[0]
    assert len(retriever.run(q, top_k=2)["documents"]) == 2
    docs = retriever.run(q, filters=LANG_FILTER)["documents"]
    assert [d.id for d in docs] == expected(index, q, 5, filter=LANG_FILTER).ids
    assert all(d.meta["lang"] == "en" for d in docs)
    bm25 = HopgraphRetriever(index, method="bm25", k=5)
    assert [d.id for d in bm25.run(q)["documents"]] == expected(index, q, 5, "bm25").ids


def test_haystack_pipeline_and_serialization(index, index_dir, questions):
    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder
    from haystack.core.errors import SerializationError

    from hopgraph.integrations.haystack import HopgraphRetriever

    template = "{% for d in documents %}[{{ d.id }}] {{ d.meta.title }}\n{% endfor %}Q: {{ q }}"
    pipe = Pipeline()
    pipe.add_component("retriever", HopgraphRetriever(index_dir, k=3, filter=LANG_FILTER))
    pipe.add_component("prompt", PromptBuilder(template, required_variables=["documents", "q"]))
    pipe.connect("retriever.documents", "prompt.documents")
    q = questions[1]
    want = expected(index, q, 3, filter=LANG_FILTER).ids
    lines = [f"[{pid}] {index.corpus.get(pid).title}" for pid in want]
    out = pipe.run({"retriever": {"query": q}, "prompt": {"q": q}})
    assert out["prompt"]["prompt"] == "\n".join([*lines, f"Q: {q}"])

    # made from a folder, the component (and so the pipeline) serializes and loads again
    again = Pipeline.loads(pipe.dumps(), allowed_modules=["hopgraph.integrations.haystack"])
    out = again.run({"retriever": {"query": q, "top_k": 2}, "prompt": {"q": q}})
    assert out["prompt"]["prompt"] == "\n".join([*lines[:2], f"Q: {q}"])
    data = HopgraphRetriever(index_dir, method="rrf", k_rrf=5).to_dict()
    assert data["init_parameters"] == {
        "index": str(index_dir),
        "method": "rrf",
        "k": 10,
        "filter": None,
        "max_per_doc": None,
        "k_rrf": 5,
    }
    restored = HopgraphRetriever.from_dict(data)
    assert [d.id for d in restored.run(q)["documents"]] == expected(
        index, q, 10, "rrf", k_rrf=5
    ).ids
    with pytest.raises(SerializationError, match="index folder"):
        HopgraphRetriever(index).to_dict()


# --- PyTerrier ------------------------------------------------------------------------------


def test_pyterrier_transformer(index, index_dir, dataset):
    import pandas as pd
    import pyterrier as pt

    from hopgraph.integrations.pyterrier import HopgraphRetriever

    retriever = HopgraphRetriever(index_dir, k=4)
    assert isinstance(retriever, pt.Transformer)
    qs = dataset.questions[:3]
    topics = pd.DataFrame({"qid": [q.id for q in qs], "query": [q.text for q in qs]})
    res = retriever(topics)
    assert list(res.columns) == ["qid", "query", "docno", "score", "rank", "title", "text"]
    for row in res.itertuples():  # what a PyTerrier re-ranker reads: title and text
        p = index.corpus.get(row.docno)
        assert row.title == p.title and row.text == p.content and p.title in row.text
    for q in qs:
        rows = res[res.qid == q.id]
        ranking = expected(index, q.text, k=4)
        assert rows.docno.tolist() == ranking.ids
        assert rows.score.tolist() == pytest.approx(ranking.scores)
        assert rows["rank"].tolist() == [0, 1, 2, 3]
        assert set(rows["query"]) == {q.text}
    empty = retriever(topics.iloc[:0])
    assert list(empty.columns) == [*res.columns] and empty.empty
    bare = HopgraphRetriever(index_dir, k=4, text=False)(topics)
    assert list(bare.columns) == ["qid", "query", "docno", "score", "rank"]
    with pytest.raises(pt.validate.InputValidationError, match="query"):
        retriever(topics[["qid"]])
    assert retriever.search(qs[0].text).docno.tolist() == expected(index, qs[0].text, 4).ids
    cut = (retriever % 2)(topics)
    assert cut.groupby("qid").size().tolist() == [2, 2, 2]
    bm25 = HopgraphRetriever(index, method="bm25", k=4, filter=LANG_FILTER)
    res = bm25(topics)
    assert (
        res[res.qid == qs[0].id].docno.tolist()
        == expected(index, qs[0].text, 4, "bm25", filter=LANG_FILTER).ids
    )


def test_pyterrier_experiment_without_java(index, dataset):
    import pandas as pd
    import pyterrier as pt

    from hopgraph.integrations.pyterrier import HopgraphRetriever

    qs = dataset.questions[:8]
    topics = pd.DataFrame({"qid": [q.id for q in qs], "query": [q.text for q in qs]})
    qrels = pd.DataFrame([{"qid": q.id, "docno": g, "label": 1} for q in qs for g in q.gold])
    systems = [HopgraphRetriever(index), HopgraphRetriever(index, method="bm25")]
    table = pt.Experiment(
        systems, topics, qrels, eval_metrics=["recall_5", "recall_2"], names=["default", "bm25"]
    )
    assert table["name"].tolist() == ["default", "bm25"]
    for name, method in [("default", None), ("bm25", "bm25")]:
        row = table[table.name == name].iloc[0]
        for cut in (5, 2):
            ours = [
                len(set(expected(index, q.text, 10, method).ids[:cut]) & set(q.gold)) / len(q.gold)
                for q in qs
            ]
            assert row[f"recall_{cut}"] == pytest.approx(sum(ours) / len(ours))
    assert table[table.name == "default"].iloc[0]["recall_5"] >= 0.75
    assert not pt.java.started()
    assert "jnius" not in sys.modules
