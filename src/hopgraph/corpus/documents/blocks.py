"""An HTML tree walked into plain-text blocks: headings, paragraphs and code, in reading order.

The walk is what makes a page's passages clean. Text is plain (no Markdown escapes, no
permalink marks such as Sphinx's ``¶``); headings come only from ``h1``–``h6`` elements, never
from text inside ``pre`` or ``code``; a ``pre`` block keeps its lines; a table row's cells are
joined by ``" | "``; a list item, a definition term and its description each start a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from hopgraph.corpus.documents.base import Section, heading_meta, push_heading

__all__ = ["Block", "link_share", "page_blocks", "prune", "prune_link_blocks", "sections_of"]

#: Elements whose content is never text of the page.
_NEVER = {
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed",
    "button", "select", "option", "input", "textarea", "head", "title", "meta", "link",
}  # fmt: skip
#: Elements that end the line of text before them and start a new one.
_BLOCK = {
    "p", "div", "section", "article", "main", "header", "footer", "aside", "nav", "ul", "ol",
    "dl", "li", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "caption", "blockquote",
    "figure", "figcaption", "hr", "form", "fieldset", "details", "summary", "address",
    "center", "body", "html", "menu", "legend", "hgroup",
}  # fmt: skip
#: Inline elements whose text is literal (code): kept exactly as written.
_LITERAL = {"code", "tt", "kbd", "samp", "var"}
#: A backslash before ``*`` or ``_`` in prose: an escape left by a Markdown-minded writer
#: (Sphinx signatures carry ``\\*``), not text a reader should see.
_ESCAPED = re.compile(r"(?<!\\)\\([*_])")
_HEADING = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
#: Link texts that are only a permalink mark (Sphinx ``¶``, MkDocs ``¶``/``#``, GitHub ``🔗``).
_PERMALINK_TEXT = {"¶", "#", "§", "🔗", "⚓", "∞", "¤", "⁋"}
_PERMALINK_CLASS = re.compile(r"\b(?:headerlink|anchorjs-link|header-anchor|permalink)\b")
#: Landmarks that are never the page's own text.
_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}


@dataclass(frozen=True)
class Block:
    """One block of a page: ``kind`` is ``heading`` (with its ``level``), ``text`` or ``code``."""

    kind: str
    text: str
    level: int = 0


def _tag(el: Any) -> str:
    tag = el.tag
    return tag.lower() if isinstance(tag, str) else ""


def _text(el: Any) -> str:
    """The text of ``el`` and everything in it (lxml's ``text_content``, for any element)."""
    return "".join(t for t in el.itertext() if isinstance(t, str))


def _drop(el: Any) -> None:
    """Remove ``el`` and what it holds, keeping the text that follows it (its tail)."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


def _is_permalink(el: Any) -> bool:
    if _tag(el) != "a":
        return False
    if _PERMALINK_CLASS.search(el.get("class") or ""):
        return True
    return _text(el).strip() in _PERMALINK_TEXT


def prune(root: Any, *, landmarks: bool) -> None:
    """Remove from ``root`` what is never text (scripts, styles, forms' controls), permalink
    anchors, and with ``landmarks`` the navigation landmarks too (``nav``, ``role``
    navigation/banner/contentinfo/search/complementary, and the page's own ``header``,
    ``footer`` and ``aside``: inside the content — ``main``, ``article``, ``section`` — an
    ``aside`` is a note or a footnote and a header is the content's own, so they stay)."""
    doomed = []
    for el in root.iter():
        tag = _tag(el)
        if not tag:  # a comment or processing instruction: its text is not the page's
            doomed.append(el)
        elif tag in _NEVER or _is_permalink(el):
            doomed.append(el)
        elif landmarks and (
            tag == "nav"
            or (el.get("role") or "").lower() in _ROLES
            or (tag in ("header", "footer", "aside") and not _in_content(el))
        ):
            doomed.append(el)
    for el in doomed:
        _drop(el)


def _in_content(el: Any) -> bool:
    """Whether ``el`` is inside the page's content (``main``, ``article``, ``section``, or an
    element whose role is ``main``): its header is the content's own."""
    parent = el.getparent()
    while parent is not None:
        if _tag(parent) in ("main", "article", "section") or parent.get("role") == "main":
            return True
        parent = parent.getparent()
    return False


def _inside(el: Any, tags: tuple[str, ...]) -> bool:
    parent = el.getparent()
    while parent is not None:
        if _tag(parent) in tags:
            return True
        parent = parent.getparent()
    return False


def _prose(text: str) -> str:
    return _ESCAPED.sub(r"\1", text)


def _words(text: str) -> str:
    return " ".join(text.split())


class _Walk:
    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.line: list[str] = []

    def flush(self) -> None:
        text = _words("".join(self.line))
        if text:
            self.blocks.append(Block("text", text))
        self.line = []

    def visit(self, el: Any, literal: bool = False) -> None:
        tag = _tag(el)
        if tag in _HEADING:
            self.flush()
            text = _words(_prose(_text(el)))
            if text:
                self.blocks.append(Block("heading", text, _HEADING[tag]))
        elif tag == "pre":
            self.flush()
            code = _code_text(el)
            if code:
                self.blocks.append(Block("code", code))
        elif tag == "tr":
            self.flush()
            cells = [_words(_text(c)) for c in el if _tag(c) in ("td", "th")]
            cells = [c for c in cells if c]
            if cells:
                self.blocks.append(Block("text", " | ".join(cells)))
        elif tag == "br":
            self.flush()
        else:
            block = tag in _BLOCK
            if block:
                self.flush()
            inner = literal or tag in _LITERAL
            if el.text:
                self.line.append(el.text if inner else _prose(el.text))
            for child in el:
                self.visit(child, inner)
                if child.tail:
                    self.line.append(child.tail if literal else _prose(child.tail))
            if block:
                self.flush()


def _code_text(el: Any) -> str:
    lines = _text(el).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    lines = [line.rstrip().replace("\t", "    ") for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def page_blocks(root: Any) -> list[Block]:
    """The blocks of ``root`` (an lxml element, already pruned), in document order."""
    walk = _Walk()
    walk.visit(root)
    walk.flush()
    return walk.blocks


def link_share(root: Any) -> float:
    """The share of ``root``'s words (headings aside) that are link text: near 1 for a page that
    is only a list of links."""
    heads = tuple(_HEADING)
    total = _count(root) - sum(_count(h) for h in root.iter(*heads) if not _inside(h, heads))
    linked = sum(
        _count(a) for a in root.iter("a") if not _inside(a, heads) and not _inside(a, ("a",))
    )
    return linked / total if total > 0 else 0.0


#: A block whose words are at least this share link text ...
LINK_BLOCK_SHARE = 0.5
#: ... and that has at most this many words is a menu or a navigation panel.
LINK_BLOCK_WORDS = 60
_CONTAINERS = ("div", "ul", "ol", "dl", "table", "td", "center")


def prune_link_blocks(root: Any) -> None:
    """Remove the link-dense blocks of ``root``: two links or more making at least
    :data:`LINK_BLOCK_SHARE` of at most :data:`LINK_BLOCK_WORDS` words (menus, navigation
    panels, "Next: … Up: …" bars). A block holding a heading or code is kept."""
    doomed = []
    for el in root.iter(*_CONTAINERS):
        if el.find(".//pre") is not None or any(el.find(f".//{t}") is not None for t in _HEADING):
            continue
        words = _count(el)
        if (
            0 < words <= LINK_BLOCK_WORDS
            and len(el.findall(".//a")) >= 2
            and link_share(el) >= LINK_BLOCK_SHARE
        ):
            doomed.append(el)
    for el in doomed:
        _drop(el)


def _count(el: Any) -> int:
    return len(_text(el).split())


def sections_of(blocks: list[Block]) -> Iterator[Section]:
    """Blocks grouped under their headings: each section is a heading line and the blocks under
    it (code keeps its lines), with the heading path as ``heading`` metadata; text before the
    first heading has none. A heading with nothing under it lives on in its children's path."""
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    body = False
    meta: dict[str, Any] = {}
    for block in blocks:
        if block.kind == "heading":
            if body:
                yield Section("\n".join(lines), meta)
            push_heading(headings, block.level, block.text)
            meta = heading_meta(headings)
            lines, body = [block.text], False
        else:
            lines.append(block.text)
            body = True
    if body:
        yield Section("\n".join(lines), meta)
