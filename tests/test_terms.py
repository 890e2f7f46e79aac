"""Entity mentions from n-gram statistics (``entities.ner=terms``, hopgraph.index.terms): the
entity graph of a corpus in a script without case, whose titles are not names to link to."""

from __future__ import annotations

import json
import random
from pathlib import Path

from hopgraph.corpus import Corpus, Passage
from hopgraph.index import Index
from hopgraph.index.detect import detect_settings
from hopgraph.index.streaming import build_index
from hopgraph.index.terms import mine_terms, segments
from hopgraph.retrieve import get_retriever

LINKED = json.loads((Path(__file__).parent / "data" / "linked_pages.json").read_text("utf-8"))


def _chinese_corpus(n: int = 60, seed: int = 0) -> list[str]:
    """Texts where "鲁克韦尔船厂" is a name (written about in a few passages, with many
    different neighbours), "的" a common character, and "1903年" a date."""
    rng = random.Random(seed)
    fillers = ["河流", "港口", "城市", "大学", "工程师", "货轮", "航线", "锡矿", "海难", "剧作"]
    before = ["由", "在", "与", "把", "从", "向", "为", "和"]
    after = ["建造", "创立", "经营", "出售", "修理", "设计", "拥有", "关闭"]
    texts = []
    for i in range(n):
        words = [rng.choice(fillers) + "的" + rng.choice(fillers) for _ in range(6)]
        if i % 12 == 0:  # five passages write about the shipyard, three times each
            words += [rng.choice(before) + "鲁克韦尔船厂" + rng.choice(after) for _ in range(3)]
        words.append("1903年")
        texts.append("，".join(words) + "。")
    return texts


def test_a_name_used_across_passages_is_a_term_and_its_fragments_and_common_words_are_not():
    terms = mine_terms(_chinese_corpus())
    assert "鲁克韦尔船厂" in terms
    assert not any(
        t in terms for t in ("克韦尔", "鲁克韦", "韦尔船厂")
    )  # always the same neighbours
    assert not any("的" == t[0] or "的" == t[-1] for t in terms)
    assert not any(t[0].isdigit() or t[-1].isdigit() for t in terms)  # "1903年"


def test_spaced_scripts_mine_word_ngrams_and_skip_common_words_at_their_edges():
    names = ["نجيب محفوظ", "قناة السويس"]
    rng = random.Random(1)
    fill = "كان هناك بيت كبير قديم جديد جميل بعيد قريب".split()
    texts = []
    for i in range(60):
        words = [rng.choice(fill) for _ in range(20)]
        if i % 15 == 0:  # four passages write about each, three times
            for name in names:
                for _ in range(3):
                    words.insert(rng.randrange(len(words)), name)
        texts.append(" ".join(words) + ".")
    terms = mine_terms(texts)
    assert set(names) <= set(terms)
    assert all(" " in t for t in terms)  # one word is never a term in a spaced script


def test_segments_cut_clauses_at_punctuation_and_unspaced_words_into_characters():
    segs = segments("Tobias Grennick, 托拜厄斯 founded it")
    assert segs == [
        (("tobias", "grennick"), False),
        (("托", "拜", "厄", "斯"), True),
        (("founded", "it"), False),
    ]


def test_detection_mines_terms_only_where_the_texts_have_no_case():
    zh = Corpus([Passage(str(i), "", t) for i, t in enumerate(_chinese_corpus())])
    got = detect_settings(zh)
    assert got["entities"]["ner"] == "terms" and got["why"]["cased_text_share"] < 0.5
    de_pages = [("", t.replace(" (", " ")) for _, t in LINKED["de"]]  # untitled German pages
    de = Corpus([Passage(str(i), t, x) for i, (t, x) in enumerate(de_pages)])
    assert "ner" not in detect_settings(de)["entities"]  # cased: the regex's capitals stay


def test_the_entity_graph_of_terms_walks_two_hops_in_chinese():
    """Untitled-as-names Chinese pages (titles in a script without case: no aliases): the
    question names the shipyard, a term; the walk reaches its founder's page through the
    shipyard's page, which the regex NER (no capitals) could not."""
    pages = LINKED["zh"]
    corpus = Corpus([Passage(str(i), t, x) for i, (t, x) in enumerate(pages)])
    index = Index.build(corpus, progress=False)
    ents = index.part("entities")
    assert ents.options.ner == "terms" and not ents.options.title_aliases
    assert "鲁克韦尔船厂" in ents.terms and "托拜厄斯" in ents.terms
    question = "鲁克韦尔船厂的创始人出生在哪里？"
    assert [ents.names[j] for j in ents.query_entities(question)] == ["鲁克韦尔船厂"]
    top = [pages[int(h.id)][0] for h in get_retriever(index, "graph").search(question, k=3)]
    assert "托拜厄斯·格伦尼克" in top  # question → 鲁克韦尔船厂 → the yard's page → 托拜厄斯
    regex = Index.build(corpus, options={"entities": {"ner": "regex"}}, progress=False)
    assert regex.part("entities").names == []


def test_terms_survive_save_and_load_and_updates_find_them_in_added_texts(tmp_path):
    texts = _chinese_corpus()
    corpus = Corpus([Passage(str(i), "", t) for i, t in enumerate(texts)])
    index = Index.build(corpus, progress=False)
    index.save(tmp_path / "ix")
    loaded = Index.load(tmp_path / "ix")
    assert loaded.part("entities").terms == index.part("entities").terms
    loaded.add([Passage("new", "", "他们从鲁克韦尔船厂出发，河流的港口。")])
    ents = loaded.part("entities")
    assert ents.terms == index.part("entities").terms  # the build's terms, not mined again
    row = loaded.corpus.ids.index("new")
    found = {ents.names[j] for j in ents.mentions[row].indices}
    assert found == {"鲁克韦尔船厂"}


def test_a_streamed_build_mines_the_same_terms_as_one_in_memory(tmp_path):
    texts = _chinese_corpus()
    path = tmp_path / "corpus.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": str(i), "title": "", "text": t}, ensure_ascii=False) + "\n"
            for i, t in enumerate(texts)
        ),
        "utf-8",
    )
    streamed = build_index(path, tmp_path / "ix", batch_size=7, progress=False)
    ref = Index.build(Corpus([Passage(str(i), "", t) for i, t in enumerate(texts)]), progress=False)
    a, b = streamed.part("entities"), ref.part("entities")
    assert a.terms == b.terms and a.names == b.names
    assert (a.mentions != b.mentions).nnz == 0
