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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError
from hopgraph.text.ner import strip_disambiguator
from hopgraph.text.spacy_ner import SpacyPipeline

Triple = tuple[str, str, str]  # (subject, predicate, object), whitespace-normalised, non-empty

# Components triples do not need (the parser, tagger, attribute ruler, lemmatizer and NER stay).
_NOT_NEEDED = ("senter", "textcat", "textcat_multilabel", "spancat", "entity_linker")

# Subject pronouns that stand for the passage's title (possessives: "his father was ...").
_TOPIC_PRONOUNS = frozenset({"he", "she", "it", "his", "her", "its"})
# "they" stands for a plural title only ("The Beatles", "Brooklyn Nets"; not "Botany").
_PLURAL_PRONOUNS = frozenset({"they", "their"})
_SUBJECTS = ("nsubj", "nsubjpass")
_OBJECTS = ("dobj", "attr", "dative", "oprd")
_RELATIVE_TAGS = ("WDT", "WP")
_VERBS = ("VERB", "AUX")
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
# Entity labels not worth a fallback triple, and the dependencies a fallback path follows.
_NO_FALLBACK = frozenset({"NORP", "ORDINAL", "CARDINAL", "PERCENT", "QUANTITY", "MONEY", "TIME"})
_FALLBACK_PATH = frozenset(
    {"pobj", "prep", "agent", "dobj", "attr", "oprd", "dative", "npadvmod", "advmod"}
)
_JUNK_ARGS = frozenset({"jr", "jr.", "sr", "sr.", "inc", "inc.", "ltd", "ltd.", "co.", "etc."})
_PARENTHESIS = re.compile(r"\s*\([^()]*\)")
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
_DATE = re.compile(
    rf"(?:\d{{1,2}}\s+{_MONTH}\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{3,4}}"
    rf"|{_MONTH}\s+\d{{3,4}}|(?<![\d,.])\d{{3,4}}(?![\d,.]))"
)
_RANGE = re.compile(r"^\s*(?:[-–—]|to)\s*$")


def _norm(text: str) -> str:
    return " ".join(text.split())


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


