"""GRIEVER's relative-clause splitter (§4.2.1).

A multi-hop question often nests one question inside another through relative clauses: "When
did Napoleon occupy the city **where** the mother of the woman **who** brought Louis XV style to
the court died?". For every relative connector after the first word, the sub-query running from
the connector to the end of the question is added; the full question comes first. The innermost
clause usually names the first hop.
"""

from __future__ import annotations

import re

RELATIVE_CONNECTORS = ("who", "whom", "whose", "which", "that", "where", "when")
_CONNECTOR = re.compile(r"\b(?:" + "|".join(RELATIVE_CONNECTORS) + r")\b", re.IGNORECASE)


def split_relative_clauses(query: str, *, min_words: int = 3) -> list[str]:
    """``[query, suffix_1, suffix_2, ...]``: the question and, for each relative connector after
    its first word, the text from the connector to the end. Suffixes shorter than ``min_words``
    words are dropped; duplicates are removed, order kept."""
    query = " ".join(query.split())
    out = [query]
    for m in _CONNECTOR.finditer(query):
        if m.start() == 0:
            continue
        suffix = query[m.start() :]
        if len(suffix.split()) >= min_words and suffix not in out:
            out.append(suffix)
    return out
