"""The second layer of the spaCy extractor: predicates, and the patterns of a clause headed
by a verb or a copula (objects, prepositions, relational nouns, relative and participial
clauses, conjunctions fanned out)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hopgraph.text.triples.arguments import _Arguments
from hopgraph.text.triples.common import _SUBJECTS, _VERBS, _norm

_OBJECTS = ("dobj", "attr", "dative", "oprd")
_RELATIVE_TAGS = ("WDT", "WP")


class _Clauses(_Arguments):
    """Predicates and clauses of a parsed passage; the triples found go to ``self.out``."""

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
