"""What every document reader shares: the parsed document, reading files, optional parsers."""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hopgraph.errors import CorpusError

INSTALL = "pip install 'hopgraph[docs]'"
BOM = b"\xef\xbb\xbf"
HEAD_BYTES = 1024
_WHAT = {"pdf": "PDF files", "html": "HTML files", "docx": "DOCX files", "markdown": "Markdown"}


@dataclass(frozen=True)
class Section:
    """A piece of a document read as one: a PDF page, the text under a heading. ``metadata``
    (``page``, ``heading``) goes to every passage cut from it."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Document:
    """A parsed document: its own title (None when it has none) and its sections in order.

    ``dropped``: what the reader left out as boilerplate, counted by reason (see
    :data:`DROPPED`), e.g. ``{"contents_pages": 3, "running_lines": 120}``; the loader sums
    them over a folder and the index records the sums (``hopgraph info``)."""

    title: str | None
    sections: list[Section]
    dropped: dict[str, int] = field(default_factory=dict)


#: Why a reader leaves text out, by the key it counts under in :attr:`Document.dropped`.
DROPPED: dict[str, str] = {
    "contents_pages": "PDF pages of a table of contents or an index (dot leaders, page numbers)",
    "running_lines": "PDF running headers and footers (lines repeated at the top or bottom of "
    "most pages)",
    "contents_lines": "PDF dot-leader lines of a table of contents on a page otherwise kept",
    "navigation_pages": "HTML pages that are only navigation (lists of links)",
    "empty_documents": "documents without text",
}


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


def import_parser(module: str, kind: str, path: Path) -> Any:
    """Import the optional package ``module`` to read a ``kind`` file; a missing one names the
    extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = {"docx": "python-docx", "markdown_it": "markdown-it-py", "lxml.html": "lxml"}.get(
            module, module
        )
        raise CorpusError(
            f"reading {_WHAT[kind]} needs {package}, which cannot be imported ({e}): {INSTALL}",
            path,
        ) from None


@contextlib.contextmanager
def quiet(logger_name: str, level: int = logging.ERROR) -> Iterator[None]:
    """Hold back a parser's own log lines below ``level`` (pypdf warns "EOF marker not found"
    and the like for files it then fails on, or reads anyway): hopgraph says what matters."""
    logger = logging.getLogger(logger_name)
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def clean_title(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    title = " ".join(value.split())
    return title or None


def push_heading(headings: list[tuple[int, str]], level: int, text: str) -> None:
    while headings and headings[-1][0] >= level:
        headings.pop()
    headings.append((level, " ".join(text.split())))


def heading_meta(headings: list[tuple[int, str]]) -> dict[str, Any]:
    return {"heading": " > ".join(t for _, t in headings)} if headings else {}
