"""DOCX files: paragraphs and tables under their ``Heading N`` styles (python-docx)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hopgraph.corpus.documents.base import (
    Document,
    Section,
    clean_title,
    heading_meta,
    import_parser,
    push_heading,
)
from hopgraph.errors import CorpusError


def read_docx(path: Path) -> Document:
    docx = import_parser("docx", "docx", path)
    try:
        doc = docx.Document(str(path))
        title = clean_title(doc.core_properties.title)
        blocks = [_docx_block(b) for b in doc.iter_inner_content()]
    except Exception as e:  # a zip that is no Word document, a damaged part
        raise CorpusError(f"cannot read this DOCX ({type(e).__name__}: {e})", path) from None
    sections: list[Section] = []
    headings: list[tuple[int, str]] = []
    lines: list[str] = []
    body = False

    def flush() -> None:
        if body:
            sections.append(Section("\n\n".join(lines), heading_meta(headings)))

    for style, text in blocks:
        if not text.strip():
            continue
        level = _docx_heading_level(style)
        if level is not None:
            flush()
            lines, body = [text], False
            push_heading(headings, level, text)
            continue
        if title is None and style == "Title":
            title = clean_title(text)
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
