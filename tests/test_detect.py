"""Corpus-setting detection (title aliases on for entity-name titles) and the default build."""

from __future__ import annotations

import json

import pytest

from hopgraph.corpus import Corpus, Passage, load_corpus
from hopgraph.defaults import DEFAULT_PARTS, default_build, describe_detected, detected_options
from hopgraph.index import Index
from hopgraph.index.detect import detect_settings, looks_like_name, title_stats
from hopgraph.retrieve.base import DEFAULT_METHOD, full_parts, method_parts, needed_parts


def _corpus(titles: list[str]) -> Corpus:
    return Corpus([Passage(str(i), t, f"passage {i} text") for i, t in enumerate(titles)])


SENTENCES = [
    "Induction of myelodysplasia by myeloid-derived suppressor cells.",
    "The human myelin basic protein gene is included within a large transcription unit.",
    "Targeting A20 decreases glioma stem cell survival and tumor growth in mice",
    "Microstructural development of human newborn cerebral white matter assessed in vivo.",
]


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("Kiss and Tell (1945 film)", True),
        ("Lambert, Margrave of Tuscany", True),
        ("Person-centered therapy", True),  # Wikipedia's sentence case
        ("Martin Luther King Jr.", True),
        ("1986 FIFA World Cup", True),
        ("Induction of myelodysplasia by myeloid-derived suppressor cells.", False),
        ("The DNA Methylome of Human Peripheral Blood Mononuclear Cells", False),  # too long
        ("efficient targeting of genes", False),  # no capital
        ("Is coffee good for you?", False),
        ("", False),
    ],
)
def test_looks_like_name(title, expected):
    assert looks_like_name(title) is expected


def test_demo_corpus_gets_title_aliases(demo_dataset):
    d = detect_settings(demo_dataset.corpus)
    assert d["entities"] == {"title_aliases": True, "alias_mentions": True}
    why = d["why"]
    assert why["passages"] == 44 and why["titled_share"] == 1.0 and why["distinct_share"] == 1.0
    assert why["median_title_words"] <= 3 and why["name_like_share"] >= 0.9
    assert "title aliases on" in why["reason"]
    json.dumps(d)  # recorded in the manifest as is


@pytest.mark.parametrize(
    ("titles", "failed"),
    [
        (SENTENCES * 3, "median title length"),  # paper titles
        ([""] * 10 + ["Golden Heron Award"], "have a title"),  # mostly untitled
        (["Annual Report 2023"] * 20, "distinct"),  # chunks of one document
        ([t.lower() for t in ["Golden Heron", "Kestrine Medal", "Saltwind", "Dunmarrow"]], "names"),
    ],
)
def test_other_titles_get_no_aliases(titles, failed):
    d = detect_settings(_corpus(titles))
    aliases = {k: d["entities"][k] for k in ("title_aliases", "alias_mentions")}
    assert aliases == {"title_aliases": False, "alias_mentions": False}
    assert failed in d["why"]["reason"] and "title aliases off" in d["why"]["reason"]


def test_database_tables_get_no_aliases_however_capitalised():
    # Spider's table names pass the name test one by one ("Customers", "Department_Store_Chain")
    names = ["Customers", "Staff", "Department_Store_Chain", "Products", "Claims", "Parts"]
    meta = {"db_id": "shop", "kind": "table"}
    tables = Corpus([Passage(f"shop.{t}", t, f"Table {t}. Columns: id.", meta) for t in names])
    assert title_stats(names)["name_like_share"] == 1.0
    d = detect_settings(tables)
    assert d["entities"] == {"title_aliases": False, "alias_mentions": False}
    assert d["why"]["table_share"] == 1.0
    assert "100% of documents are database tables" in d["why"]["reason"]
    # the same titles, not tables: aliases on
    assert detect_settings(_corpus(names))["entities"]["title_aliases"] is True


