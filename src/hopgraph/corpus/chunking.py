"""Split long documents into overlapping word windows."""

from __future__ import annotations

import re
from typing import Any

from hopgraph.corpus.passage import Passage

_WORD = re.compile(r"\S+")
_SENTENCE_END = (".", "!", "?")
_CLOSERS = "\"')]}»”’"


def _ends_sentence(word: str) -> bool:
    return word.rstrip(_CLOSERS).endswith(_SENTENCE_END)


def chunk_document(
    doc_id: str,
    title: str,
    text: str,
    *,
    max_words: int = 200,
    overlap: int = 40,
    metadata: dict[str, Any] | None = None,
) -> list[Passage]:
    """Split ``text`` into passages of at most ``max_words`` whitespace-separated words.

    Consecutive windows share ``overlap`` words. A window that is not the last one ends
    early at a sentence end ('.', '!' or '?', optionally followed by a closing quote or
    bracket) when one falls inside the last 25% of the window. Chunk text is sliced from
    the original, so spacing and newlines inside a chunk are kept.

    A text of at most ``max_words`` words gives a single passage whose id is ``doc_id``
    and whose metadata is a copy of ``metadata``. Otherwise the passages are
    ``f"{doc_id}#{n}"`` (n from 0), each with the same title and metadata
    ``{"doc_id": doc_id, "chunk": n, **metadata}``.
    """
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words <= 0:
        raise ValueError(f"max_words must be a positive integer, got {max_words!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < max_words:
        raise ValueError(
            f"overlap must be an integer in [0, max_words={max_words}), got {overlap!r}"
        )
    extra = dict(metadata or {})
    spans = [m.span() for m in _WORD.finditer(text)]
    n_words = len(spans)
    if n_words <= max_words:
        return [Passage(id=doc_id, title=title, text=text, metadata=extra)]

    # Offsets (within a window) where an early sentence end is acceptable.
    earliest = max_words - max_words // 4
    passages: list[Passage] = []
    start = 0
    while True:
        end = min(start + max_words, n_words)
        if end < n_words:
            for j in range(start + max_words - 1, start + earliest - 1, -1):
                # Only end early if the next window still moves forward.
                if j + 1 - overlap <= start:
                    break
                s, e = spans[j]
                if _ends_sentence(text[s:e]):
                    end = j + 1
                    break
        n = len(passages)
        chunk_text = text[spans[start][0] : spans[end - 1][1]]
        passages.append(
            Passage(
                id=f"{doc_id}#{n}",
                title=title,
                text=chunk_text,
                metadata={"doc_id": doc_id, "chunk": n, **extra},
            )
        )
        if end >= n_words:
            return passages
        start = end - overlap
