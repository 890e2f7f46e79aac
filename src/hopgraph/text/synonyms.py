"""Synonyms ("same_as") found inside one passage, for GRIEVER's synonym expansion (§4.2.3).

:func:`passage_aliases` returns ``(alias, canonical)`` pairs from five sources, without an LLM:

a. the title without its disambiguator: ``("Orange", "Orange (fruit)")``; or without a comma
   qualifier the text uses alone: ``("Santa Monica", "Santa Monica, California")``;
b. entities equal to the title up to case, disambiguator and a leading "The":
   ``("Beatles", "The Beatles")``;
c. acronyms: "National Basketball Association (NBA)" → ``("NBA", "National Basketball
   Association")``, and an all-caps entity spelling the initials of a multi-word entity;
d. surnames: a one-word capitalised entity equal to the last word of a multi-word name in the
   passage (the title first) → ``("Douglass", "Frederick Douglass")``;
e. "also known as X", "better known as X", "born X", "(born X)", "née X", "nicknamed X",
   "abbreviated as X", "or simply X" → ``(X, the title or the entity just before)``.

Whenever the canonical side is the title, it is the title as given (with its disambiguator), so
that all of a passage's aliases of its subject share one canonical name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hopgraph.text.ner import strip_disambiguator

# Lowercase words an acronym skips: "Institute of Technology", "Society for the ...".
_CONNECTORS = frozenset(
    {"of", "the", "and", "for", "in", "on", "at", "to", "a", "an", "de", "du", "des", "la", "le"}
)
# Last words of names that are not surnames: "University of Copenhagen" is not "Copenhagen".
_NOT_SURNAMES = frozenset(
    (
        "association bay city club college company corporation county district festival group "
        "hall institute island islands lake league mountains museum park party press province "
        "records river road school society state states station street team university valley"
    ).split()
)
_NOT_NAME_WORDS = frozenset({"is", "of", "the", "and", "a", "an", "in", "on", "to", "for", "at"})
# First words of place and organisation names, never a first name: "Northern Ireland".
_NOT_FIRST_NAMES = frozenset(
    (
        "north south east west northern southern eastern western central upper lower greater "
        "new old downtown colonial british national royal united great little lake mount fort "
        "port saint st. san santa los las hydro anglican federal imperial republic kingdom "
        "university city county province"
    ).split()
)
# Lowercase words that end a capitalised alias ("Franz Krezma in German-speaking countries").
_ALIAS_END = frozenset(
    (
        "in on at from by with since during after before until for who which that today now "
        "currently also still is was"
    ).split()
)
_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*\.?$")
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
_STOP_ALIASES = frozenset({"he", "she", "it", "they", "the", "a", "an", "this", "that", "one"})

_ACRONYM_IN_PARENS = re.compile(r"\(\s*([A-Z][A-Z0-9&.]{1,11})\s*[);,]")
_ACRONYM = re.compile(r"[A-Z](?:[A-Z&]|\.(?=[A-Z]))*\.?")
_WORD = re.compile(r"[\w][\w'’.&-]*")
# "also known as X": X runs to the end of the clause; a list "X, Y and Z" gives three aliases.
_CUES = re.compile(
    r"(?<![-\w])(?<!- )(?:(?:also|better|formerly|commonly|popularly|sometimes)"
    r"\s+(?:known|called|referred to)\s+as|or\s+simply|abbreviated\s+(?:as|to)|nicknamed|née|born)"
    r"\s+",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[;:()\[\]\n]|\.\s|\.$|\s[–—]\s")
_LIST_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")
_LIST_STOP = frozenset(
    (
        "is was are were has had who which that in on at from by with since a an its his her "
        "their c. i.e. e.g."
    ).split()
)
_QUOTES = "\"'“”‘’`"


def _norm(text: str) -> str:
    return " ".join(text.split())


def _key(name: str) -> str:
    """Case, disambiguator and a leading "The" do not matter."""
    key = strip_disambiguator(_norm(name)).lower()
    return key[4:] if key.startswith("the ") else key


def _clean(alias: str) -> str:
    alias = _norm(alias).strip(_QUOTES + " ,.").strip()
    alias = alias.strip(_QUOTES).strip()
    if alias.lower().startswith("the "):
        alias = alias[4:]
    return alias


def _initials(name: str) -> str | None:
    """Initials of a name: "National Basketball Association" → "NBA"; None when a lowercase
    word is not a connector (then the words are not a name)."""
    out = []
    for word in _WORD.findall(name):
        if word == "&" or (word.lower() in _CONNECTORS and not word[0].isupper()):
            continue
        if not (word[0].isupper() or word[0].isdigit()):
            return None
        out.append(word[0])
    return "".join(out) if len(out) > 1 else None


def _letters(acronym: str) -> str:
    return "".join(c for c in acronym if c.isalnum()).upper()


def _is_acronym(name: str) -> bool:
    return bool(_ACRONYM.fullmatch(name)) and 2 <= len(_letters(name)) <= 10


def _is_name(name: str) -> bool:
    """2–4 capitalised words (initials allowed): "Frederick Douglass", "George T. Solomon"."""
    words = name.split()
    if not 2 <= len(words) <= 4 or words[-1].lower() in _NOT_SURNAMES:
        return False
    if any(w.lower() in _NOT_NAME_WORDS for w in words):  # "Luv Is Rage"
        return False
    if words[0].lower() in _NOT_FIRST_NAMES:
        return False
    return all(
        re.fullmatch(r"[A-Z]\.", w) or (w[0].isupper() and not w.isupper() and _NAME_WORD.match(w))
        for w in words
    )


def _is_surname(name: str) -> bool:
    return (
        " " not in name
        and len(name) >= 3
        and name[0].isupper()
        and not name.isupper()
        and name.replace("-", "").replace("'", "").isalpha()
        and name.lower() not in _STOP_ALIASES
    )


class _Pairs:
    def __init__(self) -> None:
        self.out: list[tuple[str, str]] = []
        self.seen: set[tuple[str, str]] = set()

    def add(self, alias: str, canonical: str) -> None:
        alias, canonical = _norm(alias), _norm(canonical)
        if not alias or not canonical or alias == canonical:
            return
        if alias.lower() in _STOP_ALIASES or len(alias) < 2:
            return
        if (alias, canonical) not in self.seen:
            self.seen.add((alias, canonical))
            self.out.append((alias, canonical))


def _long_form(words: list[str], acronym: str) -> str | None:
    """The shortest run of ``words`` ending the list whose initials spell ``acronym``."""
    letters = _letters(acronym)
    for k in range(2, min(len(words), 2 * len(letters) + 2) + 1):
        run = words[-k:]
        if not run[0][0].isupper():
            continue
        initials = _initials(" ".join(run))
        if initials is None:
            return None
        if initials.upper() == letters:
            return " ".join(run)
        if len(initials) > len(letters):
            return None
    return None


def _name_part(words: list[str]) -> str:
    """A capitalised alias ends at its first lowercase word that is not a connector ("Franz
    Krezma in German-speaking countries" → "Franz Krezma"); a lowercase one is kept whole."""
    if not words[0].strip(_QUOTES)[:1].isupper():
        return " ".join(words)
    kept: list[str] = []
    for w in words:
        if w in _ALIAS_END:
            break
        kept.append(w)
    while kept and kept[-1] in _CONNECTORS:
        kept.pop()
    return " ".join(kept)


def _subject_before(prefix: str, title: str, entities: Sequence[str]) -> str | None:
    """The title or the entity ending ``prefix`` ("Frederick Douglass (" → that entity)."""
    prefix = prefix.rstrip(" ,(" + _QUOTES)
    best = None
    for name in (strip_disambiguator(title), title, *entities):
        if name and prefix.endswith(name) and (best is None or len(name) > len(best)):
            best = name
    if best is None:
        return None
    if title and _key(best) == _key(title):
        return title
    return best


def passage_aliases(title: str, text: str, entities: Sequence[str]) -> list[tuple[str, str]]:
    """(alias, canonical) pairs found in one passage; `entities` are the passage's entity
    strings (its triple arguments)."""
    title = _norm(title or "")
    base = _norm(strip_disambiguator(title)) if title else ""
    ents = [e for e in dict.fromkeys(_norm(e) for e in entities) if e]
    pairs = _Pairs()

    # (a) disambiguator or comma qualifier
    if title and base and base != title:
        pairs.add(base, title)
    if "," in base:
        head = base.split(",")[0].strip()
        if head and re.search(rf"\b{re.escape(head)}\b(?!\s*,)", text):
            pairs.add(head, title)

    # (b) entities equal to the title up to case, disambiguator, leading "The"
    if title:
        for e in ents:
            if _key(e) == _key(title):
                pairs.add(e, title)

    # (c) acronyms: "Long Name (LN)" in the text, then all-caps entities spelling initials
    for m in _ACRONYM_IN_PARENS.finditer(text):
        acronym = m.group(1).rstrip(".") if m.group(1).count(".") == 1 else m.group(1)
        if not _is_acronym(acronym):
            continue
        words = _WORD.findall(text[max(0, m.start() - 200) : m.start()])
        long = _long_form(words, acronym)
        if long is not None:
            long = re.sub(r"['’]s$", "", long)  # "Major League Baseball's (MLB)"
            pairs.add(acronym, title if title and _key(long) == _key(title) else long)
    long_names = [n for n in dict.fromkeys([base, *ents]) if n and " " in n]
    for e in ents:
        if not _is_acronym(e):
            continue
        for name in long_names:
            initials = _initials(name)
            if initials is not None and initials.upper() == _letters(e):
                pairs.add(e, title if title and _key(name) == _key(title) else name)

    # (d) surnames
    subject = base.split(",")[0].strip()  # "Rosedale, Camden": not a person's name
    names = [n for n in dict.fromkeys([subject, *long_names]) if _is_name(n)]
    for e in ents:
        if not _is_surname(e) or (title and _key(e) in (_key(title), subject.lower())):
            continue  # the title itself ("Kassel" beside "Regierungsbezirk Kassel")
        full = [n for n in names if n.split()[-1] == e]
        if subject in full:
            pairs.add(e, title)
        elif len(full) == 1:
            pairs.add(e, full[0])

    # (e) "also known as X", "born X", ...
    for m in _CUES.finditer(text):
        cue = m.group(0).lower().split()[0]
        canonical = _subject_before(text[: m.start()], title, ents) or title
        if not canonical:
            continue
        rest = text[m.end() :]
        end = _CLAUSE_END.search(rest)
        clause = rest[: end.start()] if end else rest
        if cue in ("born", "née", "nicknamed"):
            # a name only ("born Stefani Germanotta"; not "born in 1950", "born 5 May 1950")
            name = re.match(r"(?:[A-Z][\w'’.-]*(?:\s+|$))+", clause + " ")
            if name and name.group(0).split()[0].lower() not in _MONTHS:
                pairs.add(_clean(name.group(0)), canonical)
            continue
        items = _LIST_SPLIT.split(clause)
        if not re.search(r"\s(?:and|or)\s", clause):
            items = items[:1]  # "also known as AC, makes anvils": not a list
        for item in items:
            words = item.split()
            if not words or words[0].lower() in _LIST_STOP or len(words) > 8:
                break
            pairs.add(_clean(_name_part(words)), canonical)
    return pairs.out
