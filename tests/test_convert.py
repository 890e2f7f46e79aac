"""Converters (Spider/BIRD tables, chunked BEIR), the unified writer and its extra splits."""

from __future__ import annotations

import collections
import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from hopgraph.cli import cli
from hopgraph.corpus import (
    Corpus,
    Dataset,
    Passage,
    Question,
    chunked_dataset,
    load_dataset,
    sql_tables,
    tables_dataset,
    write_unified,
)
from hopgraph.errors import ConfigError, CorpusError, HopgraphError
from hopgraph.index.detect import detect_settings

# --------------------------------------------------------------------------- sql_tables

TABLES = ["singer", "concert", "Singer_in_Concert", "stadium", "Bike Station", "name"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT count(*) FROM singer", ["singer"]),
        ("select * from SINGER", ["singer"]),  # case-insensitive, original casing back
        ("SELECT s.Name FROM singer AS s", ["singer"]),
        ("SELECT s.Name FROM singer s WHERE s.Age > 3", ["singer"]),
        (
            "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 "
            "ON T1.singer_id = T2.singer_id INNER JOIN concert T3 ON T3.id = T1.concert_id",
            ["Singer_in_Concert", "singer", "concert"],
        ),
        ("SELECT * FROM singer LEFT OUTER JOIN concert USING (id)", ["singer", "concert"]),
        ("SELECT * FROM stadium AS x, singer, concert c WHERE 1", ["stadium", "singer", "concert"]),
        (
            "SELECT name FROM singer WHERE id IN (SELECT singer_id FROM singer_in_concert "
            "WHERE concert_id IN (SELECT id FROM concert WHERE year = 2014))",
            ["singer", "Singer_in_Concert", "concert"],
        ),
        (
            "SELECT t.n FROM (SELECT count(*) AS n FROM singer GROUP BY country) AS t, stadium",
            ["singer", "stadium"],
        ),
        ("SELECT * FROM (singer JOIN concert ON singer.id = concert.id)", ["singer", "concert"]),
        ("SELECT a FROM singer UNION SELECT b FROM concert", ["singer", "concert"]),
        ("SELECT a FROM singer INTERSECT SELECT a FROM stadium", ["singer", "stadium"]),
        ("SELECT a FROM concert EXCEPT SELECT a FROM singer", ["concert", "singer"]),
        ("(SELECT a FROM concert) UNION ALL (SELECT a FROM stadium)", ["concert", "stadium"]),
        ("SELECT * FROM `Bike Station` WHERE `name` = 1", ["Bike Station"]),
        ('SELECT * FROM "bike station" AS b JOIN [Singer] ON 1', ["Bike Station", "singer"]),
        ("SELECT * FROM main.singer JOIN `main`.`concert`", ["singer", "concert"]),
        # a column named like a table only counts after FROM / JOIN
        ("SELECT name FROM singer WHERE name = 'Joe' ORDER BY name", ["singer"]),
        ("SELECT concert FROM stadium WHERE concert > 2", ["stadium"]),
        ("SELECT a FROM stadium WHERE b = 'seen from concert' -- from singer", ["stadium"]),
        ("SELECT a /* FROM singer */ FROM stadium WHERE c = 'it''s from singer'", ["stadium"]),
        ("SELECT EXTRACT(YEAR FROM concert) FROM stadium", ["stadium"]),
        ("SELECT a FROM stadium WHERE x IS DISTINCT FROM concert", ["stadium"]),
        (
            "WITH singer AS (SELECT * FROM concert) SELECT * FROM singer JOIN stadium",
            ["concert", "stadium"],  # a CTE is not the table it shadows
        ),
        ("SELECT * FROM singer, singer AS s2 JOIN singer s3", ["singer"]),
        ("SELECT 1", []),
        ("SELECT * FROM unknown_table JOIN other", []),
        ("", []),
        ("SELECT * FROM (SELECT a FROM singer", ["singer"]),  # unbalanced: no crash
    ],
)
def test_sql_tables(sql, expected):
    assert sql_tables(sql, TABLES) == expected


def test_sql_tables_keeps_first_use_order_and_first_spelling():
    assert sql_tables("SELECT * FROM b JOIN a JOIN B", ["A", "B", "b"]) == ["B", "A"]


# --------------------------------------------------------------------------- Spider / BIRD

