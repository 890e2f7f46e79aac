"""The last layer of the spaCy extractor: the patterns outside a clause (appositives, a
person's life dates, the fallback for named entities no pattern reached) and the pass over the
whole passage that runs every pattern."""

from __future__ import annotations

import re
from typing import Any

from hopgraph.text.triples.clauses import _Clauses
from hopgraph.text.triples.common import _SUBJECTS, _VERBS, Triple, _norm

# Entity labels not worth a fallback triple, and the dependencies a fallback path follows.
_NO_FALLBACK = frozenset({"NORP", "ORDINAL", "CARDINAL", "PERCENT", "QUANTITY", "MONEY", "TIME"})
_FALLBACK_PATH = frozenset(
    {"pobj", "prep", "agent", "dobj", "attr", "oprd", "dative", "npadvmod", "advmod"}
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
)
_DATE = re.compile(
    rf"(?:\d{{1,2}}\s+{_MONTH}\s+\d{{3,4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{3,4}}"
    rf"|{_MONTH}\s+\d{{3,4}}|(?<![\d,.])\d{{3,4}}(?![\d,.]))"
)
_RANGE = re.compile(r"^\s*(?:[-–—]|to)\s*$")


class _Passage(_Clauses):
    """Triples of one parsed passage (a spaCy ``Doc``) about ``topic`` (its title or None)."""

    # -- patterns outside clauses -------------------------------------------------------------
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
