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
where there is one, the 1-based line. With ``skip_bad`` (a :class:`SkippedPassages`), the JSONL
corpora (``unified``, ``beir``, ``passages``) skip a line that is not UTF-8 and a passage whose
text is empty instead, counting them by file and line there (``hopgraph index --skip-bad``,
for large dumps); every other problem still stops.

This module holds the entry points and the dispatch on the format; the readers are its
submodules: :mod:`~hopgraph.corpus.loaders.detect` (``fmt="auto"``),
:mod:`~hopgraph.corpus.loaders.unified` (``unified``, ``passages``),
:mod:`~hopgraph.corpus.loaders.beir`, :mod:`~hopgraph.corpus.loaders.multihop` (``hotpotqa``,
``2wiki``, ``musique``, ``hipporag``) and :mod:`~hopgraph.corpus.loaders.records` (reading
JSON and checking fields, shared by all); ``text`` is :mod:`hopgraph.corpus.documents.folder`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.documents.folder import folder_passages
from hopgraph.corpus.loaders.beir import _beir_corpus, _beir_questions, _qrels_file
from hopgraph.corpus.loaders.detect import FORMATS, _format_of, _resolve, detect_format
from hopgraph.corpus.loaders.multihop import (
    _context_corpus,
    _context_questions,
    _hipporag_corpus,
    _musique,
)
from hopgraph.corpus.loaders.records import SkippedPassages, _load_json_list, _need_dir, _need_file
from hopgraph.corpus.loaders.records import _id_value as _id_value
from hopgraph.corpus.loaders.records import _require as _require
from hopgraph.corpus.loaders.records import _require_dict as _require_dict
from hopgraph.corpus.loaders.records import _str_value as _str_value
from hopgraph.corpus.loaders.records import _Where as _Where
from hopgraph.corpus.loaders.unified import (
    _passages_file,
    _passages_path,
    _unified_corpus,
    _unified_questions,
    _unified_questions_path,
)
from hopgraph.corpus.loaders.unified import unified_questions_file as unified_questions_file
from hopgraph.corpus.passage import Corpus, Dataset, Passage
from hopgraph.errors import ConfigError, CorpusError

__all__ = [
    "FORMATS",
    "SkippedPassages",
    "detect_format",
    "iter_corpus",
    "load_corpus",
    "load_dataset",
]
SKIPPING_FORMATS = ("unified", "beir", "passages", "text")
"""The formats ``skip_bad`` applies to (a folder of documents always skips and reports the
documents it cannot read)."""

# The record helpers and unified_questions_file are re-exported (``as``) for
# hopgraph.corpus.convert, which imports them from this package.

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


def _check_skip(kind: str, skip_bad: SkippedPassages | None, path: Path) -> None:
    if skip_bad is not None and kind not in SKIPPING_FORMATS:
        raise ConfigError(
            f"skipping bad passages works on the JSONL corpora (unified, beir, passages); "
            f"{path} is {kind}, read whole: fix the file, or convert it with `hopgraph convert`"
        )


def _make_corpus(passages: list[Passage], source: Path) -> Corpus:
    return Corpus(passages, source=source)


def load_corpus(
    path: str | os.PathLike[str],
    *,
    chunk_words: int | None = None,
    fmt: str = "auto",
    report: dict[str, Any] | None = None,
    skip_bad: SkippedPassages | None = None,
) -> Corpus:
    """Load the passages at ``path`` (a file or folder in one of :data:`FORMATS`).

    ``fmt="auto"`` detects the format from the path. With ``chunk_words`` every passage
    longer than that many words is split by :func:`chunk_document` (overlap
    ``chunk_words // 5``); a ``text`` folder is always chunked (200 words by default).
    ``report``: a dict filled, for a folder of documents, with what reading it did and left
    out (:func:`hopgraph.corpus.documents.folder.new_report`). ``skip_bad``: skip (and count
    there) the lines that are not UTF-8 and the passages with empty text of a JSONL corpus.
    Raises :class:`CorpusError` for missing or malformed data, naming file and line.
    """
    _check_chunk_words(chunk_words)
    p = _resolve(path)
    kind, data = _format_of(p, fmt)
    _check_skip(kind, skip_bad, p)
    if kind == "unified":
        _need_dir(p, kind)
        passages = list(_unified_corpus(p, skip_bad))
    elif kind == "beir":
        _need_dir(p, kind)
        passages = _beir_corpus(p, skip_bad)
    elif kind in ("hotpotqa", "2wiki"):
        passages, _ = _context_corpus(p, _load_json_list(p, data), kind)
    elif kind == "musique":
        passages, _, _ = _musique(p, data, with_questions=False, include_incomplete=True)
    elif kind == "hipporag":
        passages = _hipporag_corpus(p)
    elif kind == "passages":
        passages = list(_passages_file(_passages_path(p), skip_bad))
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
    skip_bad: SkippedPassages | None = None,
) -> Iterator[Passage]:
    """The passages :func:`load_corpus` would give, one at a time (``skip_bad`` as there).

    The JSONL formats (``unified``, ``beir``'s corpus, ``passages``) are read line by line, so
    a corpus of any size streams in bounded memory (only the ids are kept, to refuse
    duplicates), and a folder of documents one document at a time; the other formats are read
    whole first. Raises :class:`CorpusError` as
    :func:`load_corpus` does (an empty corpus when the iteration ends without a passage).
    """
    _check_chunk_words(chunk_words)
    p = _resolve(path)
    kind, _ = _format_of(p, fmt)
    _check_skip(kind, skip_bad, p)
    if kind == "unified":
        _need_dir(p, kind)
        passages: Iterable[Passage] = _unified_corpus(p, skip_bad)
    elif kind == "passages":
        passages = _passages_file(_passages_path(p), skip_bad)
    elif kind == "text":
        passages = folder_passages(p, chunk_words, report)  # chunked as they are read
    else:
        yield from load_corpus(p, chunk_words=chunk_words, fmt=fmt, skip_bad=skip_bad)
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
