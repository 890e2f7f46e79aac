"""Live updates: after any sequence of adds and deletes, every part and every method gives what
an index built from scratch on the final corpus gives."""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hopgraph.corpus import Corpus, Passage
from hopgraph.errors import (
    DuplicateIdError,
    NotUpdatableError,
    UnknownIdError,
    UpdateError,
)
from hopgraph.index import Index
from hopgraph.retrieve import get_retriever, list_methods

ALL_PARTS = [
    "sparse",
    "dense",
    "entities",
    "links",
    "corpus_graph",
    "triples",
    "partial_triples",
    "same_as",
]
ALL_OPTIONS = {
    "entities": {"title_aliases": True, "alias_mentions": True},
    "corpus_graph": {"shared_entities": True, "entity_max_df": 4},
}
FAST_PARTS = ["sparse", "entities", "links", "corpus_graph"]
FAST_OPTIONS = {
    "entities": {"title_aliases": True, "alias_mentions": True},
    "corpus_graph": {"knn": 0, "shared_entities": True, "entity_max_df": 4},
}


def _edited(p: Passage) -> Passage:
    """``p`` with other text under the same id (a delete, then an add, replaces a passage)."""
    words = p.text.split()
    half = len(words) // 2
    return dataclasses.replace(p, text=" ".join(words[half:] + words[:half]))


def _random_updates(corpus: Corpus, start: int, steps: int, seed: int):
    """``steps`` (add, delete) pairs: the index starts with the first ``start`` passages; the
    rest arrive over time, some passages leave and some come back edited."""
    rng = random.Random(seed)
    present = [p.id for p in corpus[:start]]
    waiting = list(corpus[start:])
    gone: list[Passage] = []
    by_id = {p.id: p for p in corpus}
    for _ in range(steps):
        n_del = rng.randint(0, min(3, len(present) - 2))
        delete = rng.sample(present, n_del)
        add = [waiting.pop(0) for _ in range(min(len(waiting), rng.randint(0, 6)))]
        if gone and rng.random() < 0.5:
            add.append(_edited(gone.pop(rng.randrange(len(gone)))))
        present = [i for i in present if i not in delete] + [p.id for p in add]
        gone.extend(by_id[i] for i in delete)
        yield add, delete


def tie_groups(ids: list[str], scores: list[float], rtol: float = 1e-9) -> list[list[str]]:
    """The ranking as runs of passages whose scores are equal up to float rounding, each run
    sorted: an updated index numbers terms in another order, so sums of the same numbers can
    differ in their last bit (1e-17) and flip a tie (tfidf_graph, seen once in 400 sequences)."""
    groups: list[list[str]] = []
    last = None
    for i, s in zip(ids, scores, strict=True):
        if last is not None and abs(s - last) <= rtol * max(abs(last), 1e-300):
            groups[-1].append(i)
        else:
            groups.append([i])
        last = s
    return [sorted(g) for g in groups]


def assert_same_rankings(updated: Index, rebuilt: Index, methods, queries, k: int = 10) -> None:
    for name, params in methods:
        a, b = get_retriever(updated, name, **params), get_retriever(rebuilt, name, **params)
        for q in queries:
            ra, rb = a.search(q, k), b.search(q, k)
            np.testing.assert_allclose(ra.scores, rb.scores, rtol=1e-5, atol=1e-6)
            assert tie_groups(ra.ids, ra.scores) == tie_groups(rb.ids, rb.scores), (name, q)


def _words_by_row(words, n: int) -> list[set[str]]:  # noqa: ANN001
    out: list[set[str]] = [set() for _ in range(n)]
    for j, w in enumerate(words.keys):
        for r in words.rows[words.indptr[j] : words.indptr[j + 1]].tolist():
            out[r].add(w)
    return out


