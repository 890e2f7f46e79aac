"""Corpora in other languages: the analyzer of each language, the corpus's language detected at
index time, and the default that leaves out vectors its encoder cannot give."""

from __future__ import annotations

import json
from pathlib import Path

import bm25s
import pytest
import Stemmer
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.corpus import Corpus, Passage, load_corpus
from hopgraph.errors import ConfigError
from hopgraph.index import Index
from hopgraph.index.detect import detect_settings, looks_like_name
from hopgraph.index.name_finder import NameFinder
from hopgraph.index.registry import split_part_options
from hopgraph.index.sparse import SparseOptions
from hopgraph.retrieve import get_retriever
from hopgraph.text.analyze import Analyzer, MixedAnalyzer, analyzer, bigrams, normalize
from hopgraph.text.language import classify, detect_among, detect_language, plainly_english
from hopgraph.text.ner import normalize_entity
from hopgraph.text.tokenize import Tokenizer

# Short Chinese pages (written for this test): a question's words, in other order, lie in one.
ZH = [
    ("长江", "长江是中国最长的河流，全长约六千三百公里，流经十一个省份，最后注入东海。"),
    ("黄河", "黄河是中国第二长河，被称为中华民族的母亲河，河水含沙量很高，呈黄色。"),
    ("泰山", "泰山位于山东省泰安市，是五岳之首，古代帝王常在此举行封禅大典。"),
    ("西湖", "西湖位于浙江省杭州市西部，以秀丽的湖光山色和众多的名胜古迹闻名。"),
    ("故宫", "故宫是明清两代的皇家宫殿，位于北京中轴线的中心，现为故宫博物院。"),
    ("熊猫", "大熊猫主要生活在四川、陕西和甘肃的山区，以竹子为主要食物。"),
    ("茶叶", "中国是茶的故乡，绿茶、红茶和乌龙茶都有悠久的历史，龙井茶产于杭州。"),
    ("长城", "长城是古代中国为抵御北方游牧民族而修建的军事工程，总长度超过两万公里。"),
]


def zh_corpus() -> Corpus:
    return Corpus([Passage(str(i), t, x) for i, (t, x) in enumerate(ZH)])


def test_english_is_the_tokenizer_it_always_was(demo_dataset):
    opts = SparseOptions()
    tok = analyzer(opts.language, opts.stemmer, opts.stopwords)
    assert isinstance(tok, Tokenizer)
    old = Tokenizer("english", "en")  # an index saved before languages: its options
    for p in demo_dataset.corpus:
        assert tok(p.content) == old(p.content)
    assert isinstance(analyzer("en", "english", "en"), Tokenizer)


def test_chinese_and_japanese_runs_become_bigrams():
    # bigrams, then the unigrams of Han and kana (Lucene's CJKBigramFilter, outputUnigrams)
    assert analyzer("zh")("北京是首都") == ["北京", "京是", "是首", "首都", *"北京是首都"]
    assert analyzer("zh")("我") == ["我"]
    # Latin letters and digits inside a CJK run are bigrammed with it; a Latin word apart stays
    assert analyzer("zh")("NFL联赛 308分") == ["nf", "fl", "l联", "联赛", "联", "赛", "30", "08",
                                              "8分", "分"]  # fmt: skip
    assert analyzer("zh")("iPhone 手机") == ["iphone", "手机", "手", "机"]
    # Japanese: kanji and kana bigrammed alike; the prolonged sound mark stays in its run
    assert analyzer("ja")("飲むコーヒー")[:5] == ["飲む", "むコ", "コー", "ーヒ", "ヒー"]


def test_thai_bigrams_keep_vowel_signs_on_their_consonant():
    toks = analyzer("th")("กรุงเทพ")
    assert toks == ["กรุ", "รุง", "งเ", "เท", "ทพ"]
    assert bigrams("ก") == ["ก"]


def test_marks_stay_inside_words():
    # Python's \w cuts a Devanagari word at its vowel signs; the analyzer keeps the word whole
    words = analyzer("hi", stemmer="none")("राजधानी दिल्ली")
    assert words == ["राजधानी", "दिल्ली"]