SPIDER_SCHEMAS = [
    {
        "db_id": "concerts",
        "table_names_original": ["singer", "concert", "singer_in_concert"],
        "table_names": ["singer", "concert", "singer in concert"],
        "column_names_original": [
            [-1, "*"], [0, "Singer_ID"], [0, "Name"], [0, "Ctry"], [1, "concert_ID"],
            [1, "Year"], [2, "concert_ID"], [2, "Singer_ID"],
        ],
        "column_names": [
            [-1, "*"], [0, "singer id"], [0, "name"], [0, "country"], [1, "concert id"],
            [1, "year"], [2, "concert id"], [2, "singer id"],
        ],
        "column_types": ["text", "number", "text", "text", "number", "text", "number", "number"],
        "foreign_keys": [[6, 4], [7, 1], [7, 1]],
        "primary_keys": [1, 4],
    },
    {
        "db_id": "zoo",
        "table_names_original": ["Animals", "keepers"],
        "table_names": ["zoo animals", "keepers"],
        "column_names_original": [[-1, "*"], [0, "id"], [0, "keeper"], [1, "id"]],
        "column_names": [[-1, "*"], [0, "id"], [0, "keeper"], [1, "id"]],
        "foreign_keys": [[2, 2]],  # a self link is dropped
        "primary_keys": [1, 3],
    },
]  # fmt: skip

SPIDER_DEV = [
    {"db_id": "concerts", "question": "How many singers?", "query": "SELECT count(*) FROM singer"},
    {
        "db_id": "concerts",
        "question": "Who sang in 2014?",
        "query": "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 "
        "ON T1.Singer_ID = T2.Singer_ID JOIN concert AS T3 ON T3.concert_ID = T2.concert_ID "
        "WHERE T3.Year = 2014",
    },
    {"db_id": "zoo", "question": "What is one plus one?", "query": "SELECT 1 + 1"},
    {"db_id": "zoo", "question": "How many animals?", "query": "select count(*) from ANIMALS"},
]


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def spider(tmp_path: Path, schemas=SPIDER_SCHEMAS, dev=SPIDER_DEV, name="spider") -> Path:
    folder = tmp_path / name
    write_json(folder / "tables.json", schemas)
    write_json(folder / "dev.json", dev)
    return folder


def bird(tmp_path: Path) -> Path:
    dev = [
        {
            "question_id": 7,
            "db_id": "zoo",
            "question": "Which keeper looks after animal 3?",
            "evidence": "keeper refers to keepers.id",
            "SQL": "SELECT T2.id FROM `Animals` AS T1 INNER JOIN keepers AS T2 "
            "ON T1.keeper = T2.id WHERE T1.id = 3",
            "difficulty": "simple",
        },
        {"question_id": 8, "db_id": "zoo", "question": "x?", "evidence": "", "SQL": "SELECT 2"},
    ]
    return spider(tmp_path, dev=dev, name="bird")


def test_tables_dataset_passages(tmp_path):
    ds = tables_dataset(spider(tmp_path))
    assert ds.name == "spider"
    assert ds.corpus.ids == [
        "concerts.singer",
        "concerts.concert",
        "concerts.singer_in_concert",
        "zoo.Animals",
        "zoo.keepers",
    ]
    singer = ds.corpus.get("concerts.singer")
    assert singer.title == "singer"
    assert singer.text == "Table singer. Columns: Singer_ID, Name, Ctry (country)."
    assert singer.metadata == {
        "db_id": "concerts",
        "kind": "table",
        "links": ["concerts.singer_in_concert"],
    }
    link = ds.corpus.get("concerts.singer_in_concert")
    assert link.metadata["links"] == ["concerts.concert", "concerts.singer"]
    assert link.text == "Table singer_in_concert. Columns: concert_ID, Singer_ID."
    animals = ds.corpus.get("zoo.Animals")
    assert animals.text == "Table Animals (zoo animals). Columns: id, keeper."
    assert animals.metadata["links"] == []