def assert_same_fast_parts(updated: Index, rebuilt: Index, queries) -> None:
    """Part by part: the structures themselves, not only what the methods read from them."""
    for q in queries:
        sa, sb = updated.part("sparse"), rebuilt.part("sparse")
        np.testing.assert_array_equal(sa.scores(q), sb.scores(q))
    assert updated.part("sparse").stats() == rebuilt.part("sparse").stats()
    ea, eb = updated.part("entities"), rebuilt.part("entities")
    assert ea.names == eb.names and ea.aliases == eb.aliases
    assert (ea.mentions != eb.mentions).nnz == 0 and (ea.owns != eb.owns).nnz == 0
    # the title aliases found in the texts: rescanned only where they can have changed
    assert ea.found is not None and eb.found is not None
    fa, fb = ea.found_dict(), eb.found_dict()
    assert fa == fb
    # the word postings: carried through the updates, merged by a compaction, as a rebuild's
    wa, wb = ea.compacted().words, eb.words
    assert wa is not None and wb is not None
    n = len(rebuilt.corpus)
    assert _words_by_row(wa, n) == _words_by_row(wb, n)
    la, lb = updated.part("links"), rebuilt.part("links")
    assert (la.links != lb.links).nnz == 0
    np.testing.assert_array_equal(la.doc >= 0, lb.doc >= 0)
    np.testing.assert_array_equal(la.chunk, lb.chunk)
    ga, gb = updated.part("corpus_graph"), rebuilt.part("corpus_graph")
    assert (ga.adjacency != gb.adjacency).nnz == 0 and ga.info == gb.info


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory):
    """An untrained cross-encoder and GAT ranker: the update property is about the index, so
    random weights do (any change in the candidates or features would change their scores)."""
    import torch

    from hopgraph.models.gat import GATRanker, save_ranker
    from hopgraph.training.reranker import RerankerConfig, load_base_model, save_reranker

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("models")
    model, tok = load_base_model(RerankerConfig(layers=1, max_length=64))
    save_reranker(model, tok, root / "ce", {"max_length": 64})
    save_ranker(GATRanker(1 + 2 * 384, hidden=8, heads=2, layers=2, fc_hidden=4), root / "gat")
    return {"ce": str(root / "ce"), "gat": str(root / "gat")}


def _every_method(models: dict[str, str]) -> list[tuple[str, dict]]:
    needs_model = {"rerank": "ce", "gar": "ce", "fastinsight": "ce", "grapher_gat": "gat"}
    out = []
    for name in list_methods():
        params = {"model": models[needs_model[name]]} if name in needs_model else {}
        out.append((name, params))
    return out


def test_every_method_after_updates_equals_a_rebuild(demo_dataset, model_folders, tmp_path):
    corpus = demo_dataset.corpus
    queries = [q.text for q in demo_dataset.questions]
    index = Index.build(Corpus(corpus[:28]), ALL_PARTS, ALL_OPTIONS, progress=False)
    methods = _every_method(model_folders)
    assert {m for m, _ in methods} >= {"griever", "graph", "grapher_gat", "fastinsight", "rrf"}
    for step, (add, delete) in enumerate(_random_updates(corpus, 28, 3, seed=7)):
        index = index.updated(add=add, delete=delete)
        if step == 1:  # what is saved is enough to go on updating
            index.save(tmp_path / "ix")
            index = Index.load(tmp_path / "ix")
    rebuilt = Index.build(index.corpus, ALL_PARTS, ALL_OPTIONS, progress=False)
    assert index.corpus.ids == rebuilt.corpus.ids and len(index.corpus) > 28
    assert_same_rankings(index, rebuilt, methods, queries)
    for name in ALL_PARTS:
        assert index.part(name).stats() == rebuilt.part(name).stats(), name
    index.save(tmp_path / "final")  # and the result loads and answers
    assert get_retriever(Index.load(tmp_path / "final"), "griever").search(queries[0], 5).ids


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(0, 10**6), start=st.integers(3, 40), steps=st.integers(1, 4))
def test_any_update_sequence_equals_a_rebuild(demo_dataset, seed, start, steps):
    corpus = demo_dataset.corpus
    queries = [q.text for q in demo_dataset.questions[:6]]
    index = Index.build(Corpus(corpus[:start]), FAST_PARTS, FAST_OPTIONS, progress=False)
    for add, delete in _random_updates(corpus, start, steps, seed):
        index = index.updated(add=add, delete=delete)
    rebuilt = Index.build(index.corpus, FAST_PARTS, FAST_OPTIONS, progress=False)
    assert_same_fast_parts(index, rebuilt, queries)
    methods = [("bm25", {}), ("bm25_rm3", {}), ("graph", {}), ("tfidf_graph", {})]
    assert_same_rankings(index, rebuilt, methods, queries)