def test_arabic_letter_forms_and_diacritics_fold():
    bare = analyzer("ar")("القاهرة عاصمة مصر")
    assert analyzer("ar")("القاهرةُ عاصمةُ مصرَ") == bare  # harakat
    assert analyzer("ar")("القاهـــرة عاصمة مصر") == bare  # tatweel
    # the letter forms: folded by the Arabic stemmer itself; by the analyzer where none stems
    assert analyzer("ar")("أحمد") == analyzer("ar")("احمد")
    assert normalize("أحمد إلى آخر", "ur") == "احمد الي اخر"
    assert normalize("مدرسة", "ur").endswith("ه") and normalize("مدرسة", "ar").endswith("ة")


def test_turkish_dotted_capital_i_and_full_width_forms():
    assert analyzer("tr")("İstanbul") == analyzer("tr")("istanbul") == ["istanbul"]
    assert analyzer("tr")("IRMAK") == analyzer("tr")("ırmak")
    assert analyzer("fr")("ＰＡＲＩＳ") == analyzer("fr")("paris")  # NFKC


def test_stemmer_and_stop_words_of_the_language():
    fr = Analyzer("fr")
    assert "les" in fr.stopwords and fr("Les chevaux") == [
        Stemmer.Stemmer("french").stemWord("chevaux")
    ]
    assert Analyzer("fr", stemmer="none")("chevaux") == ["chevaux"]
    assert Analyzer("fr", stopwords="none")("les") == ["le"]
    assert Analyzer("el").stopwords == frozenset()  # no list: none dropped


def test_non_english_analysis_matches_bm25s_words_plus_stems():
    # on text without marks, bigram scripts or folding, the words are bm25s's and the stems
    # PyStemmer's: hopgraph's BM25 is the by-hand one there
    text = "Die Hauptstadt Deutschlands ist Berlin und die größte Stadt Hamburg"
    stemmer = Stemmer.Stemmer("german")
    expected = bm25s.tokenize([text.lower()], stopwords="de", stemmer=stemmer, return_ids=False)[0]
    assert analyzer("de")(text) == expected


def test_options_are_checked():
    for bad in ({"language": "french"}, {"language": ""}, {"stemmer": "klingon"},
                {"stopwords": "xx"}):  # fmt: skip
        with pytest.raises(ConfigError):
            SparseOptions(**bad).validate()
    SparseOptions(language="en,zh", stemmer="none", stopwords="none").validate()
    assert split_part_options({"language": "ja"}) == {"sparse": {"language": "ja"}}
    with pytest.raises(ConfigError):
        split_part_options({"stemmer": "french"})


def test_language_of_texts():
    assert classify("Berlin ist die Hauptstadt und die größte Stadt Deutschlands.") == "de"
    assert classify("北京是中华人民共和国的首都。") == "zh"
    assert classify("1234 --- 5678") == ""
    assert detect_among("Les chevaux courent dans le pré.", ["en", "fr"]) == "fr"
    assert detect_among("42", ["en", "fr"]) == "en"


def test_plainly_english_texts_skip_the_model(demo_dataset):
    texts = [p.content for p in demo_dataset.corpus]
    assert plainly_english(texts)
    assert detect_language(list(demo_dataset.corpus))["language"] == "en"
    assert not plainly_english(["Les chevaux couraient dans les prés de la vallée verte."])
    assert not plainly_english(["北京是中华人民共和国的首都。"]) and not plainly_english(["42"])


def test_mixed_corpus_analyses_each_text_in_its_language():
    en = "The river number {} flows through the green valley towards the sea, past old mills."
    fr = "La rivière numéro {} traverse la vallée verte vers la mer, devant les vieux moulins."
    passages = [Passage(f"e{i}", "", en.format(i)) for i in range(6)]
    passages += [Passage(f"f{i}", "", fr.format(i)) for i in range(6)]
    found = detect_language(passages)
    assert sorted(found["language"].split(",")) == ["en", "fr"], found
    mixed = analyzer(found["language"])
    assert isinstance(mixed, MixedAnalyzer)
    assert mixed("les rivières") == Analyzer("fr")("les rivières")
    assert mixed("the rivers") == Tokenizer()("the rivers")