def test_tables_dataset_questions(tmp_path):
    ds = tables_dataset(spider(tmp_path), name="toy")
    assert ds.name == "toy"
    assert [q.id for q in ds.questions] == ["concerts-0", "concerts-1", "zoo-3"]
    q0, q1, q3 = ds.questions
    assert q0.gold == ("concerts.singer",)
    assert q1.gold == ("concerts.singer", "concerts.singer_in_concert", "concerts.concert")
    assert q3.gold == ("zoo.Animals",)
    assert q1.text == "Who sang in 2014?" and q1.answers == ()
    assert q1.metadata == {"db_id": "concerts", "sql": SPIDER_DEV[1]["query"]}
    assert ds.skipped == {"no_gold_table": 1}


def test_tables_dataset_bird(tmp_path):
    ds = tables_dataset(bird(tmp_path) / "tables.json")  # a marker file stands for its folder
    assert ds.name == "bird"
    (q,) = ds.questions
    assert q.id == "7"
    assert q.text == "Which keeper looks after animal 3?"  # evidence is not appended
    assert q.gold == ("zoo.Animals", "zoo.keepers")
    assert q.metadata["evidence"] == "keeper refers to keepers.id"
    assert q.metadata["difficulty"] == "simple"
    assert q.metadata["sql"].startswith("SELECT T2.id")
    assert ds.skipped == {"no_gold_table": 1}


def test_tables_dataset_errors(tmp_path):
    with pytest.raises(CorpusError, match="no such folder"):
        tables_dataset(tmp_path / "nope")
    folder = tmp_path / "half"
    write_json(folder / "tables.json", SPIDER_SCHEMAS)
    with pytest.raises(CorpusError, match=r"dev\.json: no such file"):
        tables_dataset(folder)
    bad_db = [{"db_id": "mars", "question": "q?", "query": "SELECT 1 FROM x"}]
    with pytest.raises(CorpusError, match=r"record 0: database 'mars' is not in tables\.json"):
        tables_dataset(spider(tmp_path, dev=bad_db, name="mars"))
    broken = [dict(SPIDER_SCHEMAS[1], column_names_original=[[5, "id"]])]
    with pytest.raises(CorpusError, match="malformed table or column names"):
        tables_dataset(spider(tmp_path, schemas=broken, dev=[], name="broken"))
    no_sql = [{"db_id": "zoo", "question": "q?"}]
    with pytest.raises(CorpusError, match="missing field 'SQL'"):
        tables_dataset(spider(tmp_path, dev=no_sql, name="nosql"))