def test_add_and_delete_change_the_index_in_place(demo_dataset):
    corpus = demo_dataset.corpus
    index = Index.build(Corpus(corpus[:10]), ["sparse"], progress=False)
    before = index.parts["sparse"]
    index.add(corpus[10:12])
    assert len(index) == 12 and index.parts["sparse"] is not before
    assert index.update_seconds["sparse"] >= 0
    index.delete([corpus[0].id])
    assert corpus[0].id not in index.corpus and len(index.part("sparse").doc_lengths) == 11
    hit = get_retriever(index, "bm25").search(corpus[11].title + " " + corpus[11].text, 1)
    assert hit.ids == [corpus[11].id]


def test_bad_updates_raise_and_change_nothing(demo_dataset):
    corpus = demo_dataset.corpus
    index = Index.build(Corpus(corpus[:5]), ["sparse"], progress=False)
    ids = index.corpus.ids
    with pytest.raises(DuplicateIdError, match="already in the index or given twice") as err:
        index.updated(add=[corpus[0]])
    assert err.value.ids == [corpus[0].id]
    with pytest.raises(DuplicateIdError):
        index.add([corpus[6], corpus[6]])
    with pytest.raises(UnknownIdError) as unknown:
        index.delete(["no-such-id", ids[0]])
    assert unknown.value.ids == ["no-such-id"]
    with pytest.raises(UpdateError, match="empty"):
        index.delete(ids)
    assert index.corpus.ids == ids and index.part("sparse").n_docs == 5


def test_parts_without_per_passage_records_ask_for_a_rebuild(demo_dataset):
    corpus = demo_dataset.corpus
    index = Index.build(Corpus(corpus[:8]), ["sparse", "entities"], progress=False)
    index.part("entities").raw = None  # as an index written before live updates
    with pytest.raises(NotUpdatableError, match="rebuild the index"):
        index.updated(add=[corpus[9]])


def test_openie_triples_cannot_be_updated(demo_dataset, tmp_path):
    import json

    corpus = Corpus(demo_dataset.corpus[:3])
    docs = [{"title": p.title, "extracted_triples": [[p.title, "is", "a thing"]]} for p in corpus]
    path = tmp_path / "openie.json"
    path.write_text(json.dumps({"docs": docs}))
    index = Index.build(
        corpus, ["triples"], {"triples": {"extractor": "openie", "openie_file": str(path)}}
    )
    assert index.part("triples").info["triples"] == 3
    with pytest.raises(NotUpdatableError, match="OpenIE file"):
        index.updated(delete=[corpus[0].id])


def test_one_update_can_replace_a_passage(demo_dataset):
    corpus = demo_dataset.corpus
    index = Index.build(Corpus(corpus[:6]), ["sparse"], progress=False)
    edited = dataclasses.replace(corpus[2], text="Completely new words about lighthouses.")
    new = index.updated(add=[edited], delete=[corpus[2].id])
    assert new.corpus.ids[-1] == corpus[2].id and new.corpus.get(corpus[2].id).text == edited.text
    assert get_retriever(new, "bm25").search("lighthouses", 1).ids == [corpus[2].id]


def test_passages_without_id_or_text_are_refused_clearly(demo_dataset):
    index = Index.build(Corpus(demo_dataset.corpus[:4]), ["sparse"], progress=False)
    with pytest.raises(UpdateError, match="'q' has empty text") as err:
        index.updated(add=[Passage("q", "t", "  ")])
    assert "/" not in str(err.value)  # no folder path in the message
    with pytest.raises(UpdateError, match="string id"):
        index.updated(add=[Passage(5, "t", "text")])  # type: ignore[arg-type]


