"""The spaCy entity labels the ``spacy`` NER keeps: a leaf module, so that :mod:`hopgraph.text.ner`
(which loads :mod:`hopgraph.text.spacy_ner` on demand) and :mod:`hopgraph.text.spacy_ner` both
import it without importing each other (issue 39)."""

from __future__ import annotations

# spaCy labels for names (numeric types DATE, TIME, PERCENT, MONEY, QUANTITY, ORDINAL, CARDINAL
# are not entities a multi-hop question pivots on).
SPACY_LABELS = frozenset(
    {
        "PERSON",
        "NORP",
        "FAC",
        "ORG",
        "GPE",
        "LOC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "LAW",
        "LANGUAGE",
    }
)