class _Passage:
    """Triples of one parsed passage (a spaCy ``Doc``) about ``topic`` (its title or None)."""

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

    # -- predicates ---------------------------------------------------------------------------
    @staticmethod
    def is_copula(v: Any) -> bool:
        return v.lemma_ == "be"

    @staticmethod
    def is_passive(v: Any) -> bool:
        if v.tag_ != "VBN":
            return False
        if v.dep_ in ("acl", "advcl"):
            return True
        return any(c.dep_ in ("auxpass", "nsubjpass") for c in v.children)

    def predicate(self, v: Any) -> str:
        if self.is_copula(v):
            base = "is"
        elif self.is_passive(v):
            base = v.lower_
        else:
            base = v.lemma_.lower()
        words = []
        if any(c.dep_ == "neg" for c in v.children):
            words.append("not")
        words.append(base)
        words.extend(c.lower_ for c in v.children if c.dep_ == "prt")
        if v.dep_ == "xcomp" and v.head.pos_ in _VERBS and self._to(v):  # "begin to study"
            return _norm(f"{self.predicate(v.head)} to {' '.join(words)}")
        return _norm(" ".join(words))

    @staticmethod
    def _to(v: Any) -> bool:
        return any(c.dep_ == "aux" and c.lower_ == "to" for c in v.children)

    @staticmethod
    def noun_predicate(noun: Any) -> str:
        """A relational noun with its compounds and plain adjectives: "first president"."""
        start = noun.i
        for left in reversed(list(noun.lefts)):
            plain = left.dep_ == "compound" or (left.dep_ == "amod" and left.pos_ == "ADJ")
            if left.i != start - 1 or not plain or next(left.children, None) is not None:
                break
            start = left.i
        words = [t.lower_ for t in noun.doc[start : noun.i]] + [noun.lemma_.lower()]
        return _norm(" ".join(words))

    # -- clauses ------------------------------------------------------------------------------
    def anchor(self, noun: Any) -> list[str]:
        """What a clause attached to ``noun`` is about: the subject of a copula whose attribute
        is the common noun ``noun`` ("X is a journal published by P" → X), the head of an
        appositive, else ``noun``."""
        if noun.dep_ == "attr" and noun.pos_ == "NOUN" and self.is_copula(noun.head):
            subs = self.subjects(noun.head)
            if subs:
                return subs
        if noun.dep_ == "appos":
            noun = noun.head
        return self.args(noun, subject=True)

    def subjects(self, v: Any, depth: int = 0) -> list[str]:
        if depth > 8:
            return []
        subs = [c for c in v.children if c.dep_ in _SUBJECTS]
        if subs:
            out: list[str] = []
            for s in subs:
                if s.tag_ in _RELATIVE_TAGS:  # "the singer who ...": the singer
                    found = self.anchor(v.head) if v.dep_ == "relcl" else []
                else:
                    found = self.args(s, subject=True)
                out.extend(a for a in found if a not in out)
            return out
        if any(c.dep_ == "expl" for c in v.children):
            return []
        if v.dep_ == "conj" and v.head.pos_ in _VERBS:  # "born in A and died in B"
            return self.subjects(v.head, depth + 1)
        if v.dep_ == "xcomp":  # "began to study"; "asked Ann to join": object control
            objs = [c for c in v.head.children if c.dep_ == "dobj" and c.pos_ != "NOUN"]
            if objs and self._to(v):
                return self.args(objs[0], subject=True)
            return self.subjects(v.head, depth + 1)
        if v.dep_ == "advcl" and v.tag_ in ("VBN", "VBG"):  # "Born in Paris, he ..."
            return self.subjects(v.head, depth + 1)
        if v.dep_ in ("acl", "relcl") and v.head.pos_ in ("NOUN", "PROPN"):
            return self.anchor(v.head)
        return []

    def emit(self, subjects: Iterable[str], predicate: str, objects: Iterable[str]) -> bool:
        objects = list(objects)
        done = False
        for s in subjects:
            for o in objects:
                if s.lower() != o.lower():
                    self.out.append((s, predicate, o))
                    done = True
        return done

    def noun_object(
        self, subjects: list[str], pred: str, noun: Any, *, copula: bool, own: bool = True
    ) -> None:
        """``noun`` as the object of ``pred``, and the prepositions ``noun`` takes. A common
        noun with a prepositional object is relational: "is the mother of Y" → ``"mother
        of"``, "received a degree from Z" → ``"receive degree from"``, "published on behalf
        of W" → ``"published on behalf of"``, and the bare noun ("mother") is then not an
        object. With ``own``, an entity's prepositions make it a subject ("Jan Solovej from
        the University of Copenhagen" → (Jan Solovej, "from", ...))."""
        obj = self.arg(noun)
        name = self.named_by_of(noun)
        if name is not None:
            noun = name
        bounds = self.span(noun)
        end = bounds[1] if bounds else noun.i + 1
        relational = False
        common = noun.pos_ == "NOUN" and self.ent_of[noun.i] is None
        for prep in noun.children:
            if prep.dep_ != "prep" or prep.i < end or self.ent_of[prep.i] is not None:
                continue
            if common:
                rel = self.noun_predicate(noun)
                p = f"{rel} {prep.lower_}" if copula else f"{pred} {rel} {prep.lower_}"
                relational |= self.emit(subjects, p, self.pobjs(prep))
            elif own and obj is not None:
                self.emit([obj], prep.lower_, self.pobjs(prep))
        if obj is not None and not (relational and " " not in obj):
            self.emit(subjects, pred, [obj])
            if copula and subjects and subjects[0] == self.topic and common:
                self.topic_nouns.add(noun.lower_)

    def pobjs(self, prep: Any) -> list[str]:
        out = []
        for c in prep.children:
            if c.dep_ == "pobj":
                out.extend(self.args(c))
        return out

    def prepositional(self, subjects: list[str], pred: str, prep: Any) -> None:
        """``pred`` + ``prep`` + its objects ("born in Paris", "published by D")."""
        p = f"{pred} {prep.lower_}"
        for c in prep.children:
            if c.dep_ == "pobj":
                for o in (c, *c.conjuncts):
                    if o is c or not self.in_parentheses(o):
                        self.noun_object(subjects, p, o, copula=False, own=False)
            elif c.dep_ == "pcomp" and c.pos_ == "VERB":  # "known for playing Hamlet"
                for o in c.children:
                    if o.dep_ == "dobj":
                        self.emit(subjects, f"{p} {c.lemma_.lower()}", self.args(o))

    def clause(self, v: Any) -> None:
        """The triples of the clause headed by the verb (or copula) ``v``."""
        subjects = self.subjects(v)
        if not subjects:
            return
        copula = self.is_copula(v)
        pred = self.predicate(v)
        if copula and self._relational_copula(v):
            return
        children = list(v.children)
        if not any(c.dep_ in (*_OBJECTS, "prep", "agent") for c in children):
            # "born and raised in X": the first verb takes the prepositions of the second
            doc = self.doc
            for c in children:
                if (
                    c.dep_ == "conj"
                    and c.pos_ == "VERB"
                    and c.i == v.i + 2
                    and doc[v.i + 1].dep_ == "cc"
                ):
                    children.extend(g for g in c.children if g.dep_ == "prep")
        for c in children:
            dep = c.dep_
            if dep in _OBJECTS:
                if c.tag_ in _RELATIVE_TAGS and v.dep_ == "relcl":  # "the album that he recorded"
                    self.emit(subjects, pred, self.args(v.head))
                    continue
                for o in (c, *c.conjuncts):
                    if o is c or not self.in_parentheses(o):
                        self.noun_object(subjects, pred, o, copula=copula and dep == "attr")
            elif dep in ("prep", "agent"):
                self.prepositional(subjects, pred, c)
            elif dep == "acomp":  # "is famous for"
                for prep in c.children:
                    if prep.dep_ == "prep":
                        self.prepositional(subjects, f"{pred} {c.lower_}", prep)
            elif dep == "advmod" and c.lower_ == "where" and v.dep_ == "relcl":
                self.emit(subjects, f"{pred} in", self.args(v.head))

    def _relational_copula(self, v: Any) -> bool:
        """Copulas with a relational subject: "His father was Z", "D's wife was Z", "the capital
        of F is Z", and in a passage about T "the current editor is Z" → (T / D / F, "father" /
        "wife" / ..., Z). Whether any triple came of it."""
        attrs = [c for c in v.children if c.dep_ == "attr"]
        if not attrs:
            return False
        done = False
        for s in v.children:
            if s.dep_ != "nsubj" or s.pos_ not in ("NOUN", "PROPN") or self.ent_of[s.i]:
                continue
            if self.topic is not None and self.arg(s, subject=True) == self.topic:
                continue  # "The Botanical Garden of the University of Vienna is ..."
            owners = [c for c in s.children if c.dep_ == "poss"]
            owners += [
                g
                for c in s.children
                if c.dep_ == "prep" and c.lower_ == "of"
                for g in c.children
                if g.dep_ == "pobj"
            ]
            if owners:
                subjects = self.args(owners[0], subject=True)
            elif (
                self.topic is not None
                and s.pos_ == "NOUN"
                and any(c.dep_ == "det" and c.lower_ == "the" for c in s.children)
                and all(a.pos_ == "PROPN" or self.ent_of[a.i] is not None for a in attrs)
            ):
                subjects = [self.topic]
            else:
                continue
            rel = self.noun_predicate(s)
            for a in attrs:
                done |= self.emit(subjects, rel, self.args(a))
        return done

    def appositive(self, a: Any) -> None:
        """Appositives: "D, the son of Y, ..." → (D, "son of", Y); "D, an abolitionist" → (D,
        "is", "abolitionist"); "his wife, Anna" → (title, "wife", Anna); "the singer, Adele" →
        (Adele, "is", "singer"). Appositives in lists and parentheses are skipped."""
        head = a.head
        if self.in_parentheses(a) or self.in_parentheses(head):
            return
        if head.dep_ == "conj" or any(c.dep_ == "conj" for c in (*head.children, *a.children)):
            return
        left = a.left_edge.i
        if left == 0 or self.doc[left - 1].text != ",":  # "Lennon -- McCartney"
            return
        head_ent, a_ent = self.ent_of[head.i], self.ent_of[a.i]
        if head_ent is not None and a_ent is not None and head_ent.label_ == a_ent.label_ == "GPE":
            self.emit(self.args(head), "is in", [x for x in [self.arg(a)] if x])  # "Lyon, France"
            return
        entity_like = a.pos_ == "PROPN" or self.ent_of[a.i] is not None
        if head.pos_ == "NOUN" and self.ent_of[head.i] is None and entity_like:
            owners = [c for c in head.children if c.dep_ == "poss"]
            obj = self.arg(a)
            if obj is None:
                return
            if owners:
                self.emit(self.args(owners[0], subject=True), self.noun_predicate(head), [obj])
            else:
                subj = self.arg(head, subject=True)
                self.emit([obj], "is", [subj] if subj else [])
            return
        subj = self.arg(head, subject=True)
        if subj is not None:
            self.noun_object([subj], "is", a, copula=True)

    @staticmethod
    def _has_subject(v: Any) -> bool:
        """Whether ``v`` (or the verb it is coordinated with) has a subject of its own, even
        one no argument was made of ("They grow in Europe" about "Botany")."""
        for _ in range(4):
            if any(c.dep_ in (*_SUBJECTS, "expl") for c in v.children):
                return True
            if v.dep_ != "conj":
                return False
            v = v.head
        return False

    def fallback(self, ent: Any, used: set[str], covered: list[tuple[int, int]]) -> None:
        """A named entity no pattern reached becomes the object of the nearest verb above it,
        the prepositions, nouns and adverbs on the way making the predicate ("is a state on
        the east coast of Australia" → (S, "state on coast of", "Australia"); "located south of
        W" → (S, "located south of", W)), or of the name it hangs from by a preposition
        ("the Guiana Highlands of Venezuela" → ("Guiana Highlands", "of", "Venezuela")). Only
        through objects, prepositions, adverbs and conjunctions: an entity modifying a noun
        ("Plato's Phaidon") is left alone."""
        root = ent.root
        if root.pos_ not in ("PROPN", "NOUN", "NUM") or ent.label_ in _NO_FALLBACK:
            return
        if ent.label_ == "DATE" and not any(c.isdigit() for c in ent.text):
            return  # "monthly", "today"
        if any(a <= ent.start_char and ent.end_char <= b for a, b in covered):
            return  # inside an argument: "Order of Canada" in "Officer of the Order of Canada"
        obj = self.arg(root)
        if obj is None or obj == self.topic or obj in used:
            return
        words: list[str] = []
        top_is_prep = False
        tok = root
        for _ in range(10):
            if tok.dep_ == "conj":  # a list's members share the role of its first member
                tok = tok.head
                if tok.pos_ in _VERBS:
                    break
                continue
            if tok.dep_ not in _FALLBACK_PATH or tok.head.i == tok.i:
                return
            tok = tok.head
            if tok.pos_ in _VERBS:
                break
            if tok.pos_ == "PROPN":  # "the Guiana Highlands of Venezuela"
                name = self.arg(tok)
                if len(words) == 1 and top_is_prep and name is not None and name != obj:
                    self.emit([name], words[0], [obj])
                return
            if tok.pos_ == "ADP":
                words.append(tok.lower_)
                top_is_prep = True
            elif tok.pos_ in ("NOUN", "ADV"):
                words.append(tok.lemma_.lower() if tok.pos_ == "NOUN" else tok.lower_)
                top_is_prep = False
        else:
            return
        if tok.dep_ in ("aux", "auxpass"):
            return
        subjects = self.subjects(tok)
        if not subjects and self.topic is not None and not self._has_subject(tok):
            subjects = [self.topic]  # "Located in X, ..." / "... is located in Y"
        pred = self.predicate(tok)
        if pred == "is" and words and not top_is_prep:
            pred = ""  # "is a state on the coast of A" → "state on coast of"
        pred = " ".join([pred, *reversed(words)]).strip()
        self.emit([s for s in subjects if s != obj], pred, [obj])

    def life_dates(self, paren: Any) -> None:
        """A person's parenthesis: "Peter Appleyard (26 August 1928 – 17 July 2013)" → (P,
        "born", "26 August 1928"), (P, "died", "17 July 2013"); "(born 5 May 1950 in Lyon)",
        "(Civitavecchia, December 21, 1948)" → "born", "born in"."""
        doc = self.doc
        i = paren.i - 1
        if i >= 0 and doc[i].text == ",":
            i -= 1
        if i < 0:
            return
        ent = self.ent_of[i]
        if ent is not None and ent.label_ == "PERSON":
            person = self.arg(ent.root, subject=True)
        elif (
            self.topic_is_person
            and self.topic is not None
            and self._in_title_mention(doc[i : i + 1])
        ):
            person = self.topic
        else:
            return
        close = next((t for t in doc[paren.i + 1 : paren.sent.end] if t.text in "()"), None)
        if person is None or close is None or close.text != ")":
            return
        start, end = paren.idx + 1, close.idx
        content = self.text[start:end]
        dates = list(_DATE.finditer(content))
        if not dates:
            return
        died_range = len(dates) > 1 and _RANGE.match(content[dates[0].end() : dates[1].start()])
        before = content[: dates[0].start()].lower()
        if "died" in before or before.strip().startswith("d."):
            self.emit([person], "died", [_norm(dates[0].group())])
            return
        self.emit([person], "born", [_norm(dates[0].group())])
        if died_range:
            self.emit([person], "died", [_norm(dates[1].group())])
        for place in doc.ents:  # "(Civitavecchia, December 21, 1948)", "(born in Lyon, 1950)"
            if (
                place.label_ == "GPE"
                and start <= place.start_char
                and place.end_char <= start + dates[0].start()
            ):
                self.emit([person], "born in", [x for x in [self.arg(place.root)] if x])

    def triples(self) -> list[Triple]:
        for tok in self.doc:
            if tok.pos_ in _VERBS and tok.dep_ not in ("aux", "auxpass"):
                self.clause(tok)
            elif tok.dep_ == "appos" and tok.head.pos_ in ("NOUN", "PROPN"):
                self.appositive(tok)
            elif tok.text == "(":
                self.life_dates(tok)
        used = {x for t in self.out for x in (t[0], t[2])}
        covered = list(self.covered)
        if self.topic is not None:  # mentions of the title
            text, topic, at = self.text, self.topic, self.text.find(self.topic)
            while at >= 0:
                covered.append((at, at + len(topic)))
                at = text.find(topic, at + 1)
        for ent in self.doc.ents:
            self.fallback(ent, used, covered)
        seen: set[Triple] = set()
        out = []
        for t in self.out:
            t = (_norm(t[0]), _norm(t[1]), _norm(t[2]))
            if all(t) and t not in seen:
                seen.add(t)
                out.append(t)
        return out


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


