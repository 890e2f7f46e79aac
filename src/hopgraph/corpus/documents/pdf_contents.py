"""Tables of contents and indexes in PDF pages: told by their lines, dropped by the reader.

An *entry* is a line that points at pages:

* a dot leader: ``Introduction . . . . . 5``, ``asn1_copy_node.......11`` (dots, middle dots,
  ellipses or underscores, then a page number, a roman one or a list; or the leader alone
  ending the line, its number on the next);
* an index entry: ``autoscale, 132``, ``arrow, 131, 198``, ``tm week, 152–154`` (a term, then a
  comma and page numbers, perhaps a comma ending a wrapped line);
* a plain entry: ``Canvas size 32``, ``II Plotting styles 62`` (a title ending in a letter or a
  bracket, then a number), or a short title with its number alone on the next line: what a
  LaTeX contents page has for its chapters, or a word processor's with tab stops.

Headings (``Contents``, ``Concept Index``), an index's letters (``A``, ``Symbols``) and
numbers alone (a wrapped entry's last page) are neither entries nor body. A page is contents
(:func:`is_contents_page`) when at least :data:`MIN_ENTRIES` of its lines are entries, they are
at least :data:`ENTRY_SHARE` of its other lines, and the rest holds fewer than
:data:`MIN_PROSE` words (a chapter's own contents above its first paragraphs leaves the page
kept). Tables and code have lines like entries too, so:

* where plain entries are most of the entries (``bold weight 200`` is one), the page must be
  headed ``Contents`` or follow a contents page, its numbers must go up, and its titles must
  not all end in one word;
* where index entries are most, their terms must be in alphabetical order (``apple, 5`` rows
  of a table are not).

A page kept with a few dot leaders among its prose loses those lines and the contents heading
just above them (:func:`strip_leader_lines`): a leader line is never body text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

#: The fewest entries on a contents page.
MIN_ENTRIES = 4
#: The share of entries among a contents page's lines (headings and lone numbers not counted).
ENTRY_SHARE = 0.6
#: Body text of this many words keeps a page, whatever its entries.
MIN_PROSE = 40
#: The share of entries in order (a contents page's numbers, an index's first letters).
SORTED_SHARE = 0.75
#: Plain entries sharing the word before their number this much are a table's rows.
TABLE_SHARE = 0.5
#: The most words of a title whose page number is alone on the next line.
MAX_TITLE_WORDS = 12

_REF = r"(?:\d{1,4}|[ivxlcdm]{1,7}|[IVXLCDM]{1,7})"
_RANGE = rf"{_REF}(?:\s*[-–—]\s*{_REF})?"
_REFS = rf"{_RANGE}(?:\s*,\s+{_RANGE})*"
_LETTER = r"[^\W\d_]"
_PAGES = r"\d{1,4}(?:\s*[-–—]\s*\d{1,4})?"
_LEADER = re.compile(rf"(?:[.·…_]\s*+){{4,}}+{_REFS}\s*$|(?:[.·…_]\s*+){{8,}}+$")
_LEADERS = ("..", ". .", "__", "_ _", "·", "…")
INDEX_ENTRY = re.compile(rf"^(?=.*{_LETTER}).*[^\d\s,],\s*{_PAGES}(?:\s*,\s+{_PAGES})*,?$")
PLAIN_ENTRY = re.compile(
    rf"^(?=.*{_LETTER}{_LETTER})(?:.*\s)?(\S*[^\W\d_)\]\"”’][)\]\"”’]?)\s+(\d{{1,4}})$"
)
HEADING = re.compile(
    r"^(?:(?:table\s+of\s+)?contents|(?:[\w-]+\s+){0,3}index(?:es)?|indices|"
    r"list\s+of\s+(?:figures|tables)|symbols|numerics|(?:part\s+)?[IVX]+|[^\W\d_])$",
    re.IGNORECASE,
)
CONTENTS_HEADING = re.compile(
    r"^(?:(?:table\s+of\s+)?contents|(?:[\w-]+\s+){0,3}index(?:es)?)$", re.IGNORECASE
)
_HAS_LETTER = re.compile(_LETTER)
_LONE_NUMBER = re.compile(rf"^[\W_]*{_REFS}[\W_]*$")


def is_leader(line: str) -> bool:
    """Whether ``line`` is a dot-leader entry (``Intro . . . . 5``)."""
    if not any(leader in line for leader in _LEADERS):  # most lines: no regular expression
        return False
    m = _LEADER.search(line)
    return m is not None and _HAS_LETTER.search(line, 0, m.start()) is not None


def _title(line: str) -> tuple[str, int] | None:
    """A short title line's last word and length in words (its page number may be alone on
    the next line), else None."""
    words = line.split()
    if len(words) > MAX_TITLE_WORDS or not _HAS_LETTER.search(words[-1]):
        return None
    return None if line.endswith((".", ",", ";", ":")) else (words[-1].lower(), len(words))


def is_contents_page(lines: Sequence[str], continued: bool = False) -> bool:
    """Whether a page of these lines (stripped, non-empty, running lines removed) is a table of
    contents or an index page. ``continued``: the page before it was one."""
    leaders = other = words = 0
    index: list[str] = []  # index entries: the first letter of each
    plain: list[tuple[str, int]] = []  # plain entries: the word before the number, the number
    heading = False
    title: tuple[str, int] | None = None  # the line before, when a short title
    for line in lines:
        numbered = line[-1:].isdigit() or line.endswith(",")  # entries end so
        last, title = title, None
        if is_leader(line):
            leaders += 1
        elif numbered and INDEX_ENTRY.match(line):
            index.append(next((c for c in line.lower() if c.isalpha()), ""))
        elif numbered and (m := PLAIN_ENTRY.match(line)):
            plain.append((m.group(1).lower(), int(m.group(2))))
        elif HEADING.match(line):
            heading = heading or CONTENTS_HEADING.match(line) is not None
        elif _LONE_NUMBER.match(line):
            if last is not None and line.isdecimal():  # the number of the title above
                other, words = other - 1, words - last[1]
                plain.append((last[0], int(line)))
        else:
            other += 1
            words += len(line.split())
            title = _title(line)
    entries = leaders + len(index) + len(plain)
    if entries < MIN_ENTRIES or entries < ENTRY_SHARE * (entries + other) or words >= MIN_PROSE:
        return False
    if len(plain) > leaders + len(index):  # weak entries: a contents page's numbers go up
        return (heading or continued) and _toc_numbers(plain)
    return len(index) <= leaders or _rising(index)  # an index is in alphabetical order


def _rising(values: Sequence[Any]) -> bool:
    """Whether most of ``values`` are no smaller than the one before."""
    steps = list(zip(values, values[1:], strict=False))
    return sum(b >= a for a, b in steps) >= SORTED_SHARE * len(steps)


def _toc_numbers(plain: list[tuple[str, int]]) -> bool:
    """Whether plain entries read as a contents page's (page numbers going up, titles of
    their own) rather than a table's rows (``bold weight 200``: one word before each value)."""
    numbers = [n for _, n in plain]
    same_word = Counter(w for w, _ in plain).most_common(1)[0][1]
    return min(numbers) > 0 and _rising(numbers) and same_word < TABLE_SHARE * len(plain)


def strip_leader_lines(lines: Sequence[str]) -> list[str]:
    """``lines`` without dot-leader entries, nor a contents heading just above them."""
    kept: list[str] = []
    for line in lines:
        if is_leader(line):
            if kept and CONTENTS_HEADING.match(kept[-1].strip()):
                kept.pop()
            continue
        kept.append(line)
    return kept
