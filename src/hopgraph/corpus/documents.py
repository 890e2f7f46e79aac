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
document's own (PDF metadata, HTML ``<title>``, DOCX core properties, the first Markdown H1),
else the file stem.

The parsers are the optional packages of ``hopgraph[docs]`` (pypdf, trafilatura, python-docx,
markdown-it-py), imported only when a file needs one. A file that cannot be parsed (a corrupt
or encrypted PDF, a broken DOCX) raises :class:`~hopgraph.errors.CorpusError` naming it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.corpus.chunking import chunk_document
from hopgraph.corpus.passage import Passage
from hopgraph.errors import CorpusError

__all__ = [
    "KINDS",
    "SUFFIXES",
    "Document",
    "Section",
    "document_kind",
    "document_passages",
    "read_document",
    "sniff",
]

log = logging.getLogger("hopgraph.corpus")

#: The kinds of document read: PDF (pypdf), HTML (trafilatura), DOCX (python-docx), Markdown
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

_INSTALL = "pip install 'hopgraph[docs]'"
BOM = b"\xef\xbb\xbf"
_HEAD_BYTES = 1024


@dataclass(frozen=True)
class Section:
    """A piece of a document read as one: a PDF page, the text under a heading. ``metadata``
    (``page``, ``heading``) goes to every passage cut from it."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    """A parsed document: its own title (None when it has none) and its sections in order."""

    title: str | None
    sections: list[Section]


# --------------------------------------------------------------------------- reading


def read_error(exc: OSError, path: Path) -> CorpusError:
    """The CorpusError for a file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return CorpusError("no such file", path)
    if isinstance(exc, IsADirectoryError):
        return CorpusError("expected a file, found a folder", path)
    return CorpusError(f"cannot read: {exc.strerror or exc}", path)


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``; CorpusError naming it when it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise read_error(e, path) from None


def decode_utf8(data: bytes, path: Path) -> str:
    """UTF-8 decode; an error names the line and column. A leading BOM is dropped."""
    skip = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        pos = e.start + skip
        line = data.count(b"\n", 0, pos) + 1
        col = pos - (data.rfind(b"\n", 0, pos) + 1) + 1
        raise CorpusError(
            f"not valid UTF-8 (byte 0x{data[pos]:02x} at column {col})", path, line
        ) from None


# --------------------------------------------------------------------------- recognising


def sniff(path: Path, head: bytes | None = None) -> str | None:
    """The kind of ``path`` told by its content (``pdf``, ``docx`` or ``html``), or None.

    ``head``: the file's first bytes, if already read. A file that cannot be read is None
    (the reader names the problem)."""
    if head is None:
        try:
            with path.open("rb") as f:
                head = f.read(_HEAD_BYTES)
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
    h = head[:_HEAD_BYTES].removeprefix(BOM).lstrip().lower()
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


