"""Text cut to fit where it is shown: never between a letter and its combining marks (a Thai
consonant and its vowel sign, an Arabic letter and its harakat), and, for a terminal, by the
columns a character takes (two for the wide characters of Chinese, Japanese and Korean, none
for a combining mark) rather than by characters."""

from __future__ import annotations

import unicodedata


def columns(ch: str) -> int:
    """The terminal columns ``ch`` takes: 0 for a combining mark, 2 for an East Asian wide or
    full-width character, else 1."""
    if unicodedata.category(ch).startswith("M"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def clip(text: str, n: int, *, by_columns: bool = False) -> str:
    """``text`` cut to ``n`` characters (``by_columns``: terminal columns), an ellipsis ending
    what was cut; the cut moves back to the start of a letter's marks."""
    size = (lambda s: sum(map(columns, s))) if by_columns else len
    if size(text) <= n:
        return text
    cut, used = 0, 0
    for ch in text:
        w = columns(ch) if by_columns else 1
        if used + w > n - 1:
            break
        used += w
        cut += 1
    while cut > 0 and unicodedata.category(text[cut]).startswith("M"):
        cut -= 1
    return text[:cut] + "…"
