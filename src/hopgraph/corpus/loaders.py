"""Read corpora and QA datasets from disk in the formats hopgraph knows.

Formats (``fmt``):

``unified``
    A folder with ``corpus.jsonl`` (``{"idx", "title", "text"}``) and ``questions.jsonl``
    (``{"id", "question", "answers", "gold_corpus_idx", ...}``); other splits of the
    questions, if any, in ``questions_{split}.jsonl``.
``beir``
    A folder with ``corpus.jsonl`` (``{"_id", "title", "text"}``), ``queries.jsonl``
    (``{"_id", "text"}``) and ``qrels/{split}.tsv``.
``hotpotqa`` / ``2wiki``
    The raw HotpotQA / 2WikiMultiHopQA ``.json`` list of questions with ``context`` and
    ``supporting_facts``; the corpus is the union of all contexts.
``musique``
    Raw MuSiQue ``.jsonl`` (or ``.json`` list): questions with their ``paragraphs``.
``hipporag``
    A HippoRAG ``*_corpus.json`` file: a JSON list of ``{"title", "text"}``. Corpus only.
``text``
    A folder of documents (or one document file): ``.txt``, ``.md``, ``.pdf``, ``.html`` /
    ``.htm`` and ``.docx`` files, also with a wrong or no suffix when the content tells
    (``%PDF-``, a zip with ``word/document.xml``, ``<html`` / ``<!doctype html``); other files
    and hidden ones are left out. Each document is cut into passages by section (a PDF page, a
    heading of Markdown, HTML or DOCX) and by :func:`chunk_document` (``chunk_words``, 200 by
    default), keeping ``doc_id``, ``chunk``, ``source`` and ``page`` / ``heading``; a document
    without text is skipped with a warning. See :mod:`hopgraph.corpus.documents`; PDF, HTML
    and DOCX need ``pip install 'hopgraph[docs]'``. Corpus only.
``passages``
    A ``.jsonl`` of passages ``{"id", "title", "text", "metadata"}`` (an index's
    ``passages.jsonl``), also when it is a folder's ``corpus.jsonl``. Corpus only.

A folder's ``corpus.jsonl`` is told by its first line: ``idx`` for unified, ``_id`` for BEIR,
``id`` and ``text`` for passages (``questions.jsonl`` or ``queries.jsonl`` beside it decide
first).

Every problem with the data raises :class:`~hopgraph.errors.CorpusError` naming the file and,
where there is one, the 1-based line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.documents import BOM as _BOM
from hopgraph.corpus.documents import decode_utf8 as _decode
from hopgraph.corpus.documents import document_kind
from hopgraph.corpus.documents import read_bytes as _read_bytes
from hopgraph.corpus.documents import read_error as _read_error
from hopgraph.corpus.documents.folder import folder_passages
from hopgraph.corpus.documents.folder import visible_files as _visible_files
from hopgraph.corpus.passage import Corpus, Dataset, Passage, Question
from hopgraph.errors import ConfigError, CorpusError

__all__ = ["FORMATS", "detect_format", "iter_corpus", "load_corpus", "load_dataset"]

FORMATS: dict[str, str] = {
    "unified": "folder with corpus.jsonl + questions.jsonl",
    "beir": "folder with corpus.jsonl + queries.jsonl + qrels/",
    "hotpotqa": "HotpotQA raw .json (context + supporting_facts)",
    "2wiki": "2WikiMultiHopQA raw .json (context + supporting_facts + evidences)",
    "musique": "MuSiQue raw .jsonl/.json (records with paragraphs)",
    "hipporag": "HippoRAG *_corpus.json (list of title/text)",
    "text": "folder of documents: .txt, .md, .pdf, .html/.htm, .docx (or one such file)",
    "passages": ".jsonl of passages {id, title, text, metadata} (an index's passages.jsonl, "
    "or a folder's corpus.jsonl of them)",
}

_MARKER_FILES = ("corpus.jsonl", "questions.jsonl", "queries.jsonl")


# --------------------------------------------------------------------------- reading


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file, reading it line
    by line (a corpus of a million passages is never held whole). A leading BOM is dropped; an
    invalid UTF-8 byte names its line and column."""
    loads = json.loads
    try:
        f = path.open("rb")
    except OSError as e:
        raise _read_error(e, path) from None
    with f:
        for lineno, raw in enumerate(f, 1):
            skip = len(_BOM) if lineno == 1 and raw.startswith(_BOM) else 0
            try:
                line = raw[skip:].decode("utf-8")
            except UnicodeDecodeError as e:
                col = e.start + skip + 1  # counted from the line's first byte, BOM included
                raise CorpusError(
                    f"not valid UTF-8 (byte 0x{raw[e.start + skip]:02x} at column {col})",
                    path,
                    lineno,
                ) from None
            if not line or line.isspace():
                continue
            try:
                rec = loads(line)
            except json.JSONDecodeError as e:
                raise CorpusError(
                    f"invalid JSON: {e.msg} (column {e.colno})", path, lineno
                ) from None
            if not isinstance(rec, dict):
                raise CorpusError(f"expected a JSON object, got {_json_type(rec)}", path, lineno)
            yield lineno, rec


