"""Markdown files: split at their headings (markdown-it-py)."""

from __future__ import annotations

import re
from pathlib import Path

from hopgraph.corpus.documents.base import (
    Document,
    Section,
    clean_title,
    heading_meta,
    import_parser,
    push_heading,
)

_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)


def markdown_sections(text: str, path: Path, kind: str = "markdown") -> Document:
    """Split Markdown by its (top-level) headings: each section is a heading's line(s) and the
    text under it, with the heading path; text before the first heading has none. The title is
    the first H1 (or a YAML front matter ``title:``)."""
    markdown_it = import_parser("markdown_it", kind, path)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    title = None
    m = _FRONT_MATTER.match(text)
    if m:
        t = _FRONT_TITLE.search(m.group(1))
        if t:
            title = clean_title(t.group(1).strip("'\""))
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
        push_heading(headings, level, words)
        body = "\n".join(lines[after : starts[n + 1]]).strip()
        if body:  # a heading with nothing under it lives on in its children's heading path
            section = "\n".join(lines[first : starts[n + 1]]).strip()
            sections.append(Section(section, heading_meta(headings)))
    if not sections and text.strip():  # headings only
        sections.append(Section(text.strip()))
    return Document(title, sections)
