"""(subject, predicate, object) triples per passage, for GRIEVER (§4.1) without an LLM.

Two sources:

- :class:`SpacyTripleExtractor` reads triples off spaCy's dependency parse and named entities.
- :func:`load_openie` reads HippoRAG's OpenIE file (LLM triples, ``openie_<model>.json``).

Patterns of the extractor, each one sentence → triples:

- subject–verb–object, ``xcomp`` chains: "She began to study law" → (S, "begin to study", "law");
- copulas: "X is a peer-reviewed journal" → (X, "is", "peer-reviewed journal");
- passives and their agent: "was published by D" → (S, "published by", D);
- a verb's prepositions: "born in Paris" → (S, "born in", "Paris"), "born and raised in P";
- relational nouns: "X is the mother of Y" → (X, "mother of", Y) (the bare "mother" is then not
  an object), "received a degree from Z" → (S, "receive degree from", Z); "His father was Z",
  "D's wife was Z", "the capital of F is Z" → (title / D / F, "father" / "wife" / "capital", Z);
- appositives: "D, the son of Y" → (D, "son of", Y); "D, an abolitionist" → (D, "is",
  "abolitionist"); "his wife, Anna" → (title, "wife", "Anna");
- relative and participial clauses: "X is a journal published by P" → (X, "published by", P);
  "Rubin, who founded Def Jam" → ("Rubin", "found", "Def Jam");
- conjunctions of subjects, objects and verbs fanned out ("A and B founded C and D": 4 triples);
- a person's parenthesis: "P (26 August 1928 – 17 July 2013)" → (P, "born", ...), (P, "died", ...);
- a fallback for named entities no pattern reached: the object of the nearest verb above them,
  the prepositions and nouns on the way forming the predicate ("is a state on the east coast of
  Australia" → (S, "state on coast of", "Australia")).

Arguments are entity-like: the named entity covering the argument's head (with the proper nouns
the NER cut off), else its noun chunk; "Journal of Mathematical Physics" (proper noun + "of" +
proper noun) and "the city of Toronto" (→ "Toronto") stay whole; leading determiners,
possessives and quotes and parentheses inside are dropped. In a passage with a title, subject
pronouns ("he", "she", "it", "his", "its"; "they" when the title is plural, "The Beatles"), "the
<noun>" when the noun is in the title or names the title ("the journal" after "X is a journal"),
and a person's first or last name alone stand for the title, disambiguator stripped (Wikipedia
passages are about their title). Arguments that are unresolved pronouns or stopwords are dropped.

Predicates are lowercase: copulas are ``"is"``; passive participles keep their form
("published", "born": the lemma of "born" is "bear"); other verbs are lemmatised ("married" →
``"marry"``); particles, prepositions and "not" follow ("grow up in", "not win").

The extractor is built in layers, one module each: :mod:`~hopgraph.text.triples.arguments`
(the passage, its topic and its arguments), :mod:`~hopgraph.text.triples.clauses` (predicates
and clauses) and :mod:`~hopgraph.text.triples.passage` (the other patterns and the pass over a
passage); :mod:`~hopgraph.text.triples.openie` reads OpenIE files and
:mod:`~hopgraph.text.triples.common` holds what they share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hopgraph.errors import ConfigError
from hopgraph.text.spacy_ner import SpacyPipeline
from hopgraph.text.triples.arguments import passage_topic
from hopgraph.text.triples.common import Triple
from hopgraph.text.triples.openie import load_openie
from hopgraph.text.triples.passage import _Passage

__all__ = ["SpacyTripleExtractor", "Triple", "doc_triples", "load_openie", "passage_topic"]

# Components triples do not need (the parser, tagger, attribute ruler, lemmatizer and NER stay).
_NOT_NEEDED = ("senter", "textcat", "textcat_multilabel", "spancat", "entity_linker")


def doc_triples(doc: Any, title: str | None = None) -> list[Triple]:
    """The triples of one parsed spaCy ``Doc``; pronoun subjects stand for ``title``."""
    return _Passage(doc, passage_topic(title, doc.text)).triples()


class SpacyTripleExtractor(SpacyPipeline):
    """Triples from spaCy's dependency parse and NER (no LLM); see the module docstring.

    ``n_process`` > 1 runs spaCy's multiprocessing for inputs of at least
    :data:`~hopgraph.text.spacy_ner.MULTIPROCESS_MIN_TEXTS` texts.
    """

    name = "spacy"
    purpose = "the spacy triple extractor"
    needs = ("parser", "ner")
    exclude = _NOT_NEEDED

    def extract(
        self,
        texts: Sequence[str],
        *,
        titles: Sequence[str] | None = None,
        progress: bool = False,
    ) -> list[list[Triple]]:
        """Per text, its triples deduplicated in order of appearance. With ``titles`` (one per
        text), pronoun subjects stand for the text's title (its disambiguator stripped)."""
        n = len(texts)
        if titles is not None and len(titles) != n:
            raise ConfigError(f"{len(titles)} titles for {n} texts")
        docs = self._docs(texts, "spacy triples", progress)
        return [
            doc_triples(doc, titles[i] if titles is not None else None)
            for i, doc in enumerate(docs)
        ]
