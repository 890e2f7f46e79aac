"""A folder of documents (or one document file) read into passages, one document at a time.

Documents are read in the order of their relative paths (hidden files and folders left out);
each becomes passages by :func:`~hopgraph.corpus.documents.document_passages`, cut at
``chunk_words`` words (:data:`DEFAULT_CHUNK_WORDS` by default) with a fifth of that as overlap:
neighbouring chunks share those words, so a sentence cut at a chunk's end is whole in the next
one and a question about it matches either.

Before any page is parsed, the ``<title>`` of every HTML page is read off its first bytes, and
the part most of them share (the site's name, :mod:`~hopgraph.corpus.documents.titles`) is
taken off every page's title.

``report``, when given, is filled with what the reading did (:func:`new_report`): documents
read, passages made, and what was left out and why (the readers' :attr:`Document.dropped`,
documents without text), so that an index can say it (``hopgraph info``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents import document_kind, document_passages, read_document
from hopgraph.corpus.documents.base import DROPPED, HEAD_BYTES
from hopgraph.corpus.documents.html import html_title
from hopgraph.corpus.documents.titles import shared_affix, strip_affix
from hopgraph.corpus.passage import Passage
from hopgraph.errors import CorpusError

__all__ = [
    "DEFAULT_CHUNK_WORDS",
    "describe_report",
    "folder_passages",
    "new_report",
    "visible_files",
]

log = logging.getLogger("hopgraph.corpus")

#: Words per passage of a document when ``chunk_words`` is not given.
DEFAULT_CHUNK_WORDS = 200
_PLAIN_SUFFIXES = (".txt", ".md", ".markdown")  # a document id without the suffix
_TITLE_BYTES = 16 * HEAD_BYTES  # a <title> lies in the page's head
_WHOLE = {"contents_pages", "navigation_pages"}  # pages a reader leaves out whole


def visible_files(folder: Path, *, ordered: bool) -> Iterator[Path]:
    """The files under ``folder``, hidden ones (any part of the path starting with '.') left
    out; sorted by relative path when ``ordered``."""
    paths = folder.rglob("*")
    if ordered:
        paths = sorted(paths, key=lambda p: p.relative_to(folder).as_posix())
    for p in paths:
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        if p.is_file():
            yield p


def document_id(rel: Path) -> str:
    """A document's id: its path relative to the folder, without the suffix of a text or
    Markdown file (the ids text folders have always had)."""
    return (rel.with_suffix("") if rel.suffix.lower() in _PLAIN_SUFFIXES else rel).as_posix()


def new_report() -> dict[str, Any]:
    """An empty reading report: ``documents`` (files read), ``passages``, ``dropped`` (reason →
    ``{"count", "what"}``) and ``titles`` (folder → the site's ``prefix``/``suffix`` taken off
    the HTML titles under it)."""
    return {"documents": 0, "passages": 0, "dropped": {}, "titles": {}}


def describe_report(report: dict[str, Any]) -> str:
    """One line saying what a reading did: documents, passages, what was dropped and why."""
    line = f"read {report['documents']} documents into {report['passages']} passages"
    dropped = [f"{d['count']} {why.replace('_', ' ')}" for why, d in report["dropped"].items()]
    if dropped:
        line += "; left out: " + ", ".join(dropped)
    for folder, affix in (report.get("titles") or {}).items():
        shared = " / ".join(repr(a.strip()) for a in (affix["prefix"], affix["suffix"]) if a)
        line += f"; the site's title part {shared} taken off in {folder}"
    return line


def _count(report: dict[str, Any], reason: str, n: int) -> None:
    if n:
        entry = report["dropped"].setdefault(reason, {"count": 0, "what": DROPPED.get(reason, "")})
        entry["count"] += n


def _html_affixes(files: list[tuple[Path, str]], root: Path) -> dict[str, tuple[Any, Any]]:
    """The site's ``(prefix, suffix)`` by folder (relative path, ``"."`` for ``root``): those
    that more than half of the HTML titles under the folder share, for every folder holding
    HTML pages (a folder of two sites finds each site's in its own subfolder)."""
    titles: dict[Path, str | None] = {}
    for f, kind in files:
        if kind != "html":
            continue
        try:
            with f.open("rb") as fh:
                titles[f.relative_to(root)] = html_title(fh.read(_TITLE_BYTES))
        except OSError:  # the reader names the problem when it gets there
            continue
    under: dict[Path, list[str | None]] = {}  # folder -> the titles of the pages under it
    for rel, title in titles.items():
        for parent in rel.parents:
            under.setdefault(parent, []).append(title)
    affixes = {}
    for folder in sorted(under, key=lambda d: len(d.parts)):
        found = shared_affix(under[folder])
        inherited = [affixes.get(d.as_posix()) for d in folder.parents]
        if (found[0] or found[1]) and found not in inherited:  # a subfolder of the site: its own
            affixes[folder.as_posix()] = found
    return affixes


def _site_title(title: str, rel: Path, affixes: dict[str, tuple[Any, Any]]) -> str:
    """``title`` without the affix of the outermost folder above ``rel`` whose affix it has."""
    for folder in reversed(rel.parents):  # from the root down
        prefix, suffix = affixes.get(folder.as_posix(), (None, None))
        stripped = strip_affix(title, prefix, suffix)
        if stripped != title:
            return stripped
    return title


def folder_passages(
    path: Path, chunk_words: int | None, report: dict[str, Any] | None = None
) -> Iterator[Passage]:
    """The passages of the folder (or document file) ``path``; see the module's docstring.

    A document without text is skipped with a warning (logger ``hopgraph.corpus``); a folder
    with no document, or whose documents all lack text, raises :class:`CorpusError`."""
    report = new_report() if report is None else report
    max_words = chunk_words or DEFAULT_CHUNK_WORDS
    overlap = max_words // 5
    if path.is_dir():
        root, candidates = path, visible_files(path, ordered=True)
    else:
        root, candidates = path.parent, iter([path])
    # a file given alone is read as text when nothing tells its kind (--format text)
    files = [(f, kind) for f in candidates if (kind := document_kind(f) or _alone(f, path))]
    affixes = _html_affixes(files, root)
    report["titles"] = {d: {"prefix": p, "suffix": x} for d, (p, x) in affixes.items()}
    owners: dict[str, Path] = {}
    empty: list[Path] = []
    for f, kind in files:
        rel = f.relative_to(root)
        doc_id = document_id(rel)
        if doc_id in owners:
            raise CorpusError(f"document id {doc_id!r} also comes from {owners[doc_id]}", f)
        owners[doc_id] = f
        doc = read_document(f, kind)
        report["documents"] += 1
        for reason, n in doc.dropped.items():
            _count(report, reason, n)
        title = doc.title or f.stem
        if kind == "html":
            title = _site_title(title, rel, affixes)
        meta: dict[str, Any] = {"source": rel.as_posix()}
        if kind in ("text", "markdown"):
            meta["path"] = rel.as_posix()  # the key text folders had before "source"
        passages = document_passages(
            doc_id, doc, title=title, max_words=max_words, overlap=overlap, metadata=meta
        )
        if not passages:
            if not _WHOLE.intersection(doc.dropped):  # boilerplate left out whole: counted
                hint = " (a scanned PDF needs OCR first)" if kind == "pdf" else ""
                log.warning("%s: skipped: the document has no text%s", f, hint)
                _count(report, "empty_documents", 1)
            empty.append(f)
            continue
        report["passages"] += len(passages)
        yield from passages
    if not owners:
        raise CorpusError(
            "no documents in this folder (no .txt or .md files, nor .pdf, .html/.htm or .docx)",
            path,
        )
    if not report["passages"]:
        others = f", as have the other {len(empty) - 1} documents" if len(empty) > 1 else ""
        raise CorpusError(f"empty text{others}: no passages", empty[0])


def _alone(f: Path, given: Path) -> str | None:
    return "text" if f == given else None
