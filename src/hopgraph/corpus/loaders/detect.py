"""Telling a path's format: the names of :data:`FORMATS`, and the rules of ``fmt="auto"``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents import document_kind
from hopgraph.corpus.documents.folder import visible_files as _visible_files
from hopgraph.corpus.loaders.records import _first_jsonl_record, _load_json
from hopgraph.errors import ConfigError, CorpusError

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
