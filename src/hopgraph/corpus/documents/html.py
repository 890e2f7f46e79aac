"""HTML files: the main text (trafilatura)."""

from __future__ import annotations

import logging
from pathlib import Path

from hopgraph.corpus.documents.base import HEAD_BYTES, Document, clean_title, import_parser, quiet
from hopgraph.corpus.documents.markdown import markdown_sections
from hopgraph.errors import CorpusError


def _html_title(data: bytes) -> str | None:
    """The text of ``<title>``; None when there is none."""
    import lxml.html  # trafilatura's own dependency

    try:  # UTF-8 unless the page says otherwise (lxml's default for bytes is Latin-1)
        source: str | bytes = data.decode("utf-8")
    except UnicodeDecodeError:
        source = data
    for src in (source, data):
        try:
            return clean_title(lxml.html.document_fromstring(src).findtext(".//title"))
        except ValueError:  # a str with an encoding declaration: lxml wants the bytes
            continue
        except Exception:  # nothing parsable: no title
            return None
    return None


def read_html(path: Path, data: bytes) -> Document:
    trafilatura = import_parser("trafilatura", "html", path)
    page = data
    if b"<html" not in data[:HEAD_BYTES].lower():  # a fragment: trafilatura wants a page
        page = b"<html><body>" + data + b"</body></html>"
    try:
        with quiet("trafilatura", logging.CRITICAL):  # it logs an ERROR for an empty page
            text = trafilatura.extract(
                page, output_format="markdown", include_comments=False, include_tables=True
            ) or trafilatura.extract(  # too little for the main-text heuristics: all of it
                page, output_format="markdown", include_tables=True, favor_recall=True
            ) or trafilatura.html2txt(page)  # fmt: skip
    except Exception as e:
        raise CorpusError(f"cannot read this HTML ({type(e).__name__}: {e})", path) from None
    doc = markdown_sections(text or "", path, "html")
    return Document(_html_title(data) or doc.title, doc.sections)
