"""Synthetic training questions made from a corpus alone: no LLM, no evaluation question.

Each question's gold passages are known by construction. Three kinds, all templates over the
passages' titles and first sentences:

- ``sentence``: a sentence of a passage (not its first when it has others), as a cloze-style
  query in the manner of the inverse cloze task (Lee et al. 2019); half the time the
  passage's title is taken out of it, so that the content must match, not the name.
- ``bridge`` (two hops along the corpus's title links): passage A names the title of passage B;
  the sentence of A that names it, with B's title replaced by B's *description* (from B's
  first sentence, "B is a Frankish emperor ..." -> "the Frankish emperor ..."), asks for both:
  gold = {A, B}. A leading pronoun becomes A's title, so the question names its first hop as
  real multi-hop questions do ("Who did Ermengarde of Tours marry?" style, in statement form).
- ``comparison``: two passages whose descriptions end in the same noun ("... film",
  "... singer"): "Which film came first, X or Y?"; gold = {X, Y}.

:func:`synthetic_dataset` draws up to ``n`` of them from a corpus with a fixed seed.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

from hopgraph.corpus import Corpus, Dataset, Question
from hopgraph.text.sentences import sentences

_DESCRIPTION = re.compile(
    r"\b(?:is|was|are|were)\s+(?:a|an|the|one of the)\s+([^.;:()]{3,160}?)"
    r"(?=[.;:(]|,|\s(?:that|which|who|whose|where|from|in|of|by|for|and|with|on|at)\s"
    r"|\s\w+ed\s|$)"  # ... or before a participle ("company founded by")
)
_PRONOUN = re.compile(r"^(He|She|It|They|His|Her|Its|Their)\b")
_POSSESSIVE = {"His", "Her", "Its", "Their"}
_COMPARE = ("came first", "is older", "was earlier", "is more recent")
KINDS = ("sentence", "bridge", "comparison")
SYNTHETIC_SUFFIX = "-synthetic"  # the dataset name of synthetic questions: "{name}-synthetic"


def description(title: str, text: str, max_words: int = 10) -> str | None:
    """What the first sentence says the passage's subject is ("American film director"), or
    None when it does not say it in the form "X is/was a/an/the ..."."""
    first = sentences(text)[:1]
    if not first or not title or not first[0].startswith(title.split()[0]):
        return None  # not an encyclopedia-style "Title is a ..." opening
    m = _DESCRIPTION.search(first[0])
    if m is None:
        return None
    words = m.group(1).split()[:max_words]
    if not words or title.lower() in m.group(1).lower():
        return None
    return " ".join(words).rstrip(",")


def _words(n: int, s: str) -> bool:
    return 6 <= len(s.split()) <= n


def _title_mentions(corpus: Corpus, max_words: int = 6) -> dict[int, list[tuple[int, str]]]:
    """For each row A: the rows B (≠ A) whose title (≥ 2 words or ≥ 5 letters) A's text names."""
    titles: dict[str, list[int]] = defaultdict(list)
    for j, p in enumerate(corpus):
        t = p.title.strip()
        if t and (" " in t or len(t) >= 5):
            titles[t].append(j)
    out: dict[int, list[tuple[int, str]]] = {}
    for i, p in enumerate(corpus):
        toks = p.text.replace(",", " ,").replace(".", " .").split()
        found: dict[int, str] = {}
        for a in range(len(toks)):
            for b in range(a + 1, min(len(toks), a + max_words) + 1):
                t = " ".join(toks[a:b])
                for j in titles.get(t, ()):
                    if j != i and corpus[j].title != p.title:
                        found.setdefault(j, t)
        if found:
            out[i] = list(found.items())
    return out


def _sentence_question(p_title: str, text: str, rng: random.Random) -> str | None:
    sents = [s for s in sentences(text) if _words(40, s)]
    if not sents:
        return None
    s = rng.choice(sents[1:] or sents)
    if p_title and rng.random() < 0.5 and p_title in s:
        s = s.replace(p_title, "it")
    return s


def _bridge_question(a_title: str, a_text: str, b_title: str, b_desc: str) -> str | None:
    for s in sentences(a_text):
        if b_title not in s or not _words(45, s):
            continue
        m = _PRONOUN.match(s)
        if m:
            s = (f"{a_title}'s" if m.group(1) in _POSSESSIVE else a_title) + s[m.end() :]
        s = s.replace(b_title, f"the {b_desc}", 1)
        return s if a_title in s else f"In {a_title}, {s[0].lower()}{s[1:]}"
    return None


def synthetic_questions(
    corpus: Corpus, n: int, *, seed: int = 0, shares: tuple[float, float, float] = (0.4, 0.45, 0.15)
) -> list[Question]:
    """Up to ``n`` questions: ``shares`` of them sentence, bridge and comparison questions
    (fewer when the corpus offers fewer); ids ``syn-{kind}-{k}``."""
    rng = random.Random(seed)
    descs = {i: description(p.title, p.text) for i, p in enumerate(corpus)}
    want = [round(n * s) for s in shares]
    out: list[Question] = []

    seen: set[str] = set()
    for _ in range(3):  # up to three passes: another sentence of each passage per pass
        rows = list(range(len(corpus)))
        rng.shuffle(rows)
        for i in rows:
            if len(out) >= want[0]:
                break
            q = _sentence_question(corpus[i].title, corpus[i].text, rng)
            if q and q not in seen:
                seen.add(q)
                out.append(_question("sentence", len(out), q, [corpus[i].id]))

    mentions = _title_mentions(corpus)
    pairs = [(a, b, t) for a, bs in mentions.items() for b, t in bs if descs[b]]
    rng.shuffle(pairs)
    made = 0
    for a, b, t in pairs:
        if made >= want[1]:
            break
        q = _bridge_question(corpus[a].title, corpus[a].text, t, descs[b] or "")
        if q:
            out.append(_question("bridge", len(out), q, [corpus[a].id, corpus[b].id]))
            made += 1

    by_noun: dict[str, list[int]] = defaultdict(list)
    for i, d in descs.items():
        noun = d.split()[-1] if d else ""
        if noun.isalpha() and noun.islower() and not noun.endswith(("ed", "ing", "ly")):
            if len(corpus[i].title.split()) <= 6:  # a name, not a sentence-like title
                by_noun[noun].append(i)
    groups = [g for g in by_noun.values() if len(g) >= 2]
    for _ in range(want[2] if groups else 0):
        g = rng.choice(groups)
        x, y = rng.sample(g, 2)
        noun = (descs[x] or "").split()[-1]
        q = f"Which {noun} {rng.choice(_COMPARE)}, {corpus[x].title} or {corpus[y].title}?"
        out.append(_question("comparison", len(out), q, [corpus[x].id, corpus[y].id]))
    return out


def _question(kind: str, k: int, text: str, gold: list[str]) -> Question:
    return Question(id=f"syn-{kind}-{k}", text=text, gold=tuple(gold), metadata={"kind": kind})


def synthetic_dataset(ds: Dataset, n: int, *, seed: int = 0) -> Dataset:
    """``ds``'s corpus with :func:`synthetic_questions` in place of its questions."""
    questions = synthetic_questions(ds.corpus, n, seed=seed)
    return Dataset(f"{ds.name}{SYNTHETIC_SUFFIX}", ds.corpus, questions)


__all__ = [
    "KINDS",
    "SYNTHETIC_SUFFIX",
    "description",
    "sentences",
    "synthetic_dataset",
    "synthetic_questions",
]
