"""A PDF's title: its Title metadata, unless that is empty or a file name (``manual.dvi``,
``Microsoft Word - x.doc``, ``untitled``); then the most prominent line of page 1.

Page 1's text comes with its type size through pypdf's ``visitor_text`` (:class:`TypeSizes`):
each piece of text with its font size scaled by the text and graphics matrices, i.e. the size
it is printed at. The title is the largest text with letters on the page (its lines joined when
it runs over two or three lines of that size), when it is larger than the body text; otherwise
the page's first line when it reads as a title (:func:`first_line`: short, not a sentence),
otherwise None (the loader names the document by its file).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hopgraph.corpus.documents.base import clean_title

#: The longest title, in characters; a longer "title" is a paragraph.
MAX_TITLE_CHARS = 200
#: The most lines a title may run over.
MAX_TITLE_LINES = 3
#: The longest first line taken as a title when no text is larger than the body's.
MAX_LINE_WORDS = 15
MAX_LINE_CHARS = 100
#: A first line taken as a title is at most this share of the page's longest line after it.
SHORTER = 0.7
#: How much larger than the body text a title is set, at least.
PROMINENCE = 1.15

_FILE_NAME = re.compile(
    r"\.(?:dvi|pdf|docx?|dotx?|rtf|odt|ott|tex|ps|eps|indd|qxd|qxp|pages|txt|html?|xlsx?|pptx?"
    r"|wpd|wps|fm|sdw|md|png|jpe?g|tiff?)$",
    re.IGNORECASE,
)
_APP_PREFIX = re.compile(r"^(?:microsoft\s+)?(?:word|powerpoint|excel)\s+-\s+", re.IGNORECASE)
_PLACEHOLDER = re.compile(
    r"^(?:untitled(?:[\s-]*\d+)?|document\d*|title|no\s+title|none|unknown|slide\s*\d*|"
    r"presentation\d*|book\d*)$",
    re.IGNORECASE,
)
_LETTERS = re.compile(r"[^\W\d_]")


def metadata_title(value: Any) -> str | None:
    """The Title metadata as a title, or None when it is none: empty, a placeholder
    (``untitled``), a file name or path (``manual.dvi``, ``C:\\docs\\a``) or an office
    program's ``Microsoft Word - x.doc``."""
    title = clean_title(value)
    if title is None:
        return None
    if (
        _APP_PREFIX.match(title)
        or _FILE_NAME.search(title)
        or _PLACEHOLDER.match(title)
        or "\\" in title
        or title.startswith("/")
        or len(_LETTERS.findall(title)) < 2
    ):
        return None
    return title


def first_line(lines: Sequence[str]) -> str | None:
    """The first of ``lines`` when it reads as a title, else None: letters, at most
    :data:`MAX_LINE_WORDS` words, not ending as a sentence or a broken line does (``.``,
    ``,``, ``-``), and shorter than the longest line after it (the first line of a
    paragraph fills the column as the next ones do)."""
    texts = [" ".join(line.split()) for line in lines if line.strip()]
    if not texts:
        return None
    text, rest = texts[0], texts[1:]
    if (
        len(_LETTERS.findall(text)) < 2
        or len(text.split()) > MAX_LINE_WORDS
        or len(text) > MAX_LINE_CHARS
        or text.endswith((".", ",", ";", ":", "-"))
        or (rest and len(text) > SHORTER * max(map(len, rest)))
    ):
        return None
    return text


def _times(m: Sequence[float], n: Sequence[float]) -> tuple[float, ...]:
    """The product of two PDF matrices ``[a b c d e f]``."""
    return (
        m[0] * n[0] + m[1] * n[2],
        m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2],
        m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4],
        m[4] * n[1] + m[5] * n[3] + n[5],
    )


@dataclass
class _Piece:
    size: float  # printed size, points
    y: float  # baseline
    text: str


@dataclass
class TypeSizes:
    """Collects a page's text with its printed size: pass :meth:`visit` as pypdf's
    ``extract_text(visitor_text=...)``, then ask :meth:`title`."""

    pieces: list[_Piece] = field(default_factory=list)

    def visit(
        self, text: str, cm: Sequence[float], tm: Sequence[float], font: Any, size: float
    ) -> None:
        if not text or not text.strip():
            return
        try:
            m = _times(tm, cm)
            printed = abs(float(size)) * math.hypot(m[2], m[3])
            y = float(m[5])
        except (TypeError, ValueError, IndexError):
            return
        if printed > 0 and math.isfinite(printed) and math.isfinite(y):
            self.pieces.append(_Piece(round(printed * 2) / 2, y, text))

    def _runs(self) -> list[tuple[float, list[str]]]:
        """Consecutive pieces of one size, split where the next line is far: each run's size
        and its lines."""
        runs: list[tuple[float, list[str]]] = []
        last: _Piece | None = None
        for piece in self.pieces:
            same = last is not None and abs(piece.size - last.size) <= 0.5
            if same and last is not None and abs(piece.y - last.y) <= 0.5:
                runs[-1][1][-1] += piece.text
            elif same and last is not None and abs(piece.y - last.y) <= 2 * piece.size:
                runs[-1][1].append(piece.text)
            else:
                runs.append((piece.size, [piece.text]))
            last = piece
        return runs

    def title(self) -> str | None:
        """The largest text with letters, when larger than the body text; else None."""
        chars: Counter[float] = Counter()
        for piece in self.pieces:
            chars[piece.size] += len(piece.text.strip())
        if not chars:
            return None
        body = chars.most_common(1)[0][0]
        best: tuple[float, list[str]] | None = None
        for size, lines in self._runs():
            if len(_LETTERS.findall("".join(lines))) >= 2 and (best is None or size > best[0]):
                best = (size, lines)
        if best is None or best[0] < PROMINENCE * body:
            return None
        title = " ".join(" ".join(best[1][:MAX_TITLE_LINES]).split())
        return title if len(title) <= MAX_TITLE_CHARS else None
