"""The language of a corpus, detected at index time, and of one text among a corpus's languages.

:func:`detect_language` classifies a fixed sample of passages (``py3langid``: langid.py's
naive-Bayes model over byte n-grams, 140 languages and varieties, about 0.1 ms a passage) and
names the corpus's language: the one in which :data:`MAJORITY` of the sample's letters are
(each passage counts by its length: a short title is easily mistaken, an abstract is not), else
every language holding :data:`MIN_SHARE` of them, comma-separated (a mixed corpus, each of whose
texts is then analysed in its own language: :class:`hopgraph.text.analyze.MixedAnalyzer`). The
record says what was counted, so ``hopgraph info`` can show why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

SAMPLE = 400
"""Passages classified (drawn with a fixed seed; all of a smaller corpus)."""
MAJORITY = 0.8
"""Share of the sample at which its most frequent language is the corpus's."""
MIN_SHARE = 0.1
"""Share of the sample a language needs to count in a mixed corpus."""
CHARS = 1000
"""Characters of each passage (title and text) that are classified."""
MIN_LETTERS = 20
"""Passages with fewer letters are not counted (a title alone is too short to tell)."""
FOLD: dict[str, str] = {
    "wuu": "zh", "yue": "zh", "ary": "ar", "arz": "ar", "pcm": "en", "nn": "no", "uzs": "uz",
    "gug": "gn", "zxx": "",
}  # fmt: skip
"""Varieties the model tells apart, read as the language whose analyzer serves them (Wu and
Cantonese written in Han characters, Moroccan and Egyptian Arabic, Nigerian Pidgin's English
words); ``zxx`` (no linguistic content) is not counted."""
SEED = 0
ENGLISH_STOP_SHARE = 0.25
"""Share of a sample's words that are English stop words from which, with
:data:`ENGLISH_ASCII` of its letters in plain ASCII words, the sample is English without
running the model: 0.28-0.37 on every English set of ``../shared/data``, at most 0.03 on the
German, Spanish and French ones; a corpus with a fifth of its text in another language falls
below it and is classified passage by passage."""
ENGLISH_ASCII = 0.95
_WORD = re.compile(r"[^\W\d_]+")


def parse_languages(language: str) -> list[str]:
    """``"en,fr"`` → ``["en", "fr"]`` (lowercase, in order, without repeats)."""
    return list(dict.fromkeys(p.strip().lower() for p in language.split(",") if p.strip()))


def encoder_gap(model: str, language: str) -> tuple[list[str], frozenset[str]] | None:
    """``(the corpus's languages, the encoder's)`` where encoder ``model`` was not trained on
    every language of ``language`` (:func:`~hopgraph.models.resolve.encoder_languages`), else
    None (it speaks them all, or hopgraph does not know what it speaks)."""
    from hopgraph.models.resolve import encoder_languages

    speaks = encoder_languages(model)
    langs = parse_languages(language)
    if speaks is None or all(lang in speaks for lang in langs):
        return None
    return langs, speaks


def passage_text(p: Any) -> str:
    return (f"{p.title}\n{p.text}" if p.title else p.text)[:CHARS]


def sample_rows(size: int, n: int = SAMPLE, seed: int = SEED) -> list[int]:
    """``n`` rows of ``size`` drawn with ``seed``, in order (all rows of a smaller corpus)."""
    if size <= n:
        return list(range(size))
    return sorted(np.random.default_rng(seed).choice(size, n, replace=False).tolist())


def detect_language(corpus: Sequence[Any]) -> dict[str, Any]:
    """``{"language": "fr" | "en,fr" | "en", "shares": {...}, "sampled": n, "reason": str}``:
    the language of ``corpus`` (passages with ``title`` and ``text``) as the module's docstring
    says; an empty corpus, or one with no letters, is English (nothing changes for it)."""
    rows = sample_rows(len(corpus))
    texts = [passage_text(corpus[r]) for r in rows]
    texts = [t for t in texts if sum(c.isalpha() for c in t) >= MIN_LETTERS] or texts
    if plainly_english(texts):
        return {"language": "en", "shares": {"en": 1.0}, "sampled": len(texts),
                "reason": f"{len(texts)} sampled passages are plainly English (English stop "
                f"words, ASCII letters)"}  # fmt: skip
    counts: Counter[str] = Counter()  # letters classified in each language
    found = 0
    for t in texts:
        lang = classify(t)
        if lang:
            counts[lang] += sum(c.isalpha() for c in t)
            found += 1
    total = sum(counts.values())
    shares = {k: round(v / total, 4) for k, v in counts.most_common()} if total else {}
    if not shares:
        language, reason = "en", "no text to classify: English"
    else:
        top, share = next(iter(shares.items()))
        if share >= MAJORITY:
            language = top
            reason = f"{share:.0%} of the text of {found} sampled passages is in {top}"
        else:
            langs = [k for k, v in shares.items() if v >= MIN_SHARE] or [top]
            language = ",".join(langs)
            reason = (
                f"mixed: no language holds {MAJORITY:.0%} of the text of {found} sampled passages ("
                + ", ".join(f"{k} {shares[k]:.0%}" for k in langs)
                + "); each text analysed in its own"
            )
    return {"language": language, "shares": shares, "sampled": found, "reason": reason}


def plainly_english(texts: Sequence[str]) -> bool:
    """Whether ``texts`` are English by two counts, without the model (whose loading is most
    of the detection's cost, about a second, on a small English corpus): English stop words
    make :data:`ENGLISH_STOP_SHARE` of their words, and plain ASCII words
    :data:`ENGLISH_ASCII` of their letters."""
    stops = _english_stop_words()
    words = [w for t in texts for w in _WORD.findall(t.lower())]
    letters = sum(map(len, words))
    if not letters:
        return False
    stop = sum(w in stops for w in words) / len(words)
    plain = sum(len(w) for w in words if w.isascii()) / letters
    return stop >= ENGLISH_STOP_SHARE and plain >= ENGLISH_ASCII


def classify(text: str) -> str:
    """The language code of ``text`` (py3langid), or "" for a text without letters."""
    if not any(c.isalpha() for c in text):
        return ""
    lang = str(_identifier(None).classify(text)[0])
    return FOLD.get(lang, lang)


def detect_among(text: str, languages: Sequence[str]) -> str:
    """The language of ``text`` among ``languages`` (the first of them for a text without
    letters)."""
    known = tuple(sorted(lang for lang in languages if lang in _labels()))
    if len(known) < 2 or not any(c.isalpha() for c in text):
        return known[0] if len(known) == 1 and any(c.isalpha() for c in text) else languages[0]
    return str(_identifier(known).classify(text)[0])


@lru_cache(maxsize=1)
def _english_stop_words() -> frozenset[str]:
    from hopgraph.text.tokenize import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def _labels() -> frozenset[str]:
    return frozenset(_identifier(None).labels)


@lru_cache(maxsize=8)
def _identifier(languages: tuple[str, ...] | None):
    """py3langid's model (restricted to ``languages``: codes it knows, two or more)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE)
    if languages is not None:
        ident.set_languages(list(languages))
    return ident