# --------------------------------------------------------------------------- chunked BEIR


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def beir(tmp_path: Path, train: bool = True) -> Path:
    folder = tmp_path / "sci"
    docs = [
        {"_id": "d1", "title": "One", "text": words("a", 10)},
        {"_id": "d2", "title": "Two", "text": words("b", 25)},
        {"_id": "d3", "title": "Three", "text": words("c", 12)},
    ]
    queries = [{"_id": "q1", "text": "first?"}, {"_id": "q2", "text": "second?"}]
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\nq1\td1\t1\n")
    if train:
        (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq2\td3\t1\n")
    return folder


def test_chunked_dataset(tmp_path):
    ds = chunked_dataset(beir(tmp_path), max_words=10)
    assert ds.name == "sci"
    assert ds.corpus.ids == ["d1", "d2#0", "d2#1", "d2#2", "d3#0", "d3#1"]
    assert ds.corpus.get("d1").metadata == {"doc_id": "d1", "chunk": 0}  # one chunk too
    assert ds.corpus.get("d2#2").metadata == {"doc_id": "d2", "chunk": 2}
    assert ds.corpus.get("d2#2").text == words("b", 25).split(" ", 20)[-1]
    assert all(p.title == "Two" for p in ds.corpus if p.metadata["doc_id"] == "d2")
    (q,) = ds.questions
    assert q.id == "q1" and q.gold == ("d2#0", "d2#1", "d2#2", "d1")
    train = chunked_dataset(beir(tmp_path / "t"), split="train", max_words=10, overlap=2)
    assert train.questions[0].gold == ("d3#0", "d3#1")
    assert train.corpus.get("d3#1").text == "c8 c9 c10 c11"


def test_chunked_dataset_errors(tmp_path):
    with pytest.raises(CorpusError, match="no such folder"):
        chunked_dataset(tmp_path / "nope")
    with pytest.raises(CorpusError, match="not a BEIR folder"):
        chunked_dataset(spider(tmp_path))
    with pytest.raises(CorpusError, match="splits present: test, train"):
        chunked_dataset(beir(tmp_path), split="dev")
    with pytest.raises(ValueError, match="overlap"):
        chunked_dataset(beir(tmp_path / "x"), max_words=4, overlap=4)


# --------------------------------------------------------------------------- write_unified


def assert_same(a: Dataset, b: Dataset) -> None:
    assert [(p.id, p.title, p.text, p.metadata) for p in a.corpus] == [
        (p.id, p.title, p.text, p.metadata) for p in b.corpus
    ]
    assert a.questions == b.questions


def test_write_unified_round_trip_tables(tmp_path):
    ds = tables_dataset(bird(tmp_path))
    out = tmp_path / "out" / "zoo"  # parents are created
    write_unified(ds, out)
    back = load_dataset(out)
    assert back.name == "zoo"
    assert_same(ds, back)
    assert sorted(p.name for p in out.iterdir()) == ["corpus.jsonl", "questions.jsonl"]
    first = json.loads((out / "corpus.jsonl").read_text().splitlines()[3])
    assert first == {
        "idx": "zoo.Animals",
        "title": "Animals",
        "text": "Table Animals (zoo animals). Columns: id, keeper.",
        "db_id": "zoo",
        "kind": "table",
        "links": [],
    }
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((out / "corpus.jsonl").stat().st_mode) == 0o666 & ~umask


def test_write_unified_round_trip_chunks_and_unicode(tmp_path):
    ds = chunked_dataset(beir(tmp_path), max_words=10)
    corpus = Corpus(
        [*ds.corpus, Passage("ü 1", "Zürich", "naïve\ntext ✓", {"n": [1, {"x": None}]})]
    )
    qs = [*ds.questions, Question("é", "où?", ("ü 1", "d1"), ("a", "b"), {"k": 1.5})]
    ds = Dataset("x", corpus, qs)
    write_unified(ds, tmp_path / "out")
    assert_same(ds, load_dataset(tmp_path / "out"))


def test_write_unified_refuses_non_empty_folder(tmp_path):
    ds = tables_dataset(spider(tmp_path))
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match="folder is not empty"):
        write_unified(ds, out)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    write_unified(ds, out, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    assert_same(ds, load_dataset(out))
    with pytest.raises(CorpusError, match="not a folder"):
        write_unified(ds, out / "notes.txt", overwrite=True)


def test_write_unified_extra_split(tmp_path):
    folder = beir(tmp_path)
    test = chunked_dataset(folder, max_words=10)
    train = chunked_dataset(folder, split="train", max_words=10)
    out = tmp_path / "out"
    with pytest.raises(CorpusError, match="write the corpus before questions_train.jsonl"):
        write_unified(train, out, questions_file="questions_train.jsonl")
    write_unified(test, out)
    write_unified(train, out, questions_file="questions_train.jsonl")
    assert sorted(p.name for p in out.iterdir()) == [
        "corpus.jsonl",
        "questions.jsonl",
        "questions_train.jsonl",
    ]
    assert_same(test, load_dataset(out))
    assert_same(test, load_dataset(out, split="test"))
    assert_same(train, load_dataset(out, split="train"))
    with pytest.raises(CorpusError, match="already exists"):
        write_unified(train, out, questions_file="questions_train.jsonl")
    write_unified(train, out, questions_file="questions_train.jsonl", overwrite=True)
    # another corpus cannot take this folder's extra split ...
    other = chunked_dataset(folder, split="train", max_words=5)
    with pytest.raises(CorpusError, match="holds a different corpus"):
        write_unified(other, out, questions_file="questions_dev.jsonl")
    # ... and overwriting the corpus drops the splits that pointed into the old one
    write_unified(chunked_dataset(folder, max_words=5), out, overwrite=True)
    assert not (out / "questions_train.jsonl").exists()
    # the same corpus again keeps them
    write_unified(other, out, questions_file="questions_train.jsonl")
    write_unified(chunked_dataset(folder, max_words=5), out, overwrite=True)
    assert (out / "questions_train.jsonl").exists()
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left


@pytest.mark.parametrize(
    "name", ["train.jsonl", "questions_test.jsonl", "questions_.jsonl", "questions_a/b.jsonl"]
)
def test_write_unified_bad_questions_file(tmp_path, name):
    with pytest.raises((CorpusError, ConfigError)):
        write_unified(tables_dataset(spider(tmp_path)), tmp_path / "o", questions_file=name)


@pytest.mark.parametrize(
    ("passage", "question", "message"),
    [
        (Passage("p", "t", "x", {"idx": 1}), None, "metadata key 'idx' is a reserved field"),
        (Passage("p", "t", "x", {"o": object()}), None, "cannot be written as JSON"),
        (None, Question("q", "?", ("nope",)), "gold passage 'nope' is not in corpus"),
        (None, Question("q", "?", ()), "has no gold passage"),
        (None, Question("q", "?", ("p",), (), {"answers": 1}), "'answers' is a reserved"),
        (None, Question("q", "  ", ("p",)), "empty text"),
    ],
)
def test_write_unified_invalid(tmp_path, passage, question, message):
    passages = [passage or Passage("p", "t", "x")]
    questions = [question or Question("q", "?", ("p",))]
    with pytest.raises(CorpusError, match=message):
        write_unified(Dataset("x", Corpus(passages), questions), tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_write_unified_duplicate_question_ids(tmp_path):
    qs = [Question("q", "?", ("p",)), Question("q", "again?", ("p",))]
    with pytest.raises(CorpusError, match="duplicate question id 'q'"):
        write_unified(Dataset("x", Corpus([Passage("p", "", "x")]), qs), tmp_path / "o")


# --------------------------------------------------------------------------- unified splits


def test_unified_loader_splits(tmp_path):
    folder = beir(tmp_path)
    out = tmp_path / "out"
    write_unified(chunked_dataset(folder, max_words=10), out)
    with pytest.raises(CorpusError, match=r"questions_train\.jsonl: no such file .*split 'train'"):
        load_dataset(out, split="train")
    with pytest.raises(CorpusError, match="splits present: test$"):
        load_dataset(out, split="dev")
    write_unified(
        chunked_dataset(folder, split="train", max_words=10),
        out,
        questions_file="questions_train.jsonl",
    )
    with pytest.raises(CorpusError, match="splits present: test, train$"):
        load_dataset(out, split="dev")
    (out / "questions.jsonl").unlink()
    assert [q.id for q in load_dataset(out, split="train").questions] == ["q2"]
    with pytest.raises(CorpusError, match=r"questions\.jsonl: no such file .*present: train$"):
        load_dataset(out)
    with pytest.raises(ConfigError, match="bad split name"):
        load_dataset(out, split="../x")


# --------------------------------------------------------------------------- CLI


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def test_cli_convert_tables(tmp_path):
    out = tmp_path / "out"
    r = run("convert", "tables", str(spider(tmp_path)), str(out))
    assert r.exit_code == 0, r.output
    assert r.output == f"wrote {out}: 5 passages, 3 questions, 1 skipped (no_gold_table: 1)\n"
    assert len(load_dataset(out).questions) == 3
    r = run("convert", "tables", str(spider(tmp_path)), str(out))
    assert isinstance(r.exception, HopgraphError) and "not empty" in str(r.exception)
    r = run("convert", "tables", str(spider(tmp_path)), str(out), "--overwrite")
    assert r.exit_code == 0, r.output
    r = run("convert", "tables", "spider", str(tmp_path / "o2"), "--data-dir", str(tmp_path))
    assert r.exit_code == 0, r.output


def test_cli_convert_chunks(tmp_path):
    folder = beir(tmp_path)
    out = tmp_path / "out"
    r = run("convert", "chunks", str(folder), str(out), "--chunk-words", "10")
    assert r.exit_code == 0, r.output
    assert r.output == (
        f"wrote {out}: 6 passages, 1 questions (test), 1 questions (train), 0 skipped\n"
    )
    assert load_dataset(out, split="train").questions[0].gold == ("d3#0", "d3#1")
    out2 = tmp_path / "out2"
    r = run("convert", "chunks", str(folder), str(out2), "--split", "train", "--overlap", "3")
    assert r.exit_code == 0, r.output
    assert "1 questions (train), 0 skipped" in r.output
    assert sorted(p.name for p in out2.iterdir()) == ["corpus.jsonl", "questions.jsonl"]
    out3 = tmp_path / "out3"
    r = run("convert", "chunks", str(beir(tmp_path / "nt", train=False)), str(out3))
    assert r.exit_code == 0, r.output
    assert r.output == f"wrote {out3}: 3 passages, 1 questions (test), 0 skipped\n"


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (["tables", "/no/such/folder", "o"], HopgraphError, "no dataset"),
        (["chunks", "/no/such/folder", "o"], HopgraphError, "no dataset"),
        (["chunks", "{beir}", "o", "--split", "dev"], CorpusError, "splits present"),
        (["tables", "{beir}", "o"], CorpusError, "tables.json: no such file"),
        (["chunks", "{spider}", "o"], CorpusError, "not a BEIR folder"),
    ],
)
def test_cli_convert_errors(tmp_path, args, error, match):
    paths = {"beir": str(beir(tmp_path)), "spider": str(spider(tmp_path))}
    args = [a.format(**paths) if a.startswith("{") else a for a in args]
    args[2] = str(tmp_path / args[2])
    r = run("convert", *args)
    assert isinstance(r.exception, error) and match in str(r.exception), r.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "args", [["--chunk-words", "0"], ["--overlap", "-1"], ["--chunk-words", "8", "--overlap", "8"]]
)
def test_cli_convert_chunks_bad_options(tmp_path, args):
    r = run("convert", "chunks", str(beir(tmp_path)), str(tmp_path / "o"), *args)
    assert r.exit_code == 2 and "Invalid value" in r.output