def _first_jsonl_record(path: Path) -> Any:
    """The first non-blank line of a JSONL file, parsed; None when it cannot be read."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if raw.strip():
                    return json.loads(raw.removeprefix(_BOM).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return None


def _load_json(path: Path) -> Any:
    text = _decode(_read_bytes(path), path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise CorpusError(f"invalid JSON: {e.msg} (column {e.colno})", path, e.lineno) from None


def _load_json_list(path: Path, data: Any = None) -> list[Any]:
    if data is None:
        data = _load_json(path)
    if not isinstance(data, list):
        raise CorpusError(f"expected a JSON array of records, got {_json_type(data)}", path)
    return data


# --------------------------------------------------------------------------- field checks


class _Where:
    """Location of a record for error messages: a line of a JSONL file or a record of a list."""

    __slots__ = ("path", "line", "record")

    def __init__(self, path: Path, line: int | None = None, record: int | None = None):
        self.path = path
        self.line = line
        self.record = record

    def error(self, message: str) -> CorpusError:
        if self.record is not None:
            message = f"record {self.record}: {message}"
        return CorpusError(message, self.path, self.line)


def _require(rec: dict[str, Any], key: str, where: _Where) -> Any:
    try:
        return rec[key]
    except KeyError:
        raise where.error(f"missing field {key!r}") from None


def _require_dict(rec: Any, where: _Where) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise where.error(f"expected a JSON object, got {_json_type(rec)}")
    return rec


def _id_value(value: Any, key: str, where: _Where) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise where.error(f"field {key!r} must be a string or integer, got {_json_type(value)}")
    s = str(value)
    if not s.strip():
        raise where.error(f"field {key!r} is empty")
    return s


def _str_value(value: Any, key: str, where: _Where, *, nonempty: bool = False) -> str:
    if not isinstance(value, str):
        raise where.error(f"field {key!r} must be a string, got {_json_type(value)}")
    if nonempty and not value.strip():
        raise where.error(f"empty {key}" if key == "text" else f"field {key!r} is empty")
    return value


def _answers(value: Any, key: str, where: _Where) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(a, (str, int, float)) for a in value):
        return tuple(dict.fromkeys(str(a) for a in value))
    raise where.error(f"field {key!r} must be a string or a list of strings")


# --------------------------------------------------------------------------- detection


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise CorpusError("no such file or folder", p)
    # A marker file of a folder layout stands for its folder.
    if p.is_file() and p.name in _MARKER_FILES:
        return p.parent
    return p


def _unknown(path: Path, why: str = "") -> CorpusError:
    known = "; ".join(f"{k} ({v})" for k, v in FORMATS.items())
    return CorpusError(f"cannot tell the format{why}; known formats: {known}", path)


def _has_documents(folder: Path) -> bool:
    # unsorted: stop at the first hit
    return any(document_kind(p) for p in _visible_files(folder, ordered=False))


def _corpus_jsonl_kind(corpus: Path) -> str | None:
    """The format a folder's ``corpus.jsonl`` stands for, from its first line's keys: ``idx``
    unified, ``_id`` BEIR, ``id`` and ``text`` passages."""
    first = _first_jsonl_record(corpus)
    if not isinstance(first, dict):
        return None
    if "idx" in first:
        return "unified"
    if "_id" in first:
        return "beir"
    if "id" in first and "text" in first:
        return "passages"
    return None


def _detect(path: Path) -> tuple[str, Any]:
    """Return (format, parsed JSON or None) for an existing path."""
    if path.is_file() and path.stat().st_size == 0:
        raise CorpusError("the file is empty (0 bytes): there are no passages to index", path)
    if path.is_dir():
        corpus = path / "corpus.jsonl"
        if corpus.is_file():
            if (path / "questions.jsonl").is_file():
                return "unified", None
            if (path / "queries.jsonl").is_file():
                return "beir", None
            kind = _corpus_jsonl_kind(corpus)
            if kind is not None:
                return kind, None
        if _has_documents(path):
            return "text", None
        raise _unknown(path)
    name = path.name.lower()
    if name.endswith("_corpus.json"):
        return "hipporag", None
    if name.endswith(".jsonl"):
        first = _first_jsonl_record(path)
        if isinstance(first, dict) and "paragraphs" in first:
            return "musique", None
        if isinstance(first, dict) and "text" in first and ("id" in first or "idx" in first):
            return "passages", None
        raise _unknown(path, " (a .jsonl file of neither passages nor 'paragraphs' records)")
    if name.endswith(".json"):
        data = _load_json(path)
        first = data[0] if isinstance(data, list) and data else None
        if isinstance(first, dict):
            if "context" in first and "supporting_facts" in first:
                if all(k in first for k in ("_id", "type", "evidences")):
                    return "2wiki", data
                return "hotpotqa", data
            if "paragraphs" in first:
                return "musique", data
        raise _unknown(path, " (a .json file of an unknown layout)")
    if document_kind(path):
        return "text", None  # a single document
    raise _unknown(path)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the format of ``path`` (one of :data:`FORMATS`); CorpusError if unknown."""
    return _detect(_resolve(path))[0]