def _import(module: str, kind: str, path: Path) -> Any:
    """Import the optional package ``module`` to read a ``kind`` file; a missing one names the
    extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = {"docx": "python-docx", "markdown_it": "markdown-it-py"}.get(module, module)
        raise CorpusError(
            f"reading {_WHAT[kind]} needs {package}, which cannot be imported ({e}): {_INSTALL}",
            path,
        ) from None


@contextlib.contextmanager
def _quiet(logger_name: str, level: int = logging.ERROR) -> Iterator[None]:
    """Hold back a parser's own log lines below ``level`` (pypdf warns "EOF marker not found"
    and the like for files it then fails on, or reads anyway): hopgraph says what matters."""
    logger = logging.getLogger(logger_name)
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _clean_title(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    title = " ".join(value.split())
    return title or None


def _read_pdf(path: Path) -> Document:
    pypdf = _import("pypdf", "pdf", path)
    sections: list[Section] = []
    with _quiet("pypdf"):
        try:
            reader = pypdf.PdfReader(str(path))
            if reader.is_encrypted and not reader.decrypt(""):
                raise CorpusError("the PDF is encrypted (it needs a password)", path)
            try:
                title = _clean_title(reader.metadata.title if reader.metadata else None)
            except Exception:  # a broken info dictionary: no title, the text may still be fine
                title = None
            for number, page in enumerate(reader.pages, 1):
                text = page.extract_text() or ""
                if text.strip():
                    sections.append(Section(text, {"page": number}))
        except CorpusError:
            raise
        except pypdf.errors.FileNotDecryptedError:
            raise CorpusError("the PDF is encrypted (it needs a password)", path) from None
        except Exception as e:  # pypdf raises many kinds on a damaged file
            raise CorpusError(f"cannot read this PDF ({type(e).__name__}: {e})", path) from None
    return Document(title, sections)


def _read_docx(path: Path) -> Document:
    docx = _import("docx", "docx", path)
    try:
        doc = docx.Document(str(path))
        title = _clean_title(doc.core_properties.title)
        blocks = [_docx_block(b) for b in doc.iter_inner_content()]
    except Exception as e:  # a zip that is no Word document, a damaged part
        raise CorpusError(f"cannot read this DOCX ({type(e).__name__}: {e})", path) from None
    sections: list[Section] = []
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    body = False

    def flush() -> None:
        if body:
            sections.append(Section("\n\n".join(lines), _heading_meta(headings)))

    for style, text in blocks:
        if not text.strip():
            continue
        level = _docx_heading_level(style)
        if level is not None:
            flush()
            lines, body = [text], False
            _push_heading(headings, level, text)
            continue
        if title is None and style == "Title":
            title = _clean_title(text)
        lines.append(text)
        body = True
    flush()
    if not sections and any(text.strip() for _, text in blocks):  # headings only
        text = "\n\n".join(t for _, t in blocks if t.strip())
        sections.append(Section(text))
    return Document(title, sections)


def _docx_block(block: Any) -> tuple[str, str]:
    """(style name, text) of a paragraph; a table is its rows, cells joined by " | "."""
    if hasattr(block, "rows"):  # a table
        rows = []
        for row in block.rows:
            cells: list[str] = []
            for cell in row.cells:
                text = " ".join(cell.text.split())
                if not cells or cells[-1] != text:  # a merged cell repeats its text
                    cells.append(text)
            if any(cells):
                rows.append(" | ".join(cells))
        return "", "\n".join(rows)
    style = block.style.name if block.style is not None else ""
    return style or "", block.text


_DOCX_HEADING = re.compile(r"heading ([1-9])", re.IGNORECASE)


def _docx_heading_level(style: str) -> int | None:
    m = _DOCX_HEADING.fullmatch(style)
    return int(m.group(1)) if m else None


def _push_heading(headings: list[tuple[int, str]], level: int, text: str) -> None:
    while headings and headings[-1][0] >= level:
        headings.pop()
    headings.append((level, " ".join(text.split())))


def _heading_meta(headings: list[tuple[int, str]]) -> dict[str, Any]:
    return {"heading": " > ".join(t for _, t in headings)} if headings else {}


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


def _markdown_sections(text: str, path: Path, kind: str = "markdown") -> Document:
    """Split Markdown by its (top-level) headings: each section is a heading's line(s) and the
    text under it, with the heading path; text before the first heading has none. The title is
    the first H1 (or a YAML front matter ``title:``)."""
    markdown_it = _import("markdown_it", kind, path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    title = None
    m = _FRONT_MATTER.match(text)
    if m:
        t = _FRONT_TITLE.search(m.group(1))
        if t:
            title = _clean_title(t.group(1).strip("'\""))
        text = "\n" * m.group(0).count("\n") + text[m.end() :]  # keep the line numbers
    tokens = markdown_it.MarkdownIt("commonmark").parse(text)
    lines = text.split("\n")
    # (first line, last line + 1, level, heading text) of each top-level heading
    heads: list[tuple[int, int, int, str]] = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            inline = tokens[i + 1] if i + 1 < len(tokens) else None
            words = "".join(
                c.content for c in (inline.children or []) if c.type in ("text", "code_inline")
            ) if inline is not None else ""  # fmt: skip
            heads.append((tok.map[0], tok.map[1], int(tok.tag[1:]), " ".join(words.split())))
    if title is None:
        title = next((h[3] for h in heads if h[2] == 1 and h[3]), None)
    sections: list[Section] = []
    headings: list[tuple[int, str]] = []
    starts = [h[0] for h in heads] + [len(lines)]
    preamble = "\n".join(lines[: starts[0]]).strip()
    if preamble:
        sections.append(Section(preamble))
    for n, (first, after, level, words) in enumerate(heads):
        _push_heading(headings, level, words)
        body = "\n".join(lines[after : starts[n + 1]]).strip()
        if body:  # a heading with nothing under it lives on in its children's heading path
            section = "\n".join(lines[first : starts[n + 1]]).strip()
            sections.append(Section(section, _heading_meta(headings)))
    if not sections and text.strip():  # headings only
        sections.append(Section(text.strip()))
    return Document(title, sections)


def _html_title(data: bytes) -> str | None:
    """The text of ``<title>``; None when there is none."""
    import lxml.html  # trafilatura's own dependency

    try:  # UTF-8 unless the page says otherwise (lxml's default for bytes is Latin-1)
        source: str | bytes = data.decode("utf-8")
    except UnicodeDecodeError:
        source = data
    for src in (source, data):
        try:
            return _clean_title(lxml.html.document_fromstring(src).findtext(".//title"))
        except ValueError:  # a str with an encoding declaration: lxml wants the bytes
            continue
        except Exception:  # nothing parsable: no title
            return None
    return None


def _read_html(path: Path, data: bytes) -> Document:
    trafilatura = _import("trafilatura", "html", path)
    page = data
    if b"<html" not in data[:_HEAD_BYTES].lower():  # a fragment: trafilatura wants a page
        page = b"<html><body>" + data + b"</body></html>"
    try:
        with _quiet("trafilatura", logging.CRITICAL):  # it logs an ERROR for an empty page
            text = trafilatura.extract(
                page, output_format="markdown", include_comments=False, include_tables=True
            ) or trafilatura.extract(  # too little for the main-text heuristics: all of it
                page, output_format="markdown", include_tables=True, favor_recall=True
            ) or trafilatura.html2txt(page)  # fmt: skip
    except Exception as e:
        raise CorpusError(f"cannot read this HTML ({type(e).__name__}: {e})", path) from None
    doc = _markdown_sections(text or "", path, "html")
    return Document(_html_title(data) or doc.title, doc.sections)


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
        return _read_pdf(path)
    if kind == "docx":
        return _read_docx(path)
    data = read_bytes(path)
    if kind == "html":
        return _read_html(path, data)
    text = decode_utf8(data, path)
    if kind == "markdown":
        return _markdown_sections(text, path)
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
