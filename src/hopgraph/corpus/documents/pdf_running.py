"""Running headers and footers of PDF pages, found across a document and removed from its pages.

A page's text (pypdf, one line a text line) starts and ends with what the typesetter repeats
on every page: a header (``276 gnuplot 5.4``, ``Chapter 7: Reference 22``), a footer
(``Page 3 of 12``), a page number alone (``3``, ``- iv -``). They are told from body text by
comparing the pages:

*Page numbers*: the printed number of a page is its number in the PDF less an offset (the cover,
the front matter numbered apart in roman numerals). Every number in the first and last
:data:`EDGE_LINES` lines of a page votes for an offset; an offset that two pages or more agree
on, at the same edge, is how the document numbers its pages.

*Forms*: an edge line compared across pages (:meth:`RunningLines.form`): lower case, spaces
collapsed, the page's own printed number as ``#``; so ``276 gnuplot 5.4`` and ``278 gnuplot
5.4`` are one form, ``# gnuplot 5.4``, while two body lines that differ in other numbers stay
two. A form with letters at the same edge of at least :data:`MIN_PAGES` pages and of a quarter
of the pages is running (even and odd pages' headers are two forms, each on half of the pages).
A header that names the chapter repeats over a run of pages only: a form heading at least
:data:`MIN_PAGES` pages of one run (pages at most two apart), short, not ending as a sentence or
a lead-in does (``.``, ``:``), and rarely seen elsewhere in the body, is running too.

*Folios*: a line at an edge that starts or ends with the page's printed number: a number alone,
or a short header (``Chapter 2: ASN.1 structure handling 3``) when its offset is seen on
:data:`MIN_PAGES` pages and a twentieth of them. One folio at most is taken from each edge of
a page, so that a chapter's opening ``1`` / ``1 Introduction`` loses the number only.

Lines are taken off each edge from the outside in while they are running or a folio, at most
:data:`MAX_DEPTH` a side; body text that merely repeats once or twice is never taken.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

#: How many lines at each edge of a page are compared across the pages.
EDGE_LINES = 2
#: The most lines taken off one edge of a page.
MAX_DEPTH = 3
#: The fewest pages a running line must be on (body text repeated once or twice stays).
MIN_PAGES = 3
#: The share of the pages a form must be on to run through the document.
DOCUMENT_SHARE = 0.25
#: The fewest pages that must agree on a page-number offset for a number to be a page's.
MIN_NUMBERED = 2
#: The longest running header, in characters.
MAX_HEADER_CHARS = 100

TOP = "top"
BOTTOM = "bottom"

_PUNCT = "-–—|•·()[]<>*~_:;,."
_ROMAN = re.compile(r"x{0,3}(?:ix|iv|v?i{0,3})")  # lower case, 1 to 39: front-matter folios
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10}
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]+")
_SENTENCE_END = (".", ":", ";", ",", "{", "(", "=", "\\")

Offset = tuple[str, int]  # a numbering's kind (arabic, roman) and PDF page less printed number


@dataclass(frozen=True)
class PageNumber:
    """A number a line carries: its kind (``arabic``, ``roman``) and value."""

    kind: str
    value: int


def roman_value(token: str) -> int | None:
    """The value of a lower-case roman numeral of 1 to 39 (``iv`` → 4), else None."""
    if not token or not _ROMAN.fullmatch(token):
        return None
    values = [_ROMAN_VALUES[c] for c in token]
    return sum(-v if v < w else v for v, w in zip(values, [*values[1:], 0], strict=True))


def page_number(token: str, roman: bool = True) -> PageNumber | None:
    """The page number a token is (``12``, ``(12)``, ``iv`` when ``roman``), else None;
    ``5.4`` and ``1.`` are none."""
    if "." in token:
        return None
    token = token.strip(_PUNCT)
    if token.isdecimal() and len(token) <= 4 and token.isascii():
        return PageNumber("arabic", int(token))
    value = roman_value(token) if roman else None
    return PageNumber("roman", value) if value is not None else None


def _tokens(line: str) -> list[str]:
    """The words of ``line``, punctuation alone (``-``, ``|``) left out."""
    return [t for t in line.split() if t.strip(_PUNCT)]


def line_numbers(line: str) -> list[tuple[int, PageNumber]]:
    """The numbers in ``line`` that may be page numbers, by word position: arabic ones
    anywhere, roman ones at either end only (``I`` and ``vi`` are words too)."""
    tokens = _tokens(line)
    last = len(tokens) - 1
    found = []
    for i, token in enumerate(tokens):
        if (n := page_number(token, roman=i in (0, last))) is not None:
            found.append((i, n))
    return found


def _has_letters(form: str) -> bool:
    return len(_LETTER.findall(form)) >= 2


def _header_like(line: str) -> bool:
    text = line.strip()
    return len(text) <= MAX_HEADER_CHARS and not text.endswith(_SENTENCE_END)


def _edges(lines: Sequence[str]) -> dict[str, list[str]]:
    return {TOP: list(lines[:EDGE_LINES]), BOTTOM: list(lines[-EDGE_LINES:])}


def _longest_run(pages: list[int]) -> int:
    """The most pages of ``pages`` (ascending) in one run, each at most two after the last."""
    best = run = 0
    last = None
    for p in pages:
        run = run + 1 if last is not None and p - last <= 2 else 1
        best = max(best, run)
        last = p
    return best


class RunningLines:
    """What runs through one document's pages: the page numbering and the running forms at
    each edge. Learned from all pages (:meth:`of`), then :meth:`strip` cleans each page."""

    def __init__(self, offsets: dict[str, Counter[Offset]], n_pages: int) -> None:
        self.offsets = offsets
        self.n_pages = n_pages
        self.forms: dict[str, set[str]] = {TOP: set(), BOTTOM: set()}

    @classmethod
    def of(cls, pages: Sequence[Sequence[str]]) -> RunningLines:
        """Learn the running lines of a document from its pages (each the list of its
        non-empty lines, stripped), numbered 1, 2, … in order."""
        offsets: dict[str, Counter[Offset]] = {TOP: Counter(), BOTTOM: Counter()}
        for number, lines in enumerate(pages, 1):
            for edge, edge_lines in _edges(lines).items():
                offsets[edge].update(
                    {
                        (n.kind, number - n.value)
                        for line in edge_lines
                        for _, n in line_numbers(line)
                    }
                )
        running = cls(offsets, len(pages))
        seen: dict[str, Counter[str]] = {TOP: Counter(), BOTTOM: Counter()}
        for number, lines in enumerate(pages, 1):
            for edge, edge_lines in _edges(lines).items():
                forms = {running.form(line, number, edge) for line in edge_lines}
                seen[edge].update(f for f in forms if _has_letters(f))
        need = max(MIN_PAGES, DOCUMENT_SHARE * len(pages))
        for edge, counts in seen.items():
            running.forms[edge] = {f for f, k in counts.items() if k >= need}
        running.forms[TOP] |= running._chapter_headers(pages)
        return running

    def _numbered(self, n: PageNumber, number: int, edge: str, need: float) -> bool:
        return self.offsets[edge][(n.kind, number - n.value)] >= need

    def form(self, line: str, number: int, edge: str) -> str:
        """``line`` as compared across pages: lower case, spaces collapsed, the printed number
        of PDF page ``number`` (at ``edge``'s numbering) as ``#``."""
        tokens = line.lower().split()
        core = [i for i, t in enumerate(tokens) if t.strip(_PUNCT)]
        for position, n in line_numbers(line):
            if self._numbered(n, number, edge, MIN_NUMBERED):
                tokens[core[position]] = "#"
        return " ".join(tokens)

    def _chapter_headers(self, pages: Sequence[Sequence[str]]) -> set[str]:
        """Forms heading runs of at least MIN_PAGES pages: a page's first line after its
        page number and document-wide running lines."""
        heads: dict[str, list[int]] = defaultdict(list)
        raw: dict[str, str] = {}
        slots: list[int] = []  # where each page's header would be
        for number, lines in enumerate(pages, 1):
            slot = 0
            while slot < min(len(lines), MAX_DEPTH - 1) and (
                self.form(lines[slot], number, TOP) in self.forms[TOP]
                or self.is_folio(lines[slot], number, TOP)
            ):
                slot += 1
            slots.append(slot)
            if slot < len(lines) and _has_letters(form := self.form(lines[slot], number, TOP)):
                heads[form].append(number)
                raw.setdefault(form, lines[slot])
        candidates = {
            f
            for f, where in heads.items()
            if _longest_run(where) >= MIN_PAGES and _header_like(raw[f])
        }
        if not candidates:
            return set()
        body: Counter[str] = Counter()  # the candidates seen elsewhere than as headers
        keys = {max(_WORD.findall(f), key=len) for f in candidates}
        for number, (lines, slot) in enumerate(zip(pages, slots, strict=True), 1):
            for i, line in enumerate(lines):
                low = line.lower()
                if i != slot and any(k in low for k in keys):  # a quick test first
                    body[self.form(line, number, TOP)] += 1
        return {f for f in candidates if 2 * body[f] < len(heads[f])}

    def is_folio(self, line: str, number: int, edge: str) -> bool:
        """Whether ``line`` at ``edge`` of PDF page ``number`` carries the page's printed
        number at one of its ends: alone, or in a short header."""
        tokens = _tokens(line)
        if not tokens:
            return False
        alone = len(tokens) == 1
        if not alone and not _header_like(line):
            return False
        need = MIN_NUMBERED if alone else max(MIN_PAGES, self.n_pages / 20)
        ends = {tokens[0], tokens[-1]}
        return any(
            (n := page_number(t)) is not None and self._numbered(n, number, edge, need)
            for t in ends
        )

    def strip(self, lines: Sequence[str], number: int) -> tuple[list[str], int]:
        """PDF page ``number``'s lines without its running lines, and how many were taken."""
        start, end = 0, len(lines)
        for edge in (TOP, BOTTOM):
            folio = False
            for _ in range(MAX_DEPTH):
                if start >= end:
                    break
                line = lines[start] if edge == TOP else lines[end - 1]
                if not folio and self.is_folio(line, number, edge):
                    folio = True
                elif self.form(line, number, edge) not in self.forms[edge]:
                    break
                if edge == TOP:
                    start += 1
                else:
                    end -= 1
        return list(lines[start:end]), len(lines) - (end - start)