def _format_of(path: Path, fmt: str) -> tuple[str, Any]:
    if fmt == "auto":
        return _detect(path)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of: auto, {', '.join(FORMATS)}")
    return fmt, None


def _need_dir(path: Path, fmt: str) -> None:
    if not path.is_dir():
        raise CorpusError(f"the {fmt} format needs a folder, not a file", path)


def _need_file(folder: Path, name: str) -> Path:
    p = folder / name
    if not p.is_file():
        raise CorpusError("no such file", p)
    return p


# --------------------------------------------------------------------------- unified


def _unified_corpus(folder: Path) -> Iterator[Passage]:
    path = _need_file(folder, "corpus.jsonl")
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path):
        where = _Where(path, lineno)
        pid = _id_value(_require(rec, "idx", where), "idx", where)
        title = _str_value(_require(rec, "title", where), "title", where)
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        if pid in seen:
            raise where.error(f"duplicate idx {pid} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = {k: v for k, v in rec.items() if k not in ("idx", "title", "text")}
        yield Passage(pid, title, text, meta)


def _passages_path(path: Path) -> Path:
    """The passages file: ``path``, or a folder's ``corpus.jsonl``."""
    return _need_file(path, "corpus.jsonl") if path.is_dir() else path


def _passages_file(path: Path) -> Iterator[Passage]:
    """A .jsonl of passages: ``id`` (or ``idx``), ``text``, optional ``title`` and ``metadata``
    (other fields go to the metadata too)."""
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path):
        where = _Where(path, lineno)
        key = "id" if "id" in rec else "idx"
        pid = _id_value(_require(rec, key, where), key, where)
        title = _str_value(rec.get("title", ""), "title", where)
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        if pid in seen:
            raise where.error(f"duplicate {key} {pid} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = rec.get("metadata") or {}
        if not isinstance(meta, dict):
            raise where.error("'metadata' must be an object")
        extra = {k: v for k, v in rec.items() if k not in (key, "title", "text", "metadata")}
        yield Passage(pid, title, text, {**extra, **meta})


_UNIFIED_Q_FIELDS = ("id", "question", "answers", "gold_corpus_idx")
_SPLIT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def unified_questions_file(split: str) -> str:
    """File name of a unified folder's questions for ``split``: ``questions.jsonl`` for
    "test", else ``questions_{split}.jsonl``."""
    if not isinstance(split, str) or not _SPLIT_NAME.fullmatch(split) or ".." in split:
        raise ConfigError(f"bad split name {split!r} (letters, digits, '_', '-', '.')")
    return "questions.jsonl" if split == "test" else f"questions_{split}.jsonl"


def _unified_splits(folder: Path) -> list[str]:
    splits = ["test"] if (folder / "questions.jsonl").is_file() else []
    for p in sorted(folder.glob("questions_*.jsonl")):
        split = p.name[len("questions_") : -len(".jsonl")]
        if split and split != "test" and p.is_file():
            splits.append(split)
    return splits


def _unified_questions_path(folder: Path, split: str) -> Path:
    path = folder / unified_questions_file(split)
    if not path.is_file():
        listing = ", ".join(_unified_splits(folder)) or "none"
        raise CorpusError(
            f"no such file (no questions for split {split!r}); splits present: {listing}", path
        )
    return path


def _unified_questions(
    folder: Path, ids: set[str], include_incomplete: bool, split: str = "test"
) -> tuple[list[Question], dict[str, int]]:
    path = _unified_questions_path(folder, split)
    questions: list[Question] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path):
        where = _Where(path, lineno)
        qid = _id_value(_require(rec, "id", where), "id", where)
        text = _str_value(_require(rec, "question", where), "question", where, nonempty=True)
        if qid in seen:
            raise where.error(f"duplicate question id {qid!r} (first on line {seen[qid]})")
        seen[qid] = lineno
        raw_gold = _require(rec, "gold_corpus_idx", where)
        if rec.get("gold_complete", True) is False and not include_incomplete:
            skipped["gold_incomplete"] = skipped.get("gold_incomplete", 0) + 1
            continue
        if not isinstance(raw_gold, list):
            raise where.error(
                f"field 'gold_corpus_idx' must be an array, got {_json_type(raw_gold)}"
            )
        gold: list[str] = []
        for g in raw_gold:
            gid = _id_value(g, "gold_corpus_idx", where)
            if gid not in ids:
                raise where.error(f"gold passage {gid} is not in corpus.jsonl")
            if gid not in gold:
                gold.append(gid)
        if not gold:
            raise where.error("field 'gold_corpus_idx' is empty")
        answers = _answers(rec.get("answers"), "answers", where)
        meta = {k: v for k, v in rec.items() if k not in _UNIFIED_Q_FIELDS}
        questions.append(Question(qid, text, tuple(gold), answers, meta))
    return questions, skipped


