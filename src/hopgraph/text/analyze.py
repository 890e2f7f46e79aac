"""Analyzers: how the text of one language becomes index terms (Lucene's analyzers are the model).

:func:`analyzer` gives, for a language code (ISO 639-1: ``"fr"``, ``"zh"``…), a callable
``text -> list[str]``:

- **English** (``"en"``) is the :class:`~hopgraph.text.tokenize.Tokenizer` the index has always
  used (bm25s's pipeline: lowercase ``\\w\\w+`` words, English stop words, Snowball stems), so
  English corpora rank exactly as before.
- **Every other language**: Unicode NFKC, the language's lowercasing (Turkish dotted and
  dotless i) and letter normalisation (Arabic script: diacritics and tatweel removed; for
  Urdu, Pashto and Kurdish, which have no Snowball stemmer, alef, yeh and teh marbuta forms
  folded too, as Lucene's ``ArabicNormalizationFilter``; before the Arabic stemmer, which
  folds them its own way, that folding cost xquad_ar 0.013 MRR), then
  words as runs of letters, digits *and their combining marks* (Python's ``\\w`` alone cuts
  Devanagari, Thai and Arabic words at every vowel sign). A run holding a script written
  without spaces (Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar) becomes
  overlapping bigrams of its characters, its digits and Latin letters included (a lone
  character stays a unigram), plus the unigrams of its Han and kana characters, as Lucene's
  ``CJKBigramFilter`` with ``outputUnigrams`` does; every other run is a word of two
  characters or more, dropped if it is one of the language's stop words (bm25s's Snowball-derived
  lists, where it has one) and stemmed by the language's Snowball stemmer (PyStemmer) where
  there is one.
- A **mixed** corpus (``"en,fr"``: more than one language, :mod:`hopgraph.text.language`)
  analyses each text, passage or query, with the analyzer of its own language among those.

Why bigrams and not a word segmenter for Chinese and Japanese: the segmenters that install here
(jieba, rjieba; SudachiPy and fugashi with their dictionaries) are 4–70 MB more to install, and
bigrams with unigrams find the question's paragraph better than the bigrams a user sets up by
hand on the Chinese and Japanese question sets of ``../shared/data`` (docs/notes/languages.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache

import regex

from hopgraph.text.language import detect_among, parse_languages
from hopgraph.text.tokenize import Tokenizer

ENGLISH = "en"

SNOWBALL: dict[str, str] = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech",
    "da": "danish", "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian",
    "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
    "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
    "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "fa": "persian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
    "yi": "yiddish",
}  # fmt: skip
"""The Snowball stemmer (PyStemmer's name) of each language that has one."""

_STOPWORDS: dict[str, str] = {
    "en": "STOPWORDS_EN", "zh": "STOPWORDS_CHINESE", "da": "STOPWORDS_DANISH",
    "nl": "STOPWORDS_DUTCH", "fr": "STOPWORDS_FRENCH", "de": "STOPWORDS_GERMAN",
    "it": "STOPWORDS_ITALIAN", "ko": "STOPWORDS_KOREAN", "no": "STOPWORDS_NORWEGIAN",
    "nb": "STOPWORDS_NORWEGIAN", "pt": "STOPWORDS_PORTUGUESE", "ru": "STOPWORDS_RUSSIAN",
    "es": "STOPWORDS_SPANISH", "sv": "STOPWORDS_SWEDISH", "tr": "STOPWORDS_TURKISH",
}  # fmt: skip
"""The stop-word list of bm25s (``bm25s.stopwords``) for each language that has one."""

_ARABIC_SCRIPT = frozenset(("ar", "fa", "ur", "ps", "ku"))
_RUN = regex.compile(r"[\p{L}\p{N}\p{M}]+")
_NO_SPACE = regex.compile(
    r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}ー々〆]+"
)
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー々〆]")
_MARK = regex.compile(r"\p{M}")
_GRAPHEME = regex.compile(r"\X")
_ARABIC_MARKS = regex.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")
_ARABIC_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه"})


def stemmer_name(language: str) -> str:
    """PyStemmer's name of ``language``'s Snowball stemmer, or ``"none"``."""
    return SNOWBALL.get(language, "none")


def stopword_list(language: str) -> frozenset[str]:
    """``language``'s stop words (bm25s's list), empty where it has none."""
    name = _STOPWORDS.get(language)
    if name is None:
        return frozenset()
    from hopgraph.jit import import_bm25s  # bm25s without numba (issue 62)

    return frozenset(getattr(import_bm25s().stopwords, name))


def normalize(text: str, language: str) -> str:
    """NFKC, then ``language``'s lowercasing and letter folding (see the module's docstring)."""
    text = unicodedata.normalize("NFKC", text)
    if language in ("tr", "az"):
        text = text.replace("İ", "i").replace("I", "ı")
    text = text.lower()
    if language in _ARABIC_SCRIPT:
        text = _ARABIC_MARKS.sub("", text)
        if language not in SNOWBALL:  # Arabic's and Persian's stemmers fold letters themselves
            text = text.translate(_ARABIC_FOLD)
    return text


