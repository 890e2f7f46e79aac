"""Markdown files: rendered (markdown-it-py) and read as a page, under their real headings.

The Markdown is rendered to HTML (CommonMark) and walked as any page is
(:mod:`~hopgraph.corpus.documents.blocks`): the passages hold the text a reader sees, without
Markdown syntax (``**``, ``[text](url)``, backslash escapes); fenced and indented code keeps
its lines; headings are only the document's own (``#`` and setext), never a ``#`` line inside
a code fence. The title is a YAML front matter ``title:``, else the first H1.
"""

from __future__ import annotations

import re
from pathlib import Path

from hopgraph.corpus.documents.base import Document, clean_title, import_parser
from hopgraph.corpus.documents.blocks import page_blocks, prune, sections_of

__all__ = ["markdown_sections"]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


def markdown_sections(text: str, path: Path, kind: str = "markdown") -> Document:
    """The :class:`Document` of the Markdown ``text`` (read from ``path``)."""
    markdown_it = import_parser("markdown_it", kind, path)
    lxml_html = import_parser("lxml.html", kind, path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    title = None
    m = _FRONT_MATTER.match(text)
    if m:
        t = _FRONT_TITLE.search(m.group(1))
        if t:
            title = clean_title(t.group(1).strip("'\""))
        text = text[m.end() :]
    if not text.strip():
        return Document(title, [])
    rendered = markdown_it.MarkdownIt("commonmark").render(text)
    root = lxml_html.document_fromstring(f"<html><body>{rendered}</body></html>")
    prune(root, landmarks=False)
    blocks = page_blocks(root)
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return Document(title, list(sections_of(blocks)))