# --------------------------------------------------------------------------- BEIR


def _beir_corpus(folder: Path) -> list[Passage]:
    path = _need_file(folder, "corpus.jsonl")
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path):
        where = _Where(path, lineno)
        pid = _id_value(_require(rec, "_id", where), "_id", where)
        title = rec.get("title") or ""
        title = _str_value(title, "title", where)
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        if pid in seen:
            raise where.error(f"duplicate _id {pid!r} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = rec.get("metadata")
        passages.append(Passage(pid, title, text, dict(meta) if isinstance(meta, dict) else {}))
    return passages


def _qrels_file(folder: Path, split: str) -> Path:
    qrels_dir = folder / "qrels"
    qrels_path = qrels_dir / f"{split}.tsv"
    if not qrels_path.is_file():
        present = sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
        listing = ", ".join(present) if present else "none"
        raise CorpusError(f"no qrels for split {split!r}; splits present: {listing}", qrels_dir)
    return qrels_path


def _beir_questions(
    folder: Path, ids: set[str], split: str
) -> tuple[list[Question], dict[str, int]]:
    qrels_path = _qrels_file(folder, split)
    queries_path = _need_file(folder, "queries.jsonl")
    queries: dict[str, tuple[str, dict[str, Any]]] = {}
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(queries_path):
        where = _Where(queries_path, lineno)
        qid = _id_value(_require(rec, "_id", where), "_id", where)
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        if qid in seen:
            raise where.error(f"duplicate _id {qid!r} (first on line {seen[qid]})")
        seen[qid] = lineno
        meta = {k: v for k, v in rec.items() if k not in ("_id", "text", "metadata")}
        if isinstance(rec.get("metadata"), dict):
            meta.update(rec["metadata"])
        queries[qid] = (text, meta)

    text = _decode(_read_bytes(qrels_path), qrels_path)
    gold: dict[str, list[str]] = {}
    zero_only: dict[str, None] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        cols = line.split("\t")
        if lineno == 1 and cols[0].strip() == "query-id":
            continue
        if len(cols) != 3:
            raise CorpusError(
                f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cols)}",
                qrels_path,
                lineno,
            )
        qid, cid, score_s = (c.strip() for c in cols)
        try:
            score = float(score_s)
        except ValueError:
            raise CorpusError(f"score {score_s!r} is not a number", qrels_path, lineno) from None
        if qid not in queries:
            raise CorpusError(f"query {qid!r} is not in queries.jsonl", qrels_path, lineno)
        if cid not in ids:
            raise CorpusError(f"passage {cid!r} is not in corpus.jsonl", qrels_path, lineno)
        if score > 0:
            g = gold.setdefault(qid, [])
            if cid not in g:
                g.append(cid)
        else:
            zero_only[qid] = None

    questions = [
        Question(qid, queries[qid][0], tuple(g), (), queries[qid][1]) for qid, g in gold.items()
    ]
    skipped: dict[str, int] = {}
    n_zero = sum(1 for q in zero_only if q not in gold)
    if n_zero:
        skipped["no_relevant_passage"] = n_zero
    return questions, skipped