def test_title_stats_ignore_disambiguators():
    s = title_stats(["Velmora (river)", "Velmora (ship)", "Kiss and Tell (1945 film)", ""])
    assert s["passages"] == 4 and s["titled_share"] == 0.75
    assert s["median_title_words"] == 1.0 and s["distinct_share"] == 1.0


def test_default_parts_are_the_default_methods():
    assert DEFAULT_METHOD == "multihop"
    # what the default uses: the parts it needs and the passage vectors it ranks better with
    assert set(DEFAULT_PARTS) == set(full_parts(DEFAULT_METHOD))
    assert set(method_parts(DEFAULT_METHOD)) == set(method_parts(None)) == set(DEFAULT_PARTS)
    assert needed_parts(DEFAULT_METHOD) == ("sparse", "entities")  # searches without vectors
    assert {"sparse", "dense", "entities"} <= set(DEFAULT_PARTS)


def test_detected_options_fill_in_under_given_ones(demo_dataset):
    parts, options, detected = default_build(demo_dataset.corpus)
    assert parts == list(DEFAULT_PARTS)
    assert options == {
        "entities": {"title_aliases": True, "alias_mentions": True},
        "sparse": {"language": "en"},
    }
    assert detected["why"]["overridden"] == []
    # an option given explicitly wins, and the record says so
    opts, det = detected_options(
        demo_dataset.corpus,
        ["entities"],
        {"entities": {"title_aliases": False, "normalize": "lower"}},
    )
    assert opts == {
        "entities": {"title_aliases": False, "normalize": "lower", "alias_mentions": True}
    }  # (sparse is not built: its detected language is not given)
    assert det["why"]["overridden"] == ["entities.title_aliases"]
    assert "overridden by --set: entities.title_aliases" in describe_detected(det)
    # no part detection covers is built, or it is built already: no detection
    assert detected_options(demo_dataset.corpus, ["dense"], have=["sparse"]) == ({}, None)
    assert detected_options(demo_dataset.corpus, ["entities"], have=["entities"]) == ({}, None)


def test_index_build_without_parts_builds_the_default(demo_dataset, tmp_path):
    small = Corpus(list(demo_dataset.corpus)[:12])
    index = Index.build(small, progress=False)
    assert set(index.parts) == set(DEFAULT_PARTS)
    assert index.part("entities").options.title_aliases is True
    assert index.detected["entities"] == {"title_aliases": True, "alias_mentions": True}
    # given options win over detected ones
    off = Index.build(small, options={"entities": {"title_aliases": False}}, progress=False)
    assert off.part("entities").options.title_aliases is False
    assert off.detected["why"]["overridden"] == ["entities.title_aliases"]
    # explicit parts: exactly those, nothing detected
    plain = Index.build(small, ["sparse", "entities"], progress=False)
    assert plain.detected is None and plain.part("entities").options.title_aliases is False

    # the detection is kept in the manifest, across load, save and updates
    folder = tmp_path / "ix"
    index.save(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["detected"] == index.detected
    loaded = Index.load(folder)
    assert loaded.detected == index.detected and loaded.info()["detected"] == index.detected
    loaded.add([Passage("new", "Zebra", "Plains zebras graze on the savanna.")])
    loaded.save(folder)
    assert Index.load(folder).detected == index.detected
    plain.save(tmp_path / "plain")
    assert "detected" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())
    assert Index.load(tmp_path / "plain").info()["detected"] is None


REAL_SETS = [
    ("2wikimultihopqa", True),
    ("hotpotqa", True),
    ("musique", True),
    ("hotpotqa_train", True),
    ("musique_train", True),
    ("scifact", False),
]


@pytest.mark.data
@pytest.mark.parametrize(("name", "aliases"), REAL_SETS)
def test_detection_on_the_benchmark_data(data_dir, name, aliases):
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    d = detect_settings(load_corpus(path))
    assert d["entities"]["title_aliases"] is aliases, d["why"]