# --------------------------------------------------------------------------- real data


def _real(data_dir: Path, name: str) -> Path:
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def _spider_tables(sql: dict) -> set[int]:
    """Table indices in Spider's own parse of a query (every nested FROM)."""
    out: set[int] = set()
    stack: list = [sql]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            for unit in o.get("from", {}).get("table_units", []):
                if unit[0] == "table_unit":
                    out.add(unit[1])
            stack.extend(o.values())
        elif isinstance(o, list):
            stack.extend(o)
    return out


@pytest.mark.data
def test_real_spider_gold_matches_spider_parse(data_dir):
    path = _real(data_dir, "spider")
    ds = tables_dataset(path)
    assert (len(ds.corpus), len(ds.questions), ds.skipped) == (876, 517, {})
    schemas = {s["db_id"]: s for s in json.loads((path / "tables.json").read_text())}
    dev = json.loads((path / "dev.json").read_text())
    assert [q.id for q in ds.questions] == [f"{r['db_id']}-{i}" for i, r in enumerate(dev)]
    for q, rec in zip(ds.questions, dev, strict=True):
        names = schemas[rec["db_id"]]["table_names_original"]
        expected = {f"{rec['db_id']}.{names[t]}" for t in _spider_tables(rec["sql"])}
        assert set(q.gold) == expected, rec["query"]
    sizes = collections.Counter(min(len(q.gold), 3) for q in ds.questions)
    assert sizes == {1: 283, 2: 213, 3: 21}
    # half its table names pass the name test one by one; as tables they get no title aliases
    why = detect_settings(ds.corpus)["why"]
    assert why["name_like_share"] > 0.5 and why["table_share"] == 1.0
    assert "title aliases off" in why["reason"]


@pytest.mark.data
def test_real_bird_gold(data_dir):
    ds = tables_dataset(_real(data_dir, "bird"))
    assert (len(ds.corpus), len(ds.questions), ds.skipped) == (75, 796, {})
    sizes = collections.Counter(min(len(q.gold), 3) for q in ds.questions)
    assert sizes == {1: 172, 2: 499, 3: 125}
    for q in ds.questions:
        assert all(ds.corpus.get(g).metadata["db_id"] == q.metadata["db_id"] for g in q.gold)
        assert "evidence" in q.metadata and q.text and q.id.isdigit()


@pytest.mark.data
def test_real_scifact_chunks(data_dir):
    path = _real(data_dir, "scifact")
    test = chunked_dataset(path, max_words=64)
    assert (len(test.corpus), len(test.questions)) == (19815, 148)
    docs = {p.metadata["doc_id"] for p in test.corpus}
    assert len(docs) == 5183
    assert all(len(p.text.split()) <= 64 for p in test.corpus)
    for q in test.questions:
        assert q.gold and all(g in test.corpus for g in q.gold)
    assert sum(len(q.gold) for q in test.questions) == 697