# --------------------------------------------------------------------------- HotpotQA / 2Wiki


def _join_sentences(sentences: list[str], fmt: str) -> str:
    if fmt == "hotpotqa":
        return "".join(sentences)
    out: list[str] = []
    for s in sentences:
        if out and s and not s[0].isspace() and not out[-1][-1:].isspace():
            out.append(" ")
        out.append(s)
    return "".join(out)


def _context_corpus(
    path: Path, records: list[Any], fmt: str
) -> tuple[list[Passage], dict[str, Passage]]:
    passages: list[Passage] = []
    by_title: dict[str, Passage] = {}
    for i, rec in enumerate(records):
        where = _Where(path, record=i)
        rec = _require_dict(rec, where)
        context = _require(rec, "context", where)
        if not isinstance(context, list):
            raise where.error(f"field 'context' must be an array, got {_json_type(context)}")
        for entry in context:
            if (
                not isinstance(entry, list)
                or len(entry) != 2
                or not isinstance(entry[0], str)
                or not isinstance(entry[1], list)
                or not all(isinstance(s, str) for s in entry[1])
            ):
                raise where.error("each 'context' entry must be [title, [sentences]]")
            title, sentences = entry
            if title in by_title:
                continue
            text = _join_sentences(sentences, fmt)
            if not text.strip():
                continue  # an empty paragraph is no passage; gold pointing at it is incomplete
            p = Passage(title, title, text)
            by_title[title] = p
            passages.append(p)
    return passages, by_title


