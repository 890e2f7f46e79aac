"""The first layer of the spaCy extractor: a parsed passage, its topic, and the entity-like
arguments read off its tokens (named entities, noun chunks, names after "of", the title standing
for pronouns and "the journal")."""

from __future__ import annotations

import re
from typing import Any

from hopgraph.text.ner import strip_disambiguator
from hopgraph.text.triples.common import _SUBJECTS, Triple, _norm

# Subject pronouns that stand for the passage's title (possessives: "his father was ...").
_TOPIC_PRONOUNS = frozenset({"he", "she", "it", "his", "her", "its"})
# "they" stands for a plural title only ("The Beatles", "Brooklyn Nets"; not "Botany").
_PLURAL_PRONOUNS = frozenset({"they", "their"})
# Tokens dropped from the start and the end of an argument.
_LEAD_TAGS = frozenset({"DT", "PDT", "IN", "POS", "``", "''", '"', "'", ",", ":", ".", "HYPH"})
_TRAIL_TAGS = frozenset({"POS", "``", "''", '"', "'", ",", ":", ".", "HYPH", "-LRB-"})
# "the city of Toronto" is Toronto: nouns naming a kind of place or body by the name after "of".
_NAMED_BY_OF = frozenset(
    (
        "city town village state county province country region island islands kingdom republic "
        "district municipality borough commune parish township territory empire duchy "
        "principality"
    ).split()
)
_JUNK_ARGS = frozenset({"jr", "jr.", "sr", "sr.", "inc", "inc.", "ltd", "ltd.", "co.", "etc."})
_PARENTHESIS = re.compile(r"\s*\([^()]*\)")


def passage_topic(title: str | None, text: str) -> str | None:
    """What a passage is about: its title without the disambiguator ("Kiss and Tell (1945
    film)" → "Kiss and Tell"), or the part before a comma when only that part is in the text
    ("Santa Monica, California" → "Santa Monica")."""
    topic = _norm(strip_disambiguator(title)) if title else ""
    if not topic:
        return None
    if "," in topic and topic not in text:
        head = topic.split(",")[0].strip()
        if head and re.search(rf"\b{re.escape(head)}\b(?!,)", text):
            return head
    return topic


