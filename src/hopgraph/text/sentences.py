"""Sentence splitting by punctuation: no model, the same split everywhere it is used (synthetic
training questions, the pseudo-queries of a corpus profile)."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_ABBREV = re.compile(r"\b(?:[A-Z]|Mr|Mrs|Ms|Dr|St|Jr|Sr|Inc|Co|Ltd|No|vs|U\.S)\.$")


def sentences(text: str) -> list[str]:
    """``text`` split at sentence ends (a capital after ``.!?``), abbreviations kept whole."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(text.strip()):
        if out and _ABBREV.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]