def _context_questions(
    path: Path,
    records: list[Any],
    titles: dict[str, Passage],
    fmt: str,
    include_incomplete: bool,
) -> tuple[list[Question], dict[str, int]]:
    questions: list[Question] = []
    skipped: dict[str, int] = {}
    seen: dict[str, int] = {}
    keep = ("type",) if fmt == "2wiki" else ("type", "level")
    for i, rec in enumerate(records):
        where = _Where(path, record=i)
        qid = _id_value(_require(rec, "_id", where), "_id", where)
        text = _str_value(_require(rec, "question", where), "question", where, nonempty=True)
        if qid in seen:
            raise where.error(f"duplicate _id {qid!r} (first in record {seen[qid]})")
        seen[qid] = i
        facts = _require(rec, "supporting_facts", where)
        if not isinstance(facts, list) or not all(
            isinstance(f, list) and f and isinstance(f[0], str) for f in facts
        ):
            raise where.error("each 'supporting_facts' entry must be [title, sentence index]")
        gold_titles = list(dict.fromkeys(f[0] for f in facts))
        gold = [t for t in gold_titles if t in titles]
        meta = {k: rec[k] for k in keep if k in rec}
        if not gold:
            key = "gold_incomplete" if gold_titles else "no_gold"
            skipped[key] = skipped.get(key, 0) + 1
            continue
        if len(gold) < len(gold_titles):  # a supporting title has no (non-empty) paragraph
            if not include_incomplete:
                skipped["gold_incomplete"] = skipped.get("gold_incomplete", 0) + 1
                continue
            meta["gold_complete"] = False
        answers = _answers(rec.get("answer"), "answer", where)
        questions.append(Question(qid, text, tuple(gold), answers, meta))
    return questions, skipped


# --------------------------------------------------------------------------- MuSiQue


def _musique_records(path: Path, data: Any) -> Iterator[tuple[_Where, dict[str, Any]]]:
    if path.name.lower().endswith(".jsonl") and data is None:
        for lineno, rec in _iter_jsonl(path):
            yield _Where(path, lineno), rec
        return
    for i, rec in enumerate(_load_json_list(path, data)):
        where = _Where(path, record=i)
        yield where, _require_dict(rec, where)


def _musique(
    path: Path, data: Any, with_questions: bool, include_incomplete: bool
) -> tuple[list[Passage], list[Question], dict[str, int]]:
    passages: list[Passage] = []
    by_key: dict[tuple[str, str], str] = {}
    questions: list[Question] = []
    skipped: dict[str, int] = {}
    seen: dict[str, _Where] = {}
    for where, rec in _musique_records(path, data):
        paragraphs = _require(rec, "paragraphs", where)
        if not isinstance(paragraphs, list):
            raise where.error(f"field 'paragraphs' must be an array, got {_json_type(paragraphs)}")
        gold: list[str] = []
        n_supporting = 0
        for para in paragraphs:
            para = _require_dict(para, where)
            title = _str_value(para.get("title") or "", "title", where)
            text = _str_value(_require(para, "paragraph_text", where), "paragraph_text", where)
            supporting = bool(para.get("is_supporting", False))
            n_supporting += supporting
            if not text.strip():
                continue
            key = (title, text)
            pid = by_key.get(key)
            if pid is None:
                pid = str(len(passages))
                by_key[key] = pid
                passages.append(Passage(pid, title, text))
            if supporting and pid not in gold:
                gold.append(pid)
        if not with_questions:
            continue
        qid = _id_value(_require(rec, "id", where), "id", where)
        text = _str_value(_require(rec, "question", where), "question", where, nonempty=True)
        if qid in seen:
            first = seen[qid]
            at = f"line {first.line}" if first.line is not None else f"record {first.record}"
            raise where.error(f"duplicate id {qid!r} (first on {at})")
        seen[qid] = where
        if rec.get("answerable", True) is False:
            skipped["unanswerable"] = skipped.get("unanswerable", 0) + 1
            continue
        if not gold:
            skipped["no_gold"] = skipped.get("no_gold", 0) + 1
            continue
        meta = {
            k: v
            for k, v in rec.items()
            if k not in ("id", "question", "paragraphs", "answer", "answer_aliases")
        }
        if len(gold) < n_supporting:  # a supporting paragraph had empty text
            if not include_incomplete:
                skipped["gold_incomplete"] = skipped.get("gold_incomplete", 0) + 1
                continue
            meta["gold_complete"] = False
        answers = _answers(rec.get("answer"), "answer", where) + _answers(
            rec.get("answer_aliases"), "answer_aliases", where
        )
        answers = tuple(dict.fromkeys(answers))
        questions.append(Question(qid, text, tuple(gold), answers, meta))
    return passages, questions, skipped