def test_a_server_and_the_cli_take_turns_and_lose_no_update(demo_dataset, tmp_path):
    from hopgraph.atomic import writer_lock
    from hopgraph.errors import WriterBusyError
    from hopgraph.serve.state import ServedIndex

    corpus = demo_dataset.corpus
    path = tmp_path / "ix"
    Index.build(Corpus(corpus[:6]), ["sparse"], progress=False).save(path)
    served = ServedIndex(path)
    with writer_lock(path):  # what `hopgraph add` does, while the server runs
        with pytest.raises(WriterBusyError, match=f"pid {os.getpid()}"):
            with writer_lock(path, timeout=0.2):
                pass
        Index.load(path).updated(add=[corpus[6]]).save(path)
    served.update(add=[corpus[7]])  # starts from the folder, not from its stale snapshot
    assert Index.load(path).corpus.ids == [p.id for p in corpus[:8]]
    assert served.snapshot.index.corpus.ids == [p.id for p in corpus[:8]]


def test_the_corpus_graph_leaves_the_entity_counts_alone(demo_dataset):
    """Issue 19's open item: building or updating the corpus graph's shared-entity edges set
    the entities part's mention counts to 1 in place (the float32 conversion shared the array),
    so `graph` ranked differently from an index without the corpus graph."""
    corpus = demo_dataset.corpus
    opts = {k: FAST_OPTIONS[k] for k in ("entities", "corpus_graph")}
    base = Corpus(corpus[:-5])
    with_graph = Index.build(base, ["sparse", "entities", "corpus_graph"], opts, progress=False)
    alone = Index.build(base, ["sparse", "entities"], opts, progress=False)
    assert alone.parts["entities"].mentions.data.max() > 1  # counts, not 0/1 flags
    queries = [q.text for q in demo_dataset.questions]
    for a, b in (
        (with_graph, alone),
        (with_graph.updated(add=corpus[-5:]), alone.updated(add=corpus[-5:])),
    ):
        ma, mb = a.parts["entities"].mentions, b.parts["entities"].mentions
        assert (ma != mb).nnz == 0
        assert_same_rankings(a, b, [("graph", {})], queries)


def test_title_aliases_found_in_old_texts_follow_added_and_deleted_pages():
    """A new page's title is an alias that old texts mention, and a deleted page's alias goes
    from the texts that mentioned it: only those texts are rescanned, and the result is a
    rebuild's."""
    opts = {"entities": {"title_aliases": True, "alias_mentions": True}}
    base = [
        Passage("a", "Ermengarde of Tours", "Ermengarde of Tours married Lothair in 821."),
        Passage(
            "b", "Lothair I", "Lothair I was the son of Louis the Pious and Ermengarde of Tours."
        ),
        Passage("c", "Louis the Pious", "Louis the Pious ruled after Charlemagne."),
        Passage(
            "d",
            "Prum Abbey",
            "Lothair I retired to Prum Abbey. Hugh of Tours was his father in law.",
        ),
    ]
    index = Index.build(Corpus(base), ["entities"], opts, progress=False)
    assert "hugh of tours" not in index.part("entities").found_dict()[3]
    add = [Passage("e", "Hugh of Tours", "Hugh of Tours was a count under Louis the Pious.")]
    index = index.updated(add=add, delete=["c"])
    found = index.part("entities").found_dict()
    assert found[2].get("hugh of tours") == 1.0  # the old text of d now holds the new alias
    assert not any("louis the pious" in f for f in found)  # its page is gone
    rebuilt = Index.build(index.corpus, ["entities"], opts, progress=False)
    assert found == rebuilt.part("entities").found_dict()
    ea, eb = index.part("entities"), rebuilt.part("entities")
    assert ea.names == eb.names and (ea.mentions != eb.mentions).nnz == 0