def bigrams(run: str) -> list[str]:
    """Overlapping bigrams of ``run``'s characters (a lone character: itself); a character
    with its combining marks (a Thai consonant and its vowel sign) counts as one."""
    chars: str | list[str] = _GRAPHEME.findall(run) if _MARK.search(run) else run
    if len(chars) == 1:
        return [run]
    return [chars[i] + chars[i + 1] for i in range(len(chars) - 1)]


class Analyzer:
    """The analyzer of one language other than English (see the module's docstring).

    ``stemmer``: a Snowball stemmer name, ``"auto"`` (the language's, if any) or ``"none"``;
    ``stopwords``: ``"auto"`` (the language's list, if any), ``"none"``, or a language code
    whose list to use."""

    def __init__(self, language: str, stemmer: str = "auto", stopwords: str = "auto"):
        self.language = language
        name = stemmer_name(language) if stemmer == "auto" else stemmer
        self._stem = None if name == "none" else _snowball(name).stemWord
        which = language if stopwords == "auto" else stopwords
        self.stopwords = frozenset() if which == "none" else stopword_list(which)
        self._cache: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        out: list[str] = []
        stop, stem, cache = self.stopwords, self._stem, self._cache
        for run in _RUN.findall(normalize(text, self.language)):
            if _NO_SPACE.search(run):  # the whole run, its Latin letters and digits too
                grams = bigrams(run)
                out += grams
                if len(grams) > 1 or len(grams[0]) > 1:
                    out += _CJK.findall(run)
            else:
                self._word(run, out, stop, stem, cache)
        return out

    @staticmethod
    def _word(
        word: str,
        out: list[str],
        stop: frozenset[str],
        stem: Callable[[str], str] | None,
        cache: dict[str, str],
    ) -> None:
        if len(word) < 2 or word in stop:
            return
        if stem is None:
            out.append(word)
            return
        s = cache.get(word)
        if s is None:
            s = cache[word] = stem(word)
        out.append(s)


class MixedAnalyzer:
    """Each text analysed by the analyzer of its own language among ``languages`` (detected
    per text, :func:`hopgraph.text.language.detect_among`)."""

    def __init__(self, languages: list[str], stemmer: str = "auto", stopwords: str = "auto"):
        self.languages = languages
        self._each = {lang: analyzer(lang, stemmer, stopwords) for lang in languages}

    def __call__(self, text: str) -> list[str]:
        return self._each[detect_among(text, self.languages)](text)


ANALYZER_VERSION = 1
"""The version of the analyzers of languages other than English: raised whenever one of them
changes the terms it gives a text, so that an index built before knows its BM25 terms are not
those its queries get (:attr:`~hopgraph.index.sparse.SparsePart.outdated`). English's analyzer
is the old tokenizer, frozen."""


def check_analyzer(language: str, stemmer: str, stopwords: str) -> None:
    """Raise :class:`~hopgraph.errors.ConfigError` naming what is wrong with these options."""
    from hopgraph.errors import ConfigError

    langs = parse_languages(language)
    if not langs or any(not regex.fullmatch(r"[a-z]{2,3}", lang) for lang in langs):
        raise ConfigError(
            f"option 'language' must be a language code such as 'en' or 'fr' (several "
            f"comma-separated for a mixed corpus), got {language!r}"
        )
    if stemmer not in ("auto", "none", *set(SNOWBALL.values()), "porter"):
        raise ConfigError(
            f"option 'stemmer' must be 'auto', 'none' or one of PyStemmer's: "
            f"{', '.join(sorted(set(SNOWBALL.values())))}; got {stemmer!r}"
        )
    if stopwords not in ("auto", "none", *_STOPWORDS):
        raise ConfigError(
            f"option 'stopwords' must be 'auto', 'none' or a language with a list "
            f"({', '.join(sorted(_STOPWORDS))}); got {stopwords!r}"
        )


def analyzer(
    language: str = ENGLISH, stemmer: str = "auto", stopwords: str = "auto"
) -> Callable[[str], list[str]]:
    """The analyzer of ``language`` (a code, or several comma-separated for a mixed corpus);
    ``stemmer`` and ``stopwords`` as :class:`Analyzer` takes them."""
    langs = parse_languages(language) or [ENGLISH]
    if len(langs) > 1:
        return MixedAnalyzer(langs, stemmer, stopwords)
    lang = langs[0]
    if lang == ENGLISH:
        stem = "english" if stemmer == "auto" else stemmer
        stops = "en" if stopwords == "auto" else stopwords
        if stops in ("en", "none"):
            return Tokenizer(stem, stops)
    return Analyzer(lang, stemmer, stopwords)


@lru_cache(maxsize=16)
def _snowball(name: str):
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer(name)