class _Arguments:
    """A parsed passage (a spaCy ``Doc``) about ``topic`` (its title or None): the state the
    layers of :class:`~hopgraph.text.triples.passage._Passage` share, and the arguments."""

    def __init__(self, doc: Any, topic: str | None):
        self.doc = doc
        self.text = doc.text
        self.topic = topic
        # nouns that stand for the topic after "the"/"this": the title's words, and the nouns
        # the passage calls it ("X is a peer-reviewed journal" → "the journal")
        self.topic_nouns: set[str] = set()
        if topic is not None:
            self.topic_nouns = {w.lower() for w in topic.split()}
        self.ent_of: list[Any] = [None] * len(doc)
        for ent in doc.ents:
            for i in range(ent.start, ent.end):
                self.ent_of[i] = ent
        self.chunk_of: list[Any] = [None] * len(doc)
        for chunk in doc.noun_chunks:
            for i in range(chunk.start, chunk.end):
                self.chunk_of[i] = chunk
        self.out: list[Triple] = []
        self.covered: list[tuple[int, int]] = []  # character ranges of the arguments taken
        # whether the passage is about a person (for "Maia" alone standing for "Maia Hirasawa")
        self.topic_is_person = False
        last = topic.split()[-1] if topic else ""
        self.topic_is_plural = last.endswith("s") and not last.endswith("ss") and last.isalpha()
        if topic is not None:
            labels = {e.label_ for e in doc.ents if e.text == topic}
            self.topic_is_person = labels == {"PERSON"} or (
                not labels and any(t.lower_ in ("he", "she") and t.dep_ in _SUBJECTS for t in doc)
            )

    # -- arguments ----------------------------------------------------------------------------
    def span(self, tok: Any) -> tuple[int, int] | None:
        """Token range [start, end) of the entity-like span headed by ``tok``."""
        doc = self.doc
        ent = self.ent_of[tok.i]
        if ent is not None:
            start, end = ent.start, ent.end
            # a proper-noun sequence the NER cut short: "Annika" + entity "Norlin"
            while (
                start > 0 and doc[start - 1].dep_ == "compound" and doc[start - 1].pos_ == "PROPN"
            ):
                if not start <= doc[start - 1].head.i < end:
                    break
                start -= 1
        else:
            chunk = self.chunk_of[tok.i]
            if chunk is not None and chunk.root.i == tok.i:
                start, end = chunk.start, chunk.end
            elif chunk is not None:  # a modifier inside another noun's chunk: "Tennessee's"
                start, end = max(chunk.start, tok.left_edge.i), tok.i + 1
            else:  # a number, an adjective, ...: the token with its adjacent left modifiers
                start, end = tok.i, tok.i + 1
                for left in reversed(list(tok.lefts)):
                    if left.i != start - 1 or left.dep_ not in ("compound", "nummod", "amod"):
                        break
                    start = left.i
            # "Journal" + "of" + "Mathematical Physics": one name when both sides are proper nouns
            while tok.pos_ == "PROPN":
                nxt = self._of_propn(tok, end)
                if nxt is None:
                    break
                tok = nxt
                ent = self.ent_of[tok.i] or self.chunk_of[tok.i]
                end = max(end, ent.end if ent is not None else tok.i + 1)
        while start < end:
            first = doc[start]
            if first.tag_ in _LEAD_TAGS or first.is_space:
                start += 1
            elif first.tag_ == "PRP$" and (first.is_lower or first.is_sent_start):
                # "his roommate", "Its coast", not "Our World"
                start += 1
            elif first.tag_ == "RB" and start + 1 < end and doc[start + 1].tag_ != "HYPH":
                start += 1  # "inherently a time", not "back-up singer"
            else:
                break
        while end > start and (doc[end - 1].tag_ in _TRAIL_TAGS or doc[end - 1].is_space):
            end -= 1
        return (start, end) if start < end else None

    def _of_propn(self, tok: Any, end: int) -> Any:
        doc = self.doc
        if end + 1 >= len(doc) or doc[end].lower_ != "of" or doc[end].head.i != tok.i:
            return None
        nxt = doc[end + 1]
        if not (nxt.is_title or nxt.lower_ == "the"):
            return None
        for pobj in doc[end].children:
            if pobj.dep_ == "pobj" and pobj.pos_ == "PROPN":
                return pobj
        return None

    def arg(self, tok: Any, *, subject: bool = False) -> str | None:
        """The argument headed by ``tok``, or None when it is not entity-like."""
        if tok.pos_ == "PRON" or tok.tag_ in ("PRP", "PRP$"):
            if subject and tok.lower_ in _TOPIC_PRONOUNS:
                return self.topic
            if subject and tok.lower_ in _PLURAL_PRONOUNS and self.topic_is_plural:
                return self.topic
            return None
        name = self.named_by_of(tok) or self._appositive_name(tok)
        if name is not None:
            return self.arg(name, subject=subject)
        if self.topic is not None and self._is_topic_noun(tok):
            return self.topic
        if self.topic is not None and self._is_topic_person(tok):
            return self.topic
        bounds = self.span(tok)
        if bounds is None:
            return None
        tokens = self.doc[bounds[0] : bounds[1]]
        self.covered.append((tokens.start_char, tokens.end_char))
        if self.topic is not None and self._in_title_mention(tokens):
            return self.topic
        if all(t.is_stop or t.is_punct or t.pos_ == "PRON" for t in tokens):
            return None
        text = tokens.text
        if "(" in text:  # "Twelve (formerly seven) issues", "CGTU (United General ..."
            text = _PARENTHESIS.sub("", text).split("(")[0]
        text = _norm(text)
        if text.lower() in _JUNK_ARGS:
            return None
        return text if len(text) > 1 or text.isalnum() else None

    def _in_title_mention(self, tokens: Any) -> bool:
        """Whether ``tokens`` lie in a mention of the title the parse cut short ("Culture" of
        "Culture, Society and Masculinities") or that starts one token earlier ("The")."""
        text, topic = self.text, self.topic
        starts = [tokens.start_char]
        if tokens.start > 0:
            starts.append(self.doc[tokens.start - 1].idx)
        for start in starts:
            end = start + len(topic)  # type: ignore[arg-type]
            if (
                end >= tokens.end_char
                and text.startswith(topic, start)  # type: ignore[arg-type]
                and (end == len(text) or not text[end].isalnum())
            ):
                return True
        return False

    def _appositive_name(self, tok: Any) -> Any:
        """The name in "His wife, Anna Murray, ..." (``tok`` = "wife"), or None."""
        if tok.pos_ != "NOUN" or self.ent_of[tok.i] is not None:
            return None
        for c in tok.rights:
            ent = self.ent_of[c.i]
            if c.dep_ == "appos" and (c.pos_ == "PROPN" or ent is not None):
                if not self.in_parentheses(c) and not (ent and ent.label_ in ("GPE", "LOC")):
                    return c  # not "... district, Tamil Nadu": a place after a place
        return None

    def named_by_of(self, tok: Any) -> Any:
        """The name in "the city of Toronto" (``tok`` = "city"), or None."""
        if tok.pos_ != "NOUN" or tok.lower_ not in _NAMED_BY_OF or self.ent_of[tok.i]:
            return None
        lefts = list(tok.lefts)
        if not lefts or lefts[0].lower_ != "the":  # "the (U.S.) state of", not "a township of"
            return None
        if not all(t.pos_ in ("PROPN", "ADJ") for t in lefts[1:]):
            return None
        for prep in tok.children:
            if prep.dep_ == "prep" and prep.lower_ == "of" and prep.i == tok.i + 1:
                for pobj in prep.children:
                    if pobj.dep_ == "pobj" and pobj.pos_ == "PROPN":
                        return pobj
        return None

    def _is_topic_person(self, tok: Any) -> bool:
        """Whether ``tok`` is a person's first or last name alone ("Maia", "Hirasawa") in a
        passage about that person ("Maia Hirasawa")."""
        ent = self.ent_of[tok.i]
        if not self.topic_is_person or ent is None or ent.label_ != "PERSON" or len(ent) != 1:
            return False
        words = self.topic.split()  # type: ignore[union-attr]
        return 1 < len(words) <= 4 and tok.text in (words[0], words[-1]) and tok.is_title

    def _is_topic_noun(self, tok: Any) -> bool:
        """Whether ``tok`` is "the journal" in a passage titled "Journal of ..." or that says
        "X is a journal"."""
        if tok.pos_ not in ("NOUN", "PROPN") or tok.lower_ not in self.topic_nouns:
            return False
        ent = self.ent_of[tok.i]
        if ent is not None and not (ent.end == tok.i + 1 and ent.start >= tok.i - 1):
            return False
        lefts = list(tok.lefts)
        return len(lefts) == 1 and lefts[0].lower_ in ("the", "this")

    def args(self, tok: Any, *, subject: bool = False) -> list[str]:
        """``tok``'s argument and those of its conjuncts ("A, B and C"), except conjuncts in
        parentheses and those inside a title mention ("Culture, Society and Masculinities")."""
        out: list[str] = []
        covered = -1
        for t in (tok, *tok.conjuncts):
            if t.idx < covered or (t is not tok and self.in_parentheses(t)):
                continue
            a = self.arg(t, subject=subject)
            if a is None or a in out:
                continue
            if a == self.topic:
                covered = self.text.find(a, t.idx - len(a)) + len(a)
            out.append(a)
        return out

    def in_parentheses(self, tok: Any) -> bool:
        for t in reversed(self.doc[max(0, tok.i - 80) : tok.i]):
            if t.text == ")":
                return False
            if t.text == "(":
                return True
        return False