def test_chinese_index_detects_its_language_and_ranks_by_bigrams(tmp_path):
    index = Index.build(zh_corpus(), progress=False)
    assert index.part("sparse").options.language == "zh"
    assert index.detected["why"]["language"]["language"] == "zh"
    assert index.info()["language"] == "zh"
    ranking = get_retriever(index, "bm25").search("哪条河流注入东海？", k=3)
    assert ranking.ids[0] == "0"
    # the default index has no passage vectors the default would not read, and says why
    assert not index.has("dense") and "trained on en text" in index.detected["why"]["dense"]
    ranking = get_retriever(index, "default").search("大熊猫吃什么食物？", k=3)
    assert ranking.ids[0] == "5"
    assert ranking.info["vectors"].startswith("off: no passage vectors: the corpus is in zh")
    # with vectors built (parts named), the default still leaves them out, and says why
    zh = {"sparse": {"language": "zh"}}  # (parts named: nothing detected)
    full = Index.build(zh_corpus(), ["sparse", "dense", "entities"], zh, progress=False)
    auto = get_retriever(full, "default").search("大熊猫吃什么食物？", k=3)
    assert auto.info["vectors"].startswith("off: the encoder") and "zh" in auto.info["vectors"]
    on = get_retriever(full, "default", vectors="on").search("大熊猫吃什么食物？", k=3)
    assert on.info["vectors"] == "on"
    with pytest.raises(ConfigError):
        get_retriever(index, "default", vectors="on")
    # a dense part asked for with options of its own is built
    own = Index.build(zh_corpus(), options={"dense": {"batch_size": 8}}, progress=False)
    assert own.has("dense")
    # an English index keeps them
    en = Index.build(
        Corpus(
            [
                Passage("a", "River", "The river flows to the sea."),
                Passage("b", "Hill", "The hill stands over the town."),
            ]
        ),  # fmt: skip
        progress=False,
    )
    assert en.has("dense") and "dense" not in en.detected["why"]
    assert get_retriever(en, "default").search("river", k=1).info["vectors"] == "on"
    # saved and loaded: the same analyzer
    index.save(tmp_path / "zh")
    loaded = Index.load(tmp_path / "zh")
    assert loaded.part("sparse").tokenizer("长江") == ["长江", "长", "江"]
    assert get_retriever(loaded, "bm25").search("哪条河流注入东海？", k=1).ids == ["0"]


