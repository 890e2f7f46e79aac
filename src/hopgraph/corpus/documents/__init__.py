"""Documents in any format turned into passages: PDF, HTML, DOCX, Markdown and plain text.

A document is read into a title and *sections* (a PDF page, the text under a heading), and each
section is cut by :func:`~hopgraph.corpus.chunking.chunk_document`; the chunks of a document are
then numbered in order across its sections. Every passage keeps where it came from:

``doc_id``
    The document's id (its path relative to the folder; see :func:`document_passages`).
``chunk``
    The passage's number in its document, from 0 (adjacent chunks are neighbours in the
    ``links`` part).
``source``
    The file's path relative to the folder, with ``/`` separators.
``page``
    PDF: the 1-based page the passage comes from.
``heading``
    Markdown, HTML and DOCX: the path of headings above the passage, e.g. ``"Install > Linux"``
    (absent before the first heading).

The format is recognised by the file's content first (:func:`sniff`: ``%PDF-``, a zip holding
``word/document.xml``, an HTML start), then by its suffix (:data:`SUFFIXES`). The title is the
document's own (PDF metadata, else page 1's largest type; HTML ``<title>``, else the first
``h1``; DOCX core properties; the first Markdown H1), else the file stem.

The parsers are the optional packages of ``hopgraph[docs]`` (pypdf, lxml, python-docx,
markdown-it-py), imported only when a file needs one. A file that cannot be parsed (a corrupt
or encrypted PDF, a broken DOCX) raises :class:`~hopgraph.errors.CorpusError` naming it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.documents.base import (
    BOM,
    HEAD_BYTES,
    Document,
    Section,
    decode_utf8,
    read_bytes,
    read_error,
)
from hopgraph.corpus.passage import Passage
from hopgraph.errors import CorpusError

__all__ = [
    "BOM",
    "KINDS",
    "SUFFIXES",
    "Document",
    "Section",
    "decode_utf8",
    "document_kind",
    "document_passages",
    "read_bytes",
    "read_document",
    "read_error",
    "sniff",
]

#: (markdown-it-py) and plain text (no package).
KINDS = ("pdf", "html", "docx", "markdown", "text")

#: The kind a suffix stands for when the content does not tell (:func:`sniff`).
SUFFIXES: dict[str, str] = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
}


def sniff(path: Path, head: bytes | None = None) -> str | None:
    """The kind of ``path`` told by its content (``pdf``, ``docx`` or ``html``), or None.

    ``head``: the file's first bytes, if already read. A file that cannot be read is None
    (the reader names the problem)."""
    if head is None:
        try:
            with path.open("rb") as f:
                head = f.read(HEAD_BYTES)
        except OSError:
            return None
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
        except (OSError, zipfile.BadZipFile, ValueError):
            return None
        return "docx" if "word/document.xml" in names else None
    h = head[:HEAD_BYTES].removeprefix(BOM).lstrip().lower()
    if h.startswith((b"<!doctype html", b"<html")):
        return "html"
    # An XML declaration or a comment before <html ...>
    if h.startswith(b"<") and b"<html" in h:
        return "html"
    return None


def document_kind(path: Path) -> str | None:
    """The kind of document ``path`` holds (one of :data:`KINDS`), by content, else by suffix;
    None for a file that is no document hopgraph reads."""
    return sniff(path) or SUFFIXES.get(path.suffix.lower())


# --------------------------------------------------------------------------- parsers


_WHAT = {"pdf": "PDF files", "html": "HTML files", "docx": "DOCX files", "markdown": "Markdown"}


def read_document(path: str | Path, kind: str | None = None) -> Document:
    """Parse the document at ``path`` (``kind`` as :func:`document_kind` tells, by default).

    Raises :class:`CorpusError` naming the file when it cannot be read or parsed, or when the
    package its kind needs is missing (``pip install 'hopgraph[docs]'``)."""
    path = Path(path)
    kind = kind or document_kind(path)
    if kind is None:
        raise CorpusError(f"not a document hopgraph reads ({', '.join(SUFFIXES)})", path)
    if kind not in KINDS:
        raise ValueError(f"unknown document kind {kind!r}; choose one of: {', '.join(KINDS)}")
    if kind == "pdf":
        from hopgraph.corpus.documents.pdf import read_pdf

        return read_pdf(path)
    if kind == "docx":
        from hopgraph.corpus.documents.word import read_docx

        return read_docx(path)
    data = read_bytes(path)
    if kind == "html":
        from hopgraph.corpus.documents.html import read_html

        return read_html(path, data)
    text = decode_utf8(data, path)
    if kind == "markdown":
        from hopgraph.corpus.documents.markdown import markdown_sections

        return markdown_sections(text, path)
    return Document(None, [Section(text.strip())] if text.strip() else [])


# --------------------------------------------------------------------------- passages


def document_passages(
    doc_id: str,
    document: Document,
    *,
    title: str,
    max_words: int = 200,
    overlap: int = 40,
    metadata: dict[str, Any] | None = None,
) -> list[Passage]:
    """The passages of ``document``: each section cut by :func:`chunk_document`, the chunks
    numbered across the document. A document of one passage gives it the id ``doc_id``; else
    the ids are ``f"{doc_id}#{n}"``. Every passage has metadata ``doc_id``, ``chunk``, then
    ``metadata``, then its section's (``page``, ``heading``). No passage for a document without
    text."""
    extra = dict(metadata or {})
    chunks: list[tuple[str, dict[str, Any]]] = []
    for section in document.sections:
        text = section.text.strip()
        if not text:
            continue
        meta = {**extra, **section.metadata}
        for p in chunk_document(
            doc_id, title, text, max_words=max_words, overlap=overlap, metadata=meta
        ):
            chunks.append((p.text, meta))
    single = len(chunks) == 1
    return [
        Passage(
            doc_id if single else f"{doc_id}#{n}",
            title,
            text,
            {"doc_id": doc_id, "chunk": n, **meta},
        )
        for n, (text, meta) in enumerate(chunks)
    ]
