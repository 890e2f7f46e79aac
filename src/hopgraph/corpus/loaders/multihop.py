"""The raw multi-hop QA sets: HotpotQA and 2WikiMultiHopQA ``.json`` (``context`` +
``supporting_facts``), MuSiQue ``.jsonl``/``.json`` (records with ``paragraphs``) and
HippoRAG's ``*_corpus.json`` (a list of title/text, corpus only)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hopgraph.corpus.loaders.records import (
    _answers,
    _id_value,
    _iter_jsonl,
    _json_type,
    _load_json_list,
    _require,
    _require_dict,
    _str_value,
    _Where,
)
from hopgraph.corpus.passage import Passage, Question

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
