"""BEIR folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/{split}.tsv``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hopgraph.corpus.documents import decode_utf8 as _decode
from hopgraph.corpus.documents import read_bytes as _read_bytes
from hopgraph.corpus.loaders.records import (
    SkippedPassages,
    _id_value,
    _iter_jsonl,
    _need_file,
    _require,
    _skipped_empty,
    _str_value,
    _Where,
)
from hopgraph.corpus.passage import Passage, Question
from hopgraph.errors import CorpusError

# --------------------------------------------------------------------------- BEIR


def _beir_corpus(folder: Path, skip_bad: SkippedPassages | None = None) -> list[Passage]:
    path = _need_file(folder, "corpus.jsonl")
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for lineno, rec in _iter_jsonl(path, skip_bad):
        where = _Where(path, lineno)
        pid = _id_value(_require(rec, "_id", where), "_id", where)
        title = rec.get("title") or ""
        title = _str_value(title, "title", where)
        if _skipped_empty(_require(rec, "text", where), where, skip_bad):
            continue
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