def test_an_alias_made_ambiguous_is_rescanned_where_it_was_found_and_nowhere_else():
    """A page "Hugh of Tours (count)" beside "Hugh of Tours" makes the alias ambiguous: the texts
    it was matched in are rescanned from the stored matches (no pass over every text), and
    there a shorter alias the greedy scan had skipped ("Tours Abbey", inside the old match)
    is found now, as a rebuild finds it."""
    from hopgraph.index.entities import rows_with_found

    opts = {"entities": {"title_aliases": True, "alias_mentions": True}}
    base = [
        Passage("a", "Hugh of Tours", "Hugh of Tours was a count under Louis the Pious."),
        Passage("b", "Tours Abbey", "Tours Abbey stands by the Loire."),
        Passage("c", "Prum Abbey", "Lothair retired to Prum Abbey, by Hugh of Tours Abbey."),
        Passage("d", "Louis the Pious", "Louis the Pious ruled after Charlemagne."),
        Passage("e", "Loire", "The Loire flows past Tours Abbey and Hugh of Tours's lands."),
    ]
    index = Index.build(Corpus(base), ["entities"], opts, progress=False)
    before = index.part("entities")
    assert "tours abbey" not in before.found_dict()[2]  # "Hugh of Tours" took those words
    keep = np.array([0, 1, 2, 4])  # d deleted: rows after it move up
    assert rows_with_found(before.found, before.found_keys, ["hugh of tours"], keep) == [0, 2, 3]
    assert rows_with_found(before.found, before.found_keys, ["no such entity"], keep) == []
    add = [Passage("f", "Hugh of Tours (count)", "A second page of that name.")]
    index = index.updated(add=add, delete=["d"])
    after = index.part("entities")
    assert "hugh of tours" not in after.aliases
    assert after.payload["rescan"] == [0, 2, 3]  # a, c and e (renumbered): where it was found
    found = after.found_dict()
    assert found[2].get("tours abbey") == 1.0
    rebuilt = Index.build(index.corpus, ["entities"], opts, progress=False)
    assert found == rebuilt.part("entities").found_dict()
    assert after.names == rebuilt.part("entities").names
    assert (after.mentions != rebuilt.part("entities").mentions).nnz == 0


@pytest.mark.parametrize("with_nul", [False, True])
def test_rows_mentioning_finds_what_a_text_by_text_scan_finds(with_nul, tmp_path):
    """The block-at-a-time Aho–Corasick scan (accents folded, NUL between texts) against the
    definition: the words alias_spans compares, joined, hold the phrase; also with the texts
    read from a passages file (FileCorpus.texts) and from an updated corpus over it."""
    import re

    from hopgraph.corpus.filecorpus import FileCorpus, write_passages
    from hopgraph.corpus.view import ViewCorpus
    from hopgraph.index.entities import rows_mentioning
    from hopgraph.text.ner import fold_accents

    rng = random.Random(4)
    words = ["Tours", "of", "Hugh", "Gödel", "Kurt", "the", "Ñandú", "x1", "Ōsaka", "city", "–"]
    words += ["(", "ﬁ", "İ", "Straße", "東京", "😀", "a\nb"] + (["a\x00b"] if with_nul else [])
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 15))) for _ in range(5000)]
    corpus = Corpus([Passage(f"p{i}", "", t) for i, t in enumerate(texts)])
    phrases = ["hugh of tours", "kurt godel", "nandu", "osaka city", "fi", "x1 city"]

    def scan(row: int) -> bool:
        w = " ".join(re.findall(r"[0-9A-Za-z]+", fold_accents(texts[row]))).lower()
        return any(f" {p} " in f" {w} " for p in phrases)

    assert rows_mentioning(corpus, phrases, "simple") == [r for r in range(5000) if scan(r)]
    some = list(range(0, 5000, 7))
    assert rows_mentioning(corpus, phrases, "simple", rows=some) == [r for r in some if scan(r)]
    offsets, ids = write_passages(corpus, tmp_path / "passages.jsonl")
    on_disk = FileCorpus(tmp_path / "passages.jsonl", offsets, ids)
    assert on_disk.texts(10, 20) == texts[10:20]
    assert rows_mentioning(on_disk, phrases, "simple") == [r for r in range(5000) if scan(r)]
    kept = [r for r in range(5000) if r % 3]
    added = [Passage("new", "", "Kurt Gödel city")]
    view = ViewCorpus(on_disk, kept, added)
    assert view.texts(0, len(view)) == [texts[r] for r in kept] + [added[0].text]
    expect = [i for i, r in enumerate(kept) if scan(r)] + [len(kept)]
    assert rows_mentioning(view, phrases, "simple") == expect