# --------------------------------------------------------------------------- HippoRAG


def _hipporag_corpus(path: Path) -> list[Passage]:
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(_load_json_list(path)):
        where = _Where(path, record=i)
        rec = _require_dict(rec, where)
        title = _str_value(rec.get("title") or "", "title", where)
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        pid = _id_value(rec["idx"], "idx", where) if "idx" in rec else str(i)
        if pid in seen:
            raise where.error(f"duplicate id {pid!r} (first in record {seen[pid]})")
        seen[pid] = i
        meta = {k: v for k, v in rec.items() if k not in ("idx", "title", "text")}
        passages.append(Passage(pid, title, text, meta))
    return passages


# --------------------------------------------------------------------------- public API


def _chunk_all(passages: Iterable[Passage], chunk_words: int) -> Iterator[Passage]:
    overlap = chunk_words // 5
    for p in passages:
        if len(p.text.split()) > chunk_words:
            yield from chunk_document(
                p.id,
                p.title,
                p.text,
                max_words=chunk_words,
                overlap=overlap,
                metadata=p.metadata,
            )
        else:
            yield p


def _check_chunk_words(chunk_words: int | None) -> None:
    if chunk_words is not None and (
        isinstance(chunk_words, bool) or not isinstance(chunk_words, int) or chunk_words <= 0
    ):
        raise ValueError(f"chunk_words must be a positive integer, got {chunk_words!r}")


def _make_corpus(passages: list[Passage], source: Path) -> Corpus:
    return Corpus(passages, source=source)


def load_corpus(
    path: str | os.PathLike[str],
    *,
    chunk_words: int | None = None,
    fmt: str = "auto",
    report: dict[str, Any] | None = None,
) -> Corpus:
    """Load the passages at ``path`` (a file or folder in one of :data:`FORMATS`).

    ``fmt="auto"`` detects the format from the path. With ``chunk_words`` every passage
    longer than that many words is split by :func:`chunk_document` (overlap
    ``chunk_words // 5``); a ``text`` folder is always chunked (200 words by default).
    ``report``: a dict filled, for a folder of documents, with what reading it did and left
    out (:func:`hopgraph.corpus.documents.folder.new_report`).
    Raises :class:`CorpusError` for missing or malformed data, naming file and line.
    """
    _check_chunk_words(chunk_words)
    p = _resolve(path)
    kind, data = _format_of(p, fmt)
    if kind == "unified":
        _need_dir(p, kind)
        passages = list(_unified_corpus(p))
    elif kind == "beir":
        _need_dir(p, kind)
        passages = _beir_corpus(p)
    elif kind in ("hotpotqa", "2wiki"):
        passages, _ = _context_corpus(p, _load_json_list(p, data), kind)
    elif kind == "musique":
        passages, _, _ = _musique(p, data, with_questions=False, include_incomplete=True)
    elif kind == "hipporag":
        passages = _hipporag_corpus(p)
    elif kind == "passages":
        passages = list(_passages_file(_passages_path(p)))
    else:  # text: documents, chunked as they are read
        return _make_corpus(list(folder_passages(p, chunk_words, report)), p)
    if not passages:
        raise CorpusError("no passages", p)
    if chunk_words is not None:
        passages = list(_chunk_all(passages, chunk_words))
    return _make_corpus(passages, p)


