"""HTML files: the page's main content as clean text under its real headings.

The content is the page's ``main`` landmark when it has one (``<main>``, an element with
``role="main"``, a single ``<article>``): documentation sites (Sphinx, MkDocs, mdBook,
Docusaurus, rustdoc) and most modern pages mark it so. It is walked by
:mod:`~hopgraph.corpus.documents.blocks` after navigation landmarks and permalink marks are
removed. A page without one goes through trafilatura's main-text extraction (its XML output,
which keeps headings, lists, tables and code) and the same walk.

A page whose content is mostly link text (share ≥ :data:`NAV_LINK_SHARE` over at most
:data:`NAV_MAX_WORDS` words: a chapter's table of contents, a site index) is navigation only:
it gives no section and counts as ``navigation_pages`` in :attr:`Document.dropped`.
"""

from __future__ import annotations

import html as _html
import logging
import re
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents.base import (
    HEAD_BYTES,
    Document,
    clean_title,
    import_parser,
    quiet,
)
from hopgraph.corpus.documents.blocks import link_share, page_blocks, prune, sections_of
from hopgraph.errors import CorpusError

__all__ = ["NAV_LINK_SHARE", "NAV_MAX_WORDS", "html_title", "read_html"]

#: A page whose words are at least this share link text is navigation only ...
NAV_LINK_SHARE = 0.6
#: ... unless it has more words than this (a long page of links may be a reference list).
NAV_MAX_WORDS = 2000

# trafilatura's XML elements, as the HTML elements the walk knows
_TRAFILATURA_TAGS = {
    "list": "ul", "item": "li", "row": "tr", "cell": "td", "lb": "br", "quote": "blockquote",
    "hi": "span", "ref": "a", "graphic": "span", "doc": "div", "main": "div",
    "comments": "aside",
}  # fmt: skip
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


def _trafilatura_content(data: bytes, path: Path) -> Any | None:
    """The page's main text as trafilatura's XML, with its elements renamed to HTML's."""
    trafilatura = import_parser("trafilatura", "html", path)
    from lxml import etree

    page = data
    if b"<html" not in data[:HEAD_BYTES].lower():  # a fragment: trafilatura wants a page
        page = b"<html><body>" + data + b"</body></html>"
    options = {"output_format": "xml", "include_tables": True, "include_comments": False}
    with quiet("trafilatura", logging.CRITICAL):  # it logs an ERROR for an empty page
        xml = trafilatura.extract(page, **options) or trafilatura.extract(
            page, favor_recall=True, **options
        )  # too little for the main-text heuristics: all of it
    if not xml:
        return None
    root = etree.fromstring(xml.encode("utf-8"))
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        if el.tag == "head":  # <head rend="h2">: a heading of that level
            rend = el.get("rend") or "h2"
            el.tag = rend if re.fullmatch(r"h[1-6]", rend) else "h2"
        elif el.tag == "code" and len(el) == 0 and "\n" in (el.text or "").strip():
            el.tag = "pre"
        else:
            el.tag = _TRAFILATURA_TAGS.get(el.tag, el.tag)
    return root


def read_html(path: Path, data: bytes, *, landmarks: bool = True) -> Document:
    """The :class:`Document` of an HTML page (``data``: its bytes). ``landmarks=False`` skips
    the main landmark and always extracts with trafilatura (how the two were compared)."""
    try:
        root = _parse(data, path)
        title = clean_title(root.findtext(".//title"))
        content = main_element(root) if landmarks else None
        if content is None:
            content = _trafilatura_content(data, path)
        if content is None:
            return Document(title, [])
        prune(content, landmarks=True)
        blocks = page_blocks(content)
    except CorpusError:
        raise
    except Exception as e:  # lxml and trafilatura raise many kinds on a broken page
        raise CorpusError(f"cannot read this HTML ({type(e).__name__}: {e})", path) from None
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    words = sum(len(b.text.split()) for b in blocks if b.kind != "heading")
    if words and words <= NAV_MAX_WORDS and link_share(content) >= NAV_LINK_SHARE:
        return Document(title, [], {"navigation_pages": 1})
    return Document(title, list(sections_of(blocks)))
