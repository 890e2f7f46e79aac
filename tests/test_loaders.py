"""Tests of the corpus and dataset loaders: every format, every error, and the real data."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hopgraph.corpus import Corpus, Dataset, iter_corpus, load_corpus, load_dataset
from hopgraph.corpus.loaders import FORMATS, detect_format
from hopgraph.errors import ConfigError, CorpusError

# --------------------------------------------------------------------------- helpers


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_lines(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


CORPUS = [
    {"idx": 0, "title": "Alpha", "text": "Alpha is a letter."},
    {"idx": 1, "title": "Beta", "text": "Beta follows alpha."},
    {"idx": 2, "title": "Gamma", "text": "Gamma is third."},
]
QUESTIONS = [
    {
        "id": "q1",
        "question": "What follows alpha?",
        "answers": ["Beta"],
        "gold_corpus_idx": [1, 0],
        "gold_titles": ["Beta", "Alpha"],
        "type": "bridge",
        "gold_complete": True,
    },
    {
        "id": "q2",
        "question": "What is third?",
        "answers": ["Gamma"],
        "gold_corpus_idx": [2],
        "gold_titles": ["Gamma"],
        "gold_complete": False,
    },
    {"id": "q3", "question": "Which letter?", "answers": ["Alpha"], "gold_corpus_idx": [0]},
]


def unified(tmp_path: Path, corpus=CORPUS, questions=QUESTIONS, name: str = "toy") -> Path:
    folder = tmp_path / name
    write_jsonl(folder / "corpus.jsonl", corpus)
    if questions is not None:
        write_jsonl(folder / "questions.jsonl", questions)
    return folder


def beir(tmp_path: Path, qrels: dict[str, list[str]] | None = None) -> Path:
    folder = tmp_path / "sci"
    write_jsonl(
        folder / "corpus.jsonl",
        [
            {"_id": "d1", "title": "One", "text": "first doc", "metadata": {"year": 2001}},
            {"_id": "d2", "title": "", "text": "second doc"},
            {"_id": "d3", "text": "third doc"},
        ],
    )
    write_jsonl(
        folder / "queries.jsonl",
        [
            {"_id": "1", "text": "query one", "metadata": {}},
            {"_id": "2", "text": "query two"},
            {"_id": "3", "text": "query three"},
            {"_id": "4", "text": "query four"},
        ],
    )
    if qrels is None:
        qrels = {
            "test": ["query-id\tcorpus-id\tscore", "3\td3\t1", "1\td2\t1", "1\td1\t2", "2\td1\t0"],
            "train": ["query-id\tcorpus-id\tscore", "4\td1\t1"],
        }
    for split, lines in qrels.items():
        write_lines(folder / "qrels" / f"{split}.tsv", lines)
    return folder


HOTPOT = [
    {
        "_id": "h1",
        "question": "Who wrote Alpha?",
        "answer": "Ann",
        "type": "bridge",
        "level": "easy",
        "supporting_facts": [["Alpha", 0], ["Ann", 0], ["Alpha", 1]],
        "context": [
            ["Alpha", ["Alpha is a book.", " It was written by Ann."]],
            ["Ann", ["Ann is a writer."]],
            ["Noise", ["Unrelated text."]],
        ],
    },
    {
        "_id": "h2",
        "question": "Is Ann a writer?",
        "answer": "yes",
        "type": "comparison",
        "level": "hard",
        "supporting_facts": [["Ann", 0]],
        "context": [
            ["Ann", ["Ann is a writer."]],
            ["Other", ["Other text.", " More."]],
        ],
    },
]

TWOWIKI = [
    {
        "_id": "w1",
        "type": "compositional",
        "question": "Who is the mother of the director of Film X?",
        "answer": "Mary",
        "evidences": [["Film X", "director", "Bob"], ["Bob", "mother", "Mary"]],
        "supporting_facts": [["Film X", 0], ["Bob", 1]],
        "context": [
            ["Film X", ["Film X is a film.", "It was directed by Bob."]],
            ["Bob", ["Bob is a director.", "His mother is Mary."]],
        ],
    }
]


def musique_records() -> list[dict[str, Any]]:
    return [
        {
            "id": "2hop__1_2",
            "question": "Where was the author of Alpha born?",
            "answer": "Paris",
            "answer_aliases": ["Paris, France", "Paris"],
            "answerable": True,
            "question_decomposition": [{"id": 1}, {"id": 2}],
            "paragraphs": [
                {
                    "idx": 0,
                    "title": "Alpha",
                    "paragraph_text": "Alpha by Ann.",
                    "is_supporting": True,
                },
                {"idx": 1, "title": "Noise", "paragraph_text": "Noise.", "is_supporting": False},
                {
                    "idx": 2,
                    "title": "Ann",
                    "paragraph_text": "Ann born in Paris.",
                    "is_supporting": True,
                },
            ],
        },
        {
            "id": "2hop__3_4",
            "question": "Who wrote Alpha?",
            "answer": "Ann",
            "answer_aliases": [],
            "answerable": True,
            "paragraphs": [
                {"idx": 0, "title": "Noise", "paragraph_text": "Noise.", "is_supporting": False},
                {
                    "idx": 1,
                    "title": "Alpha",
                    "paragraph_text": "Alpha by Ann.",
                    "is_supporting": True,
                },
                {
                    "idx": 2,
                    "title": "Alpha",
                    "paragraph_text": "Another Alpha.",
                    "is_supporting": False,
                },
            ],
        },
        {
            "id": "2hop__5_6",
            "question": "Unanswerable?",
            "answer": "",
            "answer_aliases": [],
            "answerable": False,
            "paragraphs": [
                {"idx": 0, "title": "Late", "paragraph_text": "Late text.", "is_supporting": False},
            ],
        },
    ]


# --------------------------------------------------------------------------- unified


def test_unified_dataset(tmp_path):
    ds = load_dataset(unified(tmp_path))
    assert isinstance(ds, Dataset) and isinstance(ds.corpus, Corpus)
    assert ds.name == "toy"
    assert ds.corpus.ids == ["0", "1", "2"]
    assert ds.corpus.get("1").title == "Beta"
    assert [q.id for q in ds.questions] == ["q1", "q3"]
    q1 = ds.questions[0]
    assert q1.text == "What follows alpha?"
    assert q1.gold == ("1", "0")
    assert q1.answers == ("Beta",)
    assert q1.metadata == {
        "gold_titles": ["Beta", "Alpha"],
        "type": "bridge",
        "gold_complete": True,
    }
    assert ds.skipped == {"gold_incomplete": 1}


def test_unified_include_incomplete(tmp_path):
    ds = load_dataset(unified(tmp_path), include_incomplete=True)
    assert [q.id for q in ds.questions] == ["q1", "q2", "q3"]
    assert ds.questions[1].metadata["gold_complete"] is False
    assert sum(ds.skipped.values()) == 0


def test_unified_corpus_only_and_marker_file(tmp_path):
    folder = unified(tmp_path)
    assert detect_format(folder) == "unified"
    assert load_corpus(folder).ids == ["0", "1", "2"]
    # pointing at corpus.jsonl means its folder
    assert load_corpus(folder / "corpus.jsonl").ids == ["0", "1", "2"]
    assert load_dataset(str(folder / "questions.jsonl")).name == "toy"


def test_unified_folder_without_questions(tmp_path):
    folder = unified(tmp_path, questions=None)
    assert len(load_corpus(folder)) == 3
    with pytest.raises(CorpusError, match=r"questions\.jsonl: no such file"):
        load_dataset(folder)


def test_blank_lines_bom_and_crlf(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    lines = [json.dumps(r) for r in CORPUS]
    data = "\ufeff" + lines[0] + "\r\n\r\n" + lines[1] + "\n   \n" + lines[2] + "\n\n"
    (folder / "corpus.jsonl").write_bytes(data.encode("utf-8"))
    assert load_corpus(folder).ids == ["0", "1", "2"]


def test_unicode_line_separator_inside_strings(tmp_path):
    rec = {"idx": 0, "title": "T", "text": "a\u2028b\u0085c"}
    folder = tmp_path / "u"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text(json.dumps(rec, ensure_ascii=False) + "\n", "utf-8")
    assert load_corpus(folder, fmt="unified")[0].text == "a\u2028b\u0085c"


def test_unified_chunk_words(tmp_path):
    long = " ".join(f"w{i}" for i in range(25))
    corpus = [*CORPUS, {"idx": 3, "title": "Long", "text": long, "src": "x"}]
    c = load_corpus(unified(tmp_path, corpus=corpus), chunk_words=10)
    assert c.ids[:3] == ["0", "1", "2"]
    assert c.ids[3:] == ["3#0", "3#1", "3#2"]
    assert c.get("3#1").metadata == {"doc_id": "3", "chunk": 1, "src": "x"}
    assert c.get("3#1").title == "Long"
    assert c.get("3#1").text.split()[:2] == ["w8", "w9"]  # overlap = 10 // 5


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_chunk_words_must_be_positive(tmp_path, bad):
    with pytest.raises(ValueError):
        load_corpus(unified(tmp_path), chunk_words=bad)


def _corpus_lines_with(line2: str) -> list[str]:
    return [json.dumps(CORPUS[0]), line2, json.dumps(CORPUS[2])]


@pytest.mark.parametrize(
    ("line2", "message"),
    [
        ('{"idx": 1, "title": "Beta", "text": "x"', "invalid JSON"),
        ("[1, 2]", "expected a JSON object, got array"),
        ('"just a string"', "expected a JSON object, got string"),
        ('{"idx": 1, "text": "x"}', "missing field 'title'"),
        ('{"idx": 1, "title": "B"}', "missing field 'text'"),
        ('{"title": "B", "text": "x"}', "missing field 'idx'"),
        ('{"idx": 1, "title": "B", "text": ""}', "empty text"),
        ('{"idx": 1, "title": "B", "text": " \\n\\t "}', "empty text"),
        ('{"idx": 1, "title": "B", "text": 5}', "field 'text' must be a string"),
        ('{"idx": [1], "title": "B", "text": "x"}', "field 'idx' must be a string or integer"),
        ('{"idx": 0, "title": "B", "text": "x"}', "duplicate idx 0 (first on line 1)"),
    ],
)
def test_unified_corpus_errors(tmp_path, line2, message):
    folder = tmp_path / "toy"
    write_lines(folder / "corpus.jsonl", _corpus_lines_with(line2))
    write_jsonl(folder / "questions.jsonl", QUESTIONS)
    with pytest.raises(CorpusError) as e:
        load_dataset(folder)
    msg = str(e.value)
    assert f"{folder / 'corpus.jsonl'}:2: " in msg
    assert message in msg
    assert e.value.line == 2


def test_invalid_utf8_names_line_and_column(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    good = json.dumps(CORPUS[0]).encode()
    bad = b'{"idx": 1, "title": "B", "text": "caf\xe9"}'
    (folder / "corpus.jsonl").write_bytes(good + b"\n" + bad + b"\n")
    with pytest.raises(CorpusError) as e:
        load_corpus(folder, fmt="unified")
    msg = str(e.value)
    assert f"{folder / 'corpus.jsonl'}:2: " in msg
    col = bad.index(b"\xe9") + 1
    assert f"not valid UTF-8 (byte 0xe9 at column {col})" in msg


def test_invalid_utf8_after_bom_counts_columns_from_line_start(tmp_path):
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "corpus.jsonl").write_bytes(b"\xef\xbb\xbf\xff")
    with pytest.raises(
        CorpusError, match=r"corpus\.jsonl:1: not valid UTF-8 \(byte 0xff at column 4\)"
    ):
        load_corpus(folder, fmt="unified")


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (
            {"id": "x", "question": "Q?", "answers": [], "gold_corpus_idx": [7]},
            "gold passage 7 is not in corpus.jsonl",
        ),
        ({"id": "x", "question": "Q?", "answers": []}, "missing field 'gold_corpus_idx'"),
        ({"question": "Q?", "gold_corpus_idx": [0]}, "missing field 'id'"),
        ({"id": "x", "gold_corpus_idx": [0]}, "missing field 'question'"),
        ({"id": "x", "question": "Q?", "gold_corpus_idx": []}, "'gold_corpus_idx' is empty"),
        ({"id": "x", "question": "Q?", "gold_corpus_idx": 3}, "'gold_corpus_idx' must be an array"),
        (
            {"id": "q1", "question": "Q?", "gold_corpus_idx": [0]},
            "duplicate question id 'q1' (first on line 1)",
        ),
        (
            {"id": "x", "question": "Q?", "gold_corpus_idx": [0], "answers": {"a": 1}},
            "'answers' must be",
        ),
    ],
)
def test_unified_question_errors(tmp_path, question, message):
    folder = unified(tmp_path, questions=[QUESTIONS[0], question])
    with pytest.raises(CorpusError) as e:
        load_dataset(folder)
    msg = str(e.value)
    assert f"{folder / 'questions.jsonl'}:2: " in msg
    assert message in msg


def test_unified_question_ids_and_answers_are_normalised(tmp_path):
    questions = [{"id": 7, "question": "Q?", "answers": "one", "gold_corpus_idx": [2, 2, 0]}]
    ds = load_dataset(unified(tmp_path, questions=questions))
    q = ds.questions[0]
    assert (q.id, q.gold, q.answers) == ("7", ("2", "0"), ("one",))


# --------------------------------------------------------------------------- BEIR


def test_beir_dataset(tmp_path):
    folder = beir(tmp_path)
    assert detect_format(folder) == "beir"
    ds = load_dataset(folder)
    assert ds.name == "sci"
    assert ds.corpus.ids == ["d1", "d2", "d3"]
    assert ds.corpus.get("d1").metadata == {"year": 2001}
    assert ds.corpus.get("d3").title == ""
    assert [q.id for q in ds.questions] == ["3", "1"]  # qrels order
    assert ds.questions[1].gold == ("d2", "d1")
    assert ds.questions[1].text == "query one"
    assert ds.questions[1].answers == ()
    assert ds.skipped == {"no_relevant_passage": 1}  # query 2 has only score 0


def test_beir_other_split(tmp_path):
    ds = load_dataset(beir(tmp_path), split="train")
    assert [(q.id, q.gold) for q in ds.questions] == [("4", ("d1",))]


def test_beir_missing_split_lists_present(tmp_path):
    with pytest.raises(CorpusError, match=r"no qrels for split 'dev'; splits present: test, train"):
        load_dataset(beir(tmp_path), split="dev")


def test_beir_without_qrels_folder(tmp_path):
    folder = beir(tmp_path, qrels={})
    assert len(load_corpus(folder)) == 3
    with pytest.raises(CorpusError, match="splits present: none"):
        load_dataset(folder)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1\td1", "expected 3 tab-separated columns"),
        ("1\td1\thigh", "score 'high' is not a number"),
        ("9\td1\t1", "query '9' is not in queries.jsonl"),
        ("1\tnope\t1", "passage 'nope' is not in corpus.jsonl"),
    ],
)
def test_beir_qrels_errors(tmp_path, line, message):
    folder = beir(tmp_path, qrels={"test": ["query-id\tcorpus-id\tscore", "1\td1\t1", line]})
    with pytest.raises(CorpusError) as e:
        load_dataset(folder)
    assert f"{folder / 'qrels' / 'test.tsv'}:3: " in str(e.value)
    assert message in str(e.value)


def test_beir_qrels_header_is_optional(tmp_path):
    folder = beir(tmp_path, qrels={"test": ["1\td1\t1"]})
    assert [q.id for q in load_dataset(folder).questions] == ["1"]


@pytest.mark.parametrize(
    ("fname", "record", "message"),
    [
        ("corpus.jsonl", {"_id": "d9", "title": "x", "text": "  "}, "empty text"),
        ("corpus.jsonl", {"title": "x", "text": "y"}, "missing field '_id'"),
        ("corpus.jsonl", {"_id": "d1", "text": "y"}, "duplicate _id 'd1'"),
        ("queries.jsonl", {"_id": "9"}, "missing field 'text'"),
        ("queries.jsonl", {"_id": "9", "text": ""}, "empty text"),
        ("queries.jsonl", {"_id": "1", "text": "again"}, "duplicate _id '1'"),
    ],
)
def test_beir_record_errors(tmp_path, fname, record, message):
    folder = beir(tmp_path)
    path = folder / fname
    lines = path.read_text().splitlines()
    lines.insert(1, json.dumps(record))
    write_lines(path, lines)
    with pytest.raises(CorpusError) as e:
        load_dataset(folder)
    assert f"{path}:2: " in str(e.value)
    assert message in str(e.value)


# --------------------------------------------------------------------------- HotpotQA / 2Wiki


def test_hotpotqa_dataset(tmp_path):
    path = write_json(tmp_path / "hotpot_dev_distractor_v1.json", HOTPOT)
    assert detect_format(path) == "hotpotqa"
    ds = load_dataset(path)
    assert ds.name == "hotpot_dev_distractor_v1"
    assert ds.corpus.ids == ["Alpha", "Ann", "Noise", "Other"]
    assert ds.corpus.get("Alpha").text == "Alpha is a book. It was written by Ann."
    assert ds.corpus.get("Alpha").title == "Alpha"
    assert ds.corpus.get("Other").text == "Other text. More."
    q = ds.questions[0]
    assert (q.id, q.text, q.gold, q.answers) == (
        "h1",
        "Who wrote Alpha?",
        ("Alpha", "Ann"),
        ("Ann",),
    )
    assert q.metadata == {"type": "bridge", "level": "easy"}
    assert ds.questions[1].gold == ("Ann",)
    assert ds.skipped == {}
    assert load_corpus(path).ids == ds.corpus.ids


def test_hotpotqa_gold_missing_from_context(tmp_path):
    records = json.loads(json.dumps(HOTPOT))
    records[1]["supporting_facts"].append(["Missing", 0])
    records[1]["context"].append(["Empty", ["", " "]])
    records[0]["supporting_facts"] = [["Empty", 0]]
    path = write_json(tmp_path / "hp.json", records)
    ds = load_dataset(path)
    assert "Empty" not in ds.corpus
    assert ds.questions == []
    assert ds.skipped == {"gold_incomplete": 2}
    ds = load_dataset(path, include_incomplete=True)
    assert [(q.id, q.gold) for q in ds.questions] == [("h2", ("Ann",))]
    assert ds.questions[0].metadata["gold_complete"] is False
    assert ds.skipped == {"gold_incomplete": 1}  # h1 has no gold passage at all


def test_2wiki_dataset(tmp_path):
    path = write_json(tmp_path / "dev.json", TWOWIKI)
    assert detect_format(path) == "2wiki"
    ds = load_dataset(path)
    assert ds.corpus.get("Film X").text == "Film X is a film. It was directed by Bob."
    q = ds.questions[0]
    assert (q.id, q.gold, q.answers, q.metadata) == (
        "w1",
        ("Film X", "Bob"),
        ("Mary",),
        {"type": "compositional"},
    )
    # the explicit format gives the same result; hotpotqa joining would not add spaces
    assert (
        load_corpus(path, fmt="2wiki").get("Bob").text == "Bob is a director. His mother is Mary."
    )
    assert (
        load_corpus(path, fmt="hotpotqa").get("Bob").text == "Bob is a director.His mother is Mary."
    )


def test_json_syntax_error_names_line(tmp_path):
    path = tmp_path / "hp.json"
    path.write_text('[\n {"_id": "a",\n  "question": }\n]\n', encoding="utf-8")
    with pytest.raises(CorpusError) as e:
        load_dataset(path, fmt="hotpotqa")
    assert f"{path}:3: invalid JSON" in str(e.value)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r[1].pop("_id"), "record 1: missing field '_id'"),
        (lambda r: r[1].pop("question"), "record 1: missing field 'question'"),
        (lambda r: r[1].pop("supporting_facts"), "record 1: missing field 'supporting_facts'"),
        (lambda r: r[1]["context"].append(["Bad"]), "record 1: each 'context' entry must be"),
        (lambda r: r[1].update(context="nope"), "record 1: field 'context' must be an array"),
        (lambda r: r[1].update(supporting_facts=[3]), "record 1: each 'supporting_facts' entry"),
        (lambda r: r[1].update(_id="h1"), "record 1: duplicate _id 'h1' (first in record 0)"),
        (lambda r: r.append(5), "record 2: expected a JSON object, got number"),
    ],
)
def test_hotpotqa_record_errors(tmp_path, mutate, message):
    records = json.loads(json.dumps(HOTPOT))
    mutate(records)
    path = write_json(tmp_path / "hp.json", records)
    with pytest.raises(CorpusError) as e:
        load_dataset(path)
    assert str(e.value).startswith(f"{path}: ")
    assert message in str(e.value)


def test_json_not_a_list(tmp_path):
    path = write_json(tmp_path / "hp.json", {"a": 1})
    with pytest.raises(CorpusError, match="expected a JSON array"):
        load_dataset(path, fmt="hotpotqa")


# --------------------------------------------------------------------------- MuSiQue


def test_musique_jsonl_dataset(tmp_path):
    path = write_jsonl(tmp_path / "musique_ans_v1.0_dev.jsonl", musique_records())
    assert detect_format(path) == "musique"
    ds = load_dataset(path)
    assert ds.name == "musique_ans_v1.0_dev"
    assert [(p.id, p.title, p.text) for p in ds.corpus] == [
        ("0", "Alpha", "Alpha by Ann."),
        ("1", "Noise", "Noise."),
        ("2", "Ann", "Ann born in Paris."),
        ("3", "Alpha", "Another Alpha."),
        ("4", "Late", "Late text."),
    ]
    q1, q2 = ds.questions
    assert (q1.id, q1.gold, q1.answers) == ("2hop__1_2", ("0", "2"), ("Paris", "Paris, France"))
    assert q1.metadata == {"answerable": True, "question_decomposition": [{"id": 1}, {"id": 2}]}
    assert (q2.gold, q2.answers) == (("0",), ("Ann",))
    assert ds.skipped == {"unanswerable": 1}
    assert len(load_corpus(path)) == 5


def test_musique_json_list(tmp_path):
    path = write_json(tmp_path / "musique.json", musique_records())
    assert detect_format(path) == "musique"
    assert len(load_dataset(path).questions) == 2


@pytest.mark.parametrize(
    ("line2", "message"),
    [
        ("{not json", "invalid JSON"),
        ('{"id": "x", "question": "q"}', "missing field 'paragraphs'"),
        (
            '{"id": "x", "question": "q", "paragraphs": [{"title": "t"}]}',
            "missing field 'paragraph_text'",
        ),
        ('{"id": "x", "question": "q", "paragraphs": [7]}', "expected a JSON object, got number"),
        ('{"question": "q", "paragraphs": []}', "missing field 'id'"),
        (
            '{"id": "2hop__1_2", "question": "q", "paragraphs": []}',
            "duplicate id '2hop__1_2' (first on line 1)",
        ),
    ],
)
def test_musique_errors(tmp_path, line2, message):
    path = write_lines(tmp_path / "m.jsonl", [json.dumps(musique_records()[0]), line2])
    with pytest.raises(CorpusError) as e:
        load_dataset(path)
    assert f"{path}:2: " in str(e.value)
    assert message in str(e.value)


def test_musique_no_supporting_paragraph_is_skipped(tmp_path):
    recs = musique_records()[:2]
    for p in recs[1]["paragraphs"]:
        p["is_supporting"] = False
    ds = load_dataset(write_jsonl(tmp_path / "m.jsonl", recs))
    assert [q.id for q in ds.questions] == ["2hop__1_2"]
    assert ds.skipped == {"no_gold": 1}


# --------------------------------------------------------------------------- HippoRAG


def test_hipporag_corpus(tmp_path):
    path = write_json(
        tmp_path / "musique_corpus.json",
        [{"title": "A", "text": "a text"}, {"title": "B", "text": "b text", "extra": 1}],
    )
    assert detect_format(path) == "hipporag"
    c = load_corpus(path)
    assert c.ids == ["0", "1"]
    assert c.get("1").metadata == {"extra": 1}
    with pytest.raises(CorpusError, match="holds no questions"):
        load_dataset(path)


def test_hipporag_idx_and_question_hint(tmp_path):
    path = write_json(
        tmp_path / "x_corpus.json",
        [{"idx": 10, "title": "A", "text": "a"}, {"idx": 4, "title": "B", "text": "b"}],
    )
    write_json(tmp_path / "x.json", musique_records())
    assert load_corpus(path).ids == ["10", "4"]
    with pytest.raises(CorpusError, match=r"its questions may be in .*x\.json"):
        load_dataset(path)


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"title": "A", "text": "a"}, {"title": "B", "text": ""}], "record 1: empty text"),
        ([{"title": "A", "text": "a"}, {"title": "B"}], "record 1: missing field 'text'"),
        ([{"idx": 1, "text": "a"}, {"idx": 1, "text": "b"}], "record 1: duplicate id '1'"),
        ([{"title": "A", "text": "a"}, "x"], "record 1: expected a JSON object"),
    ],
)
def test_hipporag_errors(tmp_path, records, message):
    path = write_json(tmp_path / "x_corpus.json", records)
    with pytest.raises(CorpusError) as e:
        load_corpus(path)
    assert str(e.value).startswith(f"{path}: ")
    assert message in str(e.value)


# --------------------------------------------------------------------------- text folder


def test_text_folder(tmp_path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "b.txt").write_text("Bee text.\n", encoding="utf-8")
    (root / "a.md").write_text("# A\n\nAy text.", encoding="utf-8")
    (root / "sub" / "c.txt").write_text(" ".join(f"w{i}" for i in range(250)), encoding="utf-8")
    (root / "skip.csv").write_text("x,y", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.txt").write_text("hidden", encoding="utf-8")
    assert detect_format(root) == "text"
    c = load_corpus(root)
    assert c.ids == ["a", "b", "sub/c#0", "sub/c#1"]
    # a Markdown file's title is its first H1 (the file stem when it has none)
    assert c.get("a").title == "A" and c.get("a").text == "A\nAy text."
    assert c.get("a").metadata == {
        "doc_id": "a", "chunk": 0, "source": "a.md", "path": "a.md", "heading": "A"
    }  # fmt: skip
    assert c.get("sub/c#1").title == "c"
    assert c.get("sub/c#1").metadata == {
        "doc_id": "sub/c", "chunk": 1, "source": "sub/c.txt", "path": "sub/c.txt"
    }  # fmt: skip
    assert c.get("sub/c#1").text.split()[0] == "w160"  # 200-word windows, 40 overlap
    assert load_corpus(root, chunk_words=100).ids[2:] == ["sub/c#0", "sub/c#1", "sub/c#2"]
    with pytest.raises(CorpusError, match="holds no questions"):
        load_dataset(root)


def test_text_folder_errors(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.txt").write_bytes(b"fine line\nbad \xc3( line\n")
    with pytest.raises(CorpusError, match=r"a\.txt:2: not valid UTF-8 \(byte 0xc3 at column 5\)"):
        load_corpus(root)
    (root / "a.txt").write_text("  \n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"a\.txt: empty text"):
        load_corpus(root)
    (root / "a.txt").write_text("one", encoding="utf-8")
    (root / "a.md").write_text("two", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"a\.txt: document id 'a' also comes from .*a\.md"):
        load_corpus(root)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusError, match="no .txt or .md files"):
        load_corpus(empty, fmt="text")


# --------------------------------------------------------------------------- detection, paths


def test_missing_path(tmp_path):
    with pytest.raises(CorpusError, match="no such file") as e:
        load_corpus(tmp_path / "nope")
    assert "nope" in str(e.value)
    with pytest.raises(CorpusError, match="no such file"):
        load_dataset(tmp_path / "nope.json")


def test_explicit_format_missing_file(tmp_path):
    folder = tmp_path / "half"
    write_jsonl(folder / "corpus.jsonl", CORPUS)
    with pytest.raises(CorpusError, match=r"queries\.jsonl: no such file"):
        load_dataset(folder, fmt="beir")


def test_unknown_layout_lists_formats(tmp_path):
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "data.csv").write_text("a,b\n", encoding="utf-8")
    with pytest.raises(CorpusError) as e:
        load_corpus(folder)
    msg = str(e.value)
    assert str(folder) in msg and "cannot tell the format" in msg
    assert all(name in msg for name in FORMATS)
    other = write_json(tmp_path / "other.json", [{"a": 1}])
    with pytest.raises(CorpusError, match="cannot tell the format"):
        load_dataset(other)
    other = write_jsonl(tmp_path / "other.jsonl", [{"a": 1}])
    with pytest.raises(CorpusError, match="cannot tell the format"):
        load_dataset(other)


def test_unknown_fmt_value(tmp_path):
    with pytest.raises(ConfigError, match="unknown format 'csv'"):
        load_corpus(unified(tmp_path), fmt="csv")


def test_folder_format_given_a_file(tmp_path):
    path = write_json(tmp_path / "hp.json", HOTPOT)
    with pytest.raises(CorpusError, match="needs a folder"):
        load_corpus(path, fmt="unified")


# --------------------------------------------------------------------------- real data


def _real(data_dir: Path, name: str) -> Path:
    path = data_dir / name
    if not path.exists():
        pytest.skip(f"{path} is absent")
    return path


def _check_gold(ds: Dataset) -> None:
    for q in ds.questions:
        assert q.gold and all(g in ds.corpus for g in q.gold)


@pytest.mark.data
@pytest.mark.parametrize(
    ("name", "n_passages", "n_questions"),
    [
        ("2wikimultihopqa", 6119, 489),
        ("hotpotqa", 4858, 243),
        ("musique", 3365, 89),
        ("hotpotqa_train", 994, 100),
        ("musique_train", 1890, 100),
    ],
)
def test_real_unified_sets(data_dir, name, n_passages, n_questions):
    path = _real(data_dir, name)
    assert detect_format(path) == "unified"
    ds = load_dataset(path)
    assert ds.name == name
    assert (len(ds.corpus), len(ds.questions)) == (n_passages, n_questions)
    assert sum(ds.skipped.values()) == 0
    _check_gold(ds)
    for q in ds.questions:
        titles = q.metadata["gold_titles"]
        assert [ds.corpus.get(g).title for g in q.gold] == titles


@pytest.mark.data
def test_real_2wiki_types_and_gold_sizes(data_dir):
    ds = load_dataset(_real(data_dir, "2wikimultihopqa"))
    types = {q.metadata["type"] for q in ds.questions}
    assert types <= {"compositional", "comparison", "bridge_comparison", "inference"}
    assert {len(q.gold) for q in ds.questions} == {2, 4}


@pytest.mark.data
def test_real_hotpotqa_loads_fast(data_dir):
    path = _real(data_dir, "hotpotqa")
    start = time.perf_counter()
    corpus = load_corpus(path)
    elapsed = time.perf_counter() - start
    assert len(corpus) == 4858
    assert elapsed < 1.0, f"loading took {elapsed:.2f}s"


@pytest.mark.data
def test_real_chunked_corpus(data_dir):
    path = _real(data_dir, "musique_train")
    plain = load_corpus(path)
    chunked = load_corpus(path, chunk_words=100)
    assert len(chunked) > len(plain)
    assert all(len(p.text.split()) <= 100 for p in chunked)
    docs = {p.metadata.get("doc_id", p.id) for p in chunked}
    assert docs == set(plain.ids)


def _qrels_queries(path: Path) -> tuple[list[str], int]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    positive = [r for r in rows if float(r[2]) > 0]
    return list(dict.fromkeys(r[0] for r in positive)), len(positive)


@pytest.mark.data
def test_real_scifact(data_dir):
    path = _real(data_dir, "scifact")
    assert detect_format(path) == "beir"
    ds = load_dataset(path, split="test")
    assert ds.name == "scifact"
    expected, n_pairs = _qrels_queries(path / "qrels" / "test.tsv")
    assert [q.id for q in ds.questions] == expected
    assert len(ds.questions) == 148 and n_pairs == 170
    assert sum(len(q.gold) for q in ds.questions) == n_pairs
    assert len(ds.corpus) == 5183
    _check_gold(ds)
    train = load_dataset(path, split="train")
    assert len(train.questions) == len(_qrels_queries(path / "qrels" / "train.tsv")[0])
    with pytest.raises(CorpusError, match="splits present: test, train"):
        load_dataset(path, split="dev")


@pytest.mark.data
@pytest.mark.parametrize("name", ["spider", "bird"])
def test_real_sql_sets_are_not_corpora(data_dir, name):
    with pytest.raises(CorpusError, match="cannot tell the format"):
        load_corpus(_real(data_dir, name))


def test_passages_jsonl_is_read_with_its_metadata(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(
        '{"id": "a", "title": "A", "text": "Alpha.", "metadata": {"links": ["b"]}}\n'
        '{"id": 7, "text": "Seven.", "source": "wiki"}\n'
    )
    assert detect_format(path) == "passages"
    c = load_corpus(path)
    assert c.ids == ["a", "7"] and c[0].metadata == {"links": ["b"]}
    assert c[1].title == "" and c[1].metadata == {"source": "wiki"}
    path.write_text('{"id": "a", "text": "Alpha."}\n{"id": "b", "text": ""}\n')
    with pytest.raises(CorpusError, match=r"new.jsonl:2"):
        load_corpus(path)


def test_skip_bad_skips_and_counts_empty_and_non_utf8_passages(tmp_path):
    """Without skip_bad the first bad line stops the read (naming it); with it, the empty and
    not-UTF-8 passages are left out and counted by file and line, and the rest is read."""
    from hopgraph.corpus import SkippedPassages

    lines = [
        b'{"id": "a", "title": "A", "text": "alpha"}',
        b'{"id": "b", "title": "B", "text": "   "}',
        b'{"id": "c", "title": "C", "text": "caf\xe9 latin-1"}',
        b'{"id": "d", "title": "D", "text": "delta"}',
        b'{"id": "e", "text": ""}',
    ]
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(CorpusError, match=r"dump.jsonl:2.*empty text"):
        list(iter_corpus(path))
    skipped = SkippedPassages()
    assert [p.id for p in iter_corpus(path, skip_bad=skipped)] == ["a", "d"]
    assert skipped.counts == {"empty_text": 2, "not_utf8": 1}
    assert skipped.places["empty_text"] == [f"{path}:2", f"{path}:5"]
    assert skipped.places["not_utf8"] == [f"{path}:3"]
    assert skipped.total == 3
    assert "skipped 2 passages whose text is empty" in skipped.describe()
    assert skipped.to_dict()["not_utf8"]["count"] == 1

    folder = tmp_path / "unified"
    folder.mkdir()
    (folder / "corpus.jsonl").write_bytes(
        b'{"idx": 1, "title": "T", "text": ""}\n{"idx": 2, "title": "U", "text": "ok"}\n'
    )
    (folder / "questions.jsonl").write_text("")
    again = SkippedPassages()
    assert [p.id for p in load_corpus(folder, skip_bad=again)] == ["2"]
    assert again.counts == {"empty_text": 1}

    other = tmp_path / "other.jsonl"  # a bad record of another kind still stops
    other.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    with pytest.raises(CorpusError, match="duplicate"):
        list(iter_corpus(other, skip_bad=SkippedPassages()))
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text("[]")
    with pytest.raises(ConfigError, match="JSONL corpora"):
        load_corpus(hotpot, fmt="hotpotqa", skip_bad=SkippedPassages())
