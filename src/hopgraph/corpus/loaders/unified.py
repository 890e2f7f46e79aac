"""hopgraph's own JSONL formats: a ``unified`` folder (``corpus.jsonl`` with its questions
files, one per split) and a ``passages`` file (an index's ``passages.jsonl``). Both are read line
by line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from hopgraph.corpus.loaders.records import (
    SkippedPassages,
    _answers,
    _id_value,
    _iter_jsonl,
    _json_type,
    _need_file,
    _require,
    _skipped_empty,
    _str_value,
    _Where,
)
from hopgraph.corpus.passage import Passage, Question
from hopgraph.errors import ConfigError, CorpusError

# --------------------------------------------------------------------------- unified


def _unified_corpus(folder: Path, skip_bad: SkippedPassages | None = None) -> Iterator[Passage]:
    path = _need_file(folder, "corpus.jsonl")
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path, skip_bad):
        where = _Where(path, lineno)
        pid = _id_value(_require(rec, "idx", where), "idx", where)
        title = _str_value(_require(rec, "title", where), "title", where)
        if _skipped_empty(_require(rec, "text", where), where, skip_bad):
            continue
        text = _str_value(_require(rec, "text", where), "text", where, nonempty=True)
        if pid in seen:
            raise where.error(f"duplicate idx {pid} (first on line {seen[pid]})")
        seen[pid] = lineno
        meta = {k: v for k, v in rec.items() if k not in ("idx", "title", "text")}
        yield Passage(pid, title, text, meta)


def _passages_path(path: Path) -> Path:
    """The passages file: ``path``, or a folder's ``corpus.jsonl``."""
    return _need_file(path, "corpus.jsonl") if path.is_dir() else path


def _passages_file(path: Path, skip_bad: SkippedPassages | None = None) -> Iterator[Passage]:
    """A .jsonl of passages: ``id`` (or ``idx``), ``text``, optional ``title`` and ``metadata``
    (other fields go to the metadata too)."""
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path, skip_bad):
        where = _Where(path, lineno)
        key = "id" if "id" in rec else "idx"
        pid = _id_value(_require(rec, key, where), key, where)
        title = _str_value(rec.get("title", ""), "title", where)
        if _skipped_empty(_require(rec, "text", where), where, skip_bad):
            continue
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
