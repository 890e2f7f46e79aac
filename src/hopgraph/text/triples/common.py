"""What every part of the triples package shares: the :data:`Triple` type, whitespace
normalisation and the dependency labels and parts of speech more than one layer reads."""

from __future__ import annotations

Triple = tuple[str, str, str]  # (subject, predicate, object), whitespace-normalised, non-empty

_SUBJECTS = ("nsubj", "nsubjpass")
_VERBS = ("VERB", "AUX")


def _norm(text: str) -> str:
    return " ".join(text.split())
