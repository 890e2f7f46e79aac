"""HTML files: the page's main content as clean text under its real headings.

The content is the page's ``main`` landmark when it has one (``<main>``, an element with
``role="main"``, a single ``<article>``): documentation sites (Sphinx, MkDocs, mdBook,
Docusaurus, rustdoc) and most modern pages mark it so. It is walked by
:mod:`~hopgraph.corpus.documents.blocks` after navigation landmarks and permalink marks are
removed. A page without one is walked from its ``<body>``, with the navigation landmarks and
the link-dense blocks (menus, navigation panels: :func:`~hopgraph.corpus.documents.blocks.
prune_link_blocks`) left out. (trafilatura's main-text extraction, used before, was measured
against this on Python's and gnuplot's HTML documentation: it flattens code blocks onto one
line and loses headings; docs/notes/documents-filters.md, "Real documents".)

A page whose content is mostly link text (share ≥ :data:`NAV_LINK_SHARE` over at most
:data:`NAV_MAX_WORDS` words: a chapter's table of contents, a site index) is navigation only:
it gives no section and counts as ``navigation_pages`` in :attr:`Document.dropped`.
"""

from __future__ import annotations

import html as _html
import re
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents.base import (
    Document,
    clean_title,
    import_parser,
)
from hopgraph.corpus.documents.blocks import (
    link_share,
    page_blocks,
    prune,
    prune_link_blocks,
    sections_of,
)
from hopgraph.errors import CorpusError

__all__ = ["NAV_LINK_SHARE", "NAV_MAX_WORDS", "html_title", "read_html"]

#: A page whose words are at least this share link text is navigation only ...
NAV_LINK_SHARE = 0.6
#: ... unless it has more words than this (a long page of links may be a reference list).
NAV_MAX_WORDS = 2000

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)


def html_title(data: bytes) -> str | None:
    """The text of the page's ``<title>`` read off its bytes (no parse); None when it has
    none. Cheap enough to read every page of a folder before any is parsed."""
    m = _TITLE.search(data)
    if not m:
        return None
    raw = m.group(1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return clean_title(_html.unescape(re.sub(r"<[^>]+>", " ", text)))


def _parse(data: bytes, path: Path) -> Any:
    lxml_html = import_parser("lxml.html", "html", path)
    try:  # UTF-8 unless the page says otherwise (lxml's default for bytes is Latin-1)
        source: str | bytes = data.decode("utf-8")
    except UnicodeDecodeError:
        source = data
    for src in (source, data):
        try:
            return lxml_html.document_fromstring(src)
        except ValueError:  # a str with an encoding declaration: lxml wants the bytes
            continue
        except Exception as e:  # lxml's ParserError on a page without elements
            raise CorpusError(f"cannot read this HTML ({type(e).__name__}: {e})", path) from None
    raise CorpusError("cannot read this HTML", path)


def main_element(root: Any) -> Any | None:
    """The page's main landmark: ``<main>``, else an element with ``role="main"``, else its only
    ``<article>``; None when it has none."""
    for xpath in ("//main", "//*[@role='main']"):
        found = root.xpath(xpath)
        if found:
            return found[0]
    articles = root.xpath("//article")
    return articles[0] if len(articles) == 1 else None


def read_html(path: Path, data: bytes) -> Document:
    """The :class:`Document` of an HTML page (``data``: its bytes)."""
    try:
        root = _parse(data, path)
        title = clean_title(root.findtext(".//title"))
        content = main_element(root)
        whole = content is None
        if whole:
            content = root.find("body") if root.find("body") is not None else root
        prune(content, landmarks=True)
        nav = link_share(content)
        if whole:
            prune_link_blocks(content)
        blocks = page_blocks(content)
    except CorpusError:
        raise
    except Exception as e:  # lxml and trafilatura raise many kinds on a broken page
        raise CorpusError(f"cannot read this HTML ({type(e).__name__}: {e})", path) from None
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    words = sum(len(b.text.split()) for b in blocks if b.kind != "heading")
    if (words or whole) and words <= NAV_MAX_WORDS and nav >= NAV_LINK_SHARE:
        return Document(title, [], {"navigation_pages": 1})
    return Document(title, list(sections_of(blocks)))