def iter_corpus(
    path: str | os.PathLike[str],
    *,
    chunk_words: int | None = None,
    fmt: str = "auto",
    report: dict[str, Any] | None = None,
) -> Iterator[Passage]:
    """The passages :func:`load_corpus` would give, one at a time.

    The JSONL formats (``unified``, ``beir``'s corpus, ``passages``) are read line by line, so
    a corpus of any size streams in bounded memory (only the ids are kept, to refuse
    duplicates), and a folder of documents one document at a time; the other formats are read
    whole first. Raises :class:`CorpusError` as
    :func:`load_corpus` does (an empty corpus when the iteration ends without a passage).
    """
    _check_chunk_words(chunk_words)
    p = _resolve(path)
    kind, _ = _format_of(p, fmt)
    if kind == "unified":
        _need_dir(p, kind)
        passages: Iterable[Passage] = _unified_corpus(p)
    elif kind == "passages":
        passages = _passages_file(_passages_path(p))
    elif kind == "text":
        passages = folder_passages(p, chunk_words, report)  # chunked as they are read
    else:
        yield from load_corpus(p, chunk_words=chunk_words, fmt=fmt)
        return
    if chunk_words is not None and kind != "text":
        passages = _chunk_all(passages, chunk_words)
    seen: set[str] = set()
    for passage in passages:
        if passage.id in seen:  # a chunk id colliding with another passage's id
            raise CorpusError(f"duplicate passage id {passage.id!r}", p)
        seen.add(passage.id)
        yield passage
    if not seen:
        raise CorpusError("no passages", p)


def load_dataset(
    path: str | os.PathLike[str],
    *,
    split: str = "test",
    include_incomplete: bool = False,
    fmt: str = "auto",
) -> Dataset:
    """Load a corpus with its questions and gold passages.

    ``split`` picks ``qrels/{split}.tsv`` of a BEIR folder, and the questions file of a
    unified folder: ``questions.jsonl`` for "test" (the default), else
    ``questions_{split}.jsonl``; a missing split raises :class:`CorpusError` listing the
    splits present. It is ignored for the other formats.
    Questions whose gold passages are known to be incomplete are left out (and counted in
    ``Dataset.skipped["gold_incomplete"]``) unless ``include_incomplete`` is true. The
    dataset is named after the folder or file stem. ``hipporag`` and ``text`` sources hold
    no questions and raise :class:`CorpusError`, as does any malformed data.
    """
    p = _resolve(path)
    kind, data = _format_of(p, fmt)
    name = p.name if p.is_dir() else p.stem
    skipped: dict[str, int]
    if kind == "unified":
        _need_dir(p, kind)
        _unified_questions_path(p, split)  # fail before reading the corpus
        passages = list(_unified_corpus(p))
        questions, skipped = _unified_questions(
            p, {q.id for q in passages}, include_incomplete, split
        )
    elif kind == "beir":
        _need_dir(p, kind)
        _need_file(p, "queries.jsonl")
        _qrels_file(p, split)
        passages = _beir_corpus(p)
        questions, skipped = _beir_questions(p, {q.id for q in passages}, split)
    elif kind in ("hotpotqa", "2wiki"):
        records = _load_json_list(p, data)
        passages, titles = _context_corpus(p, records, kind)
        questions, skipped = _context_questions(p, records, titles, kind, include_incomplete)
    elif kind == "musique":
        passages, questions, skipped = _musique(
            p, data, with_questions=True, include_incomplete=include_incomplete
        )
    elif kind == "hipporag":
        hint = ""
        stem = p.name[: -len("_corpus.json")] if p.name.endswith("_corpus.json") else ""
        if stem and (p.parent / f"{stem}.json").is_file():
            hint = f"; its questions may be in {p.parent / (stem + '.json')}"
        raise CorpusError(f"a HippoRAG corpus file holds no questions{hint}", p)
    elif kind == "passages":
        raise CorpusError("a file of passages holds no questions", _passages_path(p))
    else:
        raise CorpusError("a folder of documents holds no questions", p)
    if not passages:
        raise CorpusError("no passages", p)
    return Dataset(name, _make_corpus(passages, p), questions, skipped)