# -- HippoRAG OpenIE files --------------------------------------------------------------------


def _triple(raw: Any) -> Triple | None:
    if not isinstance(raw, list | tuple) or len(raw) != 3:
        return None
    if not all(isinstance(x, str) for x in raw):
        return None
    s, p, o = (_norm(x) for x in raw)
    return (s, p, o) if s and p and o else None


def _aligned(doc: dict[str, Any], text: str, title: str) -> bool:
    if title and doc.get("title") == title:
        return True
    start = _norm(text)[:60]
    for key in ("passage", "text"):
        value = doc.get(key)
        if isinstance(value, str) and start in _norm(value):
            return True
    return False


def load_openie(
    path: str | Path, texts: Sequence[str], titles: Sequence[str]
) -> tuple[list[list[Triple]], int]:
    """HippoRAG OpenIE file -> triples per passage aligned with the given corpus order;
    returns (triples, number_of_malformed_skipped).

    The file is ``{"docs": [...]}`` or a bare list of docs, doc ``i`` being passage ``i``: its
    ``"title"`` equals ``titles[i]`` or its ``"passage"``/``"text"`` contains the start of
    ``texts[i]``. Triples that are not three non-empty strings are skipped and counted;
    strings are whitespace-normalised and each passage's triples deduplicated in order.
    """
    path = Path(path)
    if len(titles) != len(texts):
        raise ConfigError(f"{len(titles)} titles for {len(texts)} texts")
    try:
        with path.open(encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read OpenIE file {path}: {err}") from err
    except json.JSONDecodeError as err:
        raise ConfigError(f"OpenIE file {path} is not valid JSON: {err}") from err
    docs = data.get("docs") if isinstance(data, dict) else data
    if not isinstance(docs, list):
        raise ConfigError(f"OpenIE file {path}: expected a list of docs or {{'docs': [...]}}")
    if len(docs) != len(texts):
        raise ConfigError(
            f"OpenIE file {path} has {len(docs)} docs but the corpus has {len(texts)} passages"
        )
    out: list[list[Triple]] = []
    malformed = 0
    for i, (doc, text, title) in enumerate(zip(docs, texts, titles, strict=True)):
        if not isinstance(doc, dict):
            raise ConfigError(f"OpenIE file {path}: doc {i} is not an object")
        if not _aligned(doc, text, title):
            raise ConfigError(
                f"OpenIE file {path} does not match the corpus: doc {i} (title"
                f" {doc.get('title')!r}) is not passage {i} (title {title!r})"
            )
        raw = doc.get("extracted_triples") or []
        if not isinstance(raw, list):
            raise ConfigError(f"OpenIE file {path}: doc {i} 'extracted_triples' is not a list")
        triples: list[Triple] = []
        for r in raw:
            t = _triple(r)
            if t is None:
                malformed += 1
            elif t not in triples:
                triples.append(t)
        out.append(triples)
    return out, malformed