def test_cli_language_override_and_info(tmp_path):
    src = tmp_path / "zh.jsonl"
    src.write_text(
        "".join(
            json.dumps({"id": str(i), "title": t, "text": x}, ensure_ascii=False) + "\n"
            for i, (t, x) in enumerate(ZH)
        ),  # fmt: skip
        "utf-8",
    )
    run = CliRunner().invoke
    out = tmp_path / "ix"
    r = run(cli, ["index", str(src), "-o", str(out), "--parts", "sparse", "-q"])
    assert r.exit_code == 0, r.output
    assert "language: " in r.output and "sparse.language=zh" in r.output
    r = run(cli, ["info", str(out)])
    assert json.loads(r.output[r.output.index("{") :])["language"] == "zh"
    ja = tmp_path / "ja"
    r = run(cli, ["index", str(src), "-o", str(ja), "--parts", "sparse", "-q",
                  "--set", "language=ja"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert Index.load(ja).part("sparse").options.language == "ja"
    r = run(cli, ["search", str(out), "哪条河流注入东海？", "-k", "1", "--method", "bm25"])
    assert r.exit_code == 0 and "长江" in r.output, r.output
    # the default index (no --parts): no passage vectors, and the line says why
    default = tmp_path / "default"
    r = run(cli, ["index", str(src), "-o", str(default), "-q"])
    assert r.exit_code == 0 and "no passage vectors: the corpus is in zh" in r.output, r.output
    assert set(Index.load(default).parts) == {"sparse", "entities"}
    r = run(cli, ["search", str(default), "哪条河流注入东海？", "-k", "1"])
    assert r.exit_code == 0 and "长江" in r.output, r.output


def test_eval_of_a_method_other_than_the_default_analyses_the_corpus_in_its_language(tmp_path):
    """The paper methods keep their parts' plain options, but not English's analyzer on a
    Chinese corpus: ``hopgraph eval --method bm25`` had ranked xquad_zh at R@10 0.20."""
    folder = tmp_path / "zh"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"idx": i, "title": t, "text": x}, ensure_ascii=False) + "\n"
            for i, (t, x) in enumerate(ZH)
        ),
        "utf-8",
    )
    (folder / "questions.jsonl").write_text(
        json.dumps({"id": "q", "question": "哪条河流注入东海？", "gold_corpus_idx": [0]},
                   ensure_ascii=False) + "\n",
        "utf-8",
    )  # fmt: skip
    out = tmp_path / "result.json"
    r = CliRunner().invoke(
        cli, ["eval", str(folder), "--method", "bm25,graph", "--index-dir", str(tmp_path / "c"),
              "--json", str(out), "-q"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    (cached,) = (tmp_path / "c").iterdir()
    index = Index.load(cached)
    assert index.part("sparse").options.language == "zh"
    assert index.part("entities").options.normalize == "letters"
    assert not index.part("entities").options.title_aliases  # the paper's settings otherwise
    bm25, _graph = json.loads(out.read_text())  # one object per method
    assert bm25["method"] == "bm25" and bm25["recall@1"] == 1.0


@pytest.mark.data
@pytest.mark.parametrize(
    ("name", "language"),
    [("xquad_de", "de"), ("xquad_zh", "zh"), ("xquad_ar", "ar"), ("xquad_ru", "ru"),
     ("piaf_fr", "fr"), ("jsquad_ja", "ja"), ("cmrc_zh", "zh"), ("arcd_ar", "ar"),
     ("hotpotqa", "en"), ("2wikimultihopqa", "en"), ("musique", "en"), ("scifact", "en"),
     ("cacm", "en"), ("npl", "en")],
)  # fmt: skip
def test_language_detected_on_the_benchmark_data(data_dir, name, language):
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    d = detect_settings(load_corpus(path))
    assert d["sparse"] == {"language": language}, d["why"]["language"]


# Linked pages in French (written for this test): the question names the ship; the answer is on
# the page of the shipyard the ship's page names.
FR = [
    ("SS Orrendale", "Le SS Orrendale est un cargo lancé en 1903 par les Chantiers Rookwell pour "
     "la compagnie Halvard. Il a navigué entre Brackenmouth et la Baltique jusqu'en 1931."),
    ("Chantiers Rookwell", "Les Chantiers Rookwell sont une entreprise de construction navale "
     "fondée en 1872 par l'ingénieur Tobias Grennick sur la rive sud de la Tarnwick."),
    ("Tobias Grennick", "Tobias Grennick (1831-1899) est un ingénieur naval né à Dunmarrow. Il a "
     "dessiné des coques en acier avant de fonder son propre chantier."),
    ("Brackenmouth", "Brackenmouth est une ville portuaire à l'embouchure de la Tarnwick. Son port "
     "accueille des chantiers navals depuis le dix-huitième siècle."),
    ("Tarnwick", "La Tarnwick est une rivière de Hethermoor qui traverse Dunmarrow puis se jette "
     "dans la mer à Brackenmouth."),
    ("Dunmarrow", "Dunmarrow est une ville universitaire de Hethermoor, connue pour son "
     "université et ses anciennes mines d'étain."),
    ("Compagnie Halvard", "La compagnie maritime Halvard exploitait des lignes de fret entre "
     "Brackenmouth et la Baltique au début du vingtième siècle."),
    ("Mabry Colquith", "Mabry Colquith est une dramaturge dont la pièce Le Gardien des Lanternes "
     "se déroule dans un phare pendant une enquête sur un naufrage."),
]  # fmt: skip


def test_two_hops_over_linked_pages_in_french():
    index = Index.build(
        Corpus([Passage(str(i), t, x) for i, (t, x) in enumerate(FR)]), progress=False
    )
    assert index.part("sparse").options.language == "fr" and not index.has("dense")
    assert index.part("entities").options.title_aliases is True  # French titles are names
    r = get_retriever(index, "default").search(
        "Qui a fondé le chantier naval qui a construit le SS Orrendale ?", k=4
    )
    paths = {FR[int(i)][0]: e["path"] for i, e in zip(r.ids, r.explanations, strict=True)}
    assert paths["SS Orrendale"].startswith("1-hop")
    assert paths["Chantiers Rookwell"] == "2-hop: question → *SS Orrendale* → this page"
    assert r.ids.index("1") < 3
    # the vectors were left out on purpose: the default is not a fallback, and says why
    assert "default_fallback" not in r.info and "the corpus is in fr" in r.info["vectors"]


# The same story in scripts without case (Chinese, Japanese, Arabic) and in German, where every
# noun is capitalised: the names are the titles, found in the texts without capital letters.
LINKED = json.loads((Path(__file__).parent / "data" / "linked_pages.json").read_text("utf-8"))
QUESTIONS = {
    "zh": "建造奥伦代尔号的船厂是谁创立的？",
    "ja": "オレンデール号を建造した造船所を設立したのは誰か？",
    "ar": "من أسس حوض بناء السفن الذي بنى أورندال؟",
    "de": "Wer gründete die Werft, die die SS Orrendale gebaut hat?",
}


@pytest.mark.parametrize("lang", sorted(LINKED))
def test_two_hops_over_linked_pages_without_capital_letters(lang):
    """Titles' mentions are found in the texts (inside unspaced Chinese and Japanese runs), not
    by capital letters (German's every noun), and the second hop reaches the shipyard through
    the ship's page. German's titles are detected as names; titles in a script without case
    only when asked (the detection leaves them off: index/detect.py, MAX_CASELESS)."""
    pages, question = LINKED[lang], QUESTIONS[lang]
    corpus = Corpus([Passage(str(i), t, x) for i, (t, x) in enumerate(pages)])
    caseless = lang != "de"
    assert detect_settings(corpus)["entities"]["title_aliases"] is not caseless
    asked = {"entities": {"title_aliases": True, "alias_mentions": True}} if caseless else None
    index = Index.build(corpus, options=asked, progress=False)
    o = index.part("entities").options
    assert index.part("sparse").options.language == lang
    assert o.title_aliases and o.normalize == "letters"
    # never capitalised words: with titles that are names, their aliases; else mined terms
    assert o.ner == ("terms" if caseless else "none")
    ents = index.part("entities")
    ship, yard = (normalize_entity(pages[i][0], "letters") for i in (0, 1))
    assert ship in ents.ids and yard in ents.ids
    assert yard in ents.found_dict()[0]  # the ship's page mentions the shipyard
    if lang == "de":  # a capitalised noun is no entity: only the pages' titles are
        assert "frachter" not in ents.ids and "ostsee" not in ents.ids
    assert [ents.names[j] for j in ents.query_entities(question)] == [ship]
    r = get_retriever(index, "default").search(question, k=4)
    paths = {pages[int(i)][0]: e["path"] for i, e in zip(r.ids, r.explanations, strict=True)}
    assert paths[pages[1][0]] == f"2-hop: question → *{pages[0][0]}* → this page"


def test_names_in_any_script_found_without_capitals():
    """The letters normalisation keeps every script's letters; the name finder matches inside
    unspaced runs, on word boundaries elsewhere, and wants a capital only for a one-word name
    of a cased script."""
    assert normalize_entity("Tobias  Grennick", "letters") == "tobias grennick"
    assert normalize_entity("托拜厄斯·格伦尼克", "letters") == "托拜厄斯 格伦尼克"
    assert normalize_entity("Straße", "letters") == "strasse"
    assert normalize_entity("تَارنويك", "letters") == "تارنويك"  # the vowel marks go
    keys = ["奥伦代尔号", "邓马罗", "tarnwick", "eau", "القاهرة", "tobias grennick", "ab"]
    finder = NameFinder(keys)
    assert finder.find("奥伦代尔号是一艘货轮，生于邓马罗") == ["奥伦代尔号", "邓马罗"]
    assert finder.find("la Tarnwick et la tarnwick; l'eau claire") == ["tarnwick"]
    assert finder.find("TOBIAS GRENNICK et tobias grennick") == ["tobias grennick"] * 2
    assert finder.find("القاهرة هي عاصمة مصر والقاهرة") == ["القاهرة"]  # not inside a word
    assert finder.find("Ab Tarnwickshire") == []  # too short; inside a longer word
    assert looks_like_name("奥伦代尔号") and looks_like_name("توبياس غرينيك")
    assert not looks_like_name("这是一个很长的句子，它描述了一艘船的历史。")
    assert not looks_like_name("من أسس الحوض؟")


def test_an_added_page_in_chinese_is_found_in_old_texts_as_a_rebuild_finds_it():
    opts = {"entities": {"title_aliases": True, "alias_mentions": True, "normalize": "letters",
                         "ner": "none"}}  # fmt: skip
    pages = [Passage(str(i), t, x) for i, (t, x) in enumerate(LINKED["zh"])]
    index = Index.build(Corpus(pages[:5]), ["entities"], opts, progress=False)
    updated = index.updated(add=pages[5:], delete=["3"])
    rebuilt = Index.build(updated.corpus, ["entities"], opts, progress=False)
    ea, eb = updated.part("entities"), rebuilt.part("entities")
    assert ea.found_dict() == eb.found_dict() and ea.names == eb.names
    assert (ea.mentions != eb.mentions).nnz == 0
    assert "邓马罗" in ea.found_dict()[2]  # the old text of 托拜厄斯 names the added page


def test_an_index_from_an_older_analyzer_says_so_and_add_parts_rebuilds_it(tmp_path):
    """A non-English sparse part records its analyzer's version; one from another version is
    outdated (its terms are not those its queries get): loading warns, `info` says so, and
    `hopgraph add-parts IX --parts sparse` rebuilds it. English never is."""
    from hopgraph.index.sparse import ANALYZER_FILE
    from hopgraph.text.analyze import ANALYZER_VERSION

    index = Index.build(zh_corpus(), ["sparse"], {"sparse": {"language": "zh"}}, progress=False)
    index.save(tmp_path / "ix")
    (made,) = (tmp_path / "ix").rglob(ANALYZER_FILE)
    assert json.loads(made.read_text()) == {"version": ANALYZER_VERSION}
    assert Index.load(tmp_path / "ix").part("sparse").outdated == ""
    made.unlink()  # as an index saved before versions were kept: no file, none listed
    manifest = tmp_path / "ix" / "manifest.json"
    listed = json.loads(manifest.read_text())
    rel = made.relative_to(tmp_path / "ix").as_posix()
    listed["files"] = {k: v for k, v in listed["files"].items() if k != rel}
    manifest.write_text(json.dumps(listed))
    with pytest.warns(UserWarning, match="outdated.*hopgraph add-parts"):
        old = Index.load(tmp_path / "ix")
    assert "analyzer version 0" in old.part("sparse").outdated
    assert "outdated" in old.info()["parts"]["sparse"]
    r = CliRunner().invoke(cli, ["add-parts", str(tmp_path / "ix"), "--parts", "sparse", "-q"])
    assert r.exit_code == 0, r.output
    assert Index.load(tmp_path / "ix").part("sparse").outdated == ""
    english = Index.build(Corpus([Passage("a", "A", "an English text")]), ["sparse"],
                          progress=False)  # fmt: skip
    english.part("sparse").analyzer_version = 0
    assert english.part("sparse").outdated == ""
