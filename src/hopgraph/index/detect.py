"""Corpus-setting detection: index options for the default pipeline, read off the passage titles.

SPRIG-EL's title aliases (``entities.title_aliases``) turn every passage title into an entity
node (``"Kiss and Tell (1945 film)"`` and a mention ``"Kiss and Tell"`` become one node, with an
edge to its own page). That helps when titles *are* entity names, as in Wikipedia-derived
corpora (HotpotQA, 2WikiMultiHopQA, MuSiQue), and hurts when they are sentences (paper titles
such as SciFact's) or absent: then every title becomes a rare, useless node.

:func:`detect_settings` looks only at the titles (no model, milliseconds for thousands of
passages) and turns the aliases on when

- most passages have a title (share ≥ :data:`MIN_TITLED`),
- the titles are mostly distinct (share of distinct titles ≥ :data:`MIN_DISTINCT`; a title
  owning many documents is no entity page),
- they are short (median ≤ :data:`MAX_MEDIAN_WORDS` words, disambiguator excluded),
- nearly all look like names (share ≥ :data:`MIN_NAME_LIKE`, see :func:`looks_like_name`),
- and most are not database tables (passages whose metadata say ``"kind": "table"``, as
  ``hopgraph convert tables`` writes them: a table's name is a schema's word, ``Customers`` or
  ``Singer_in_concert``, not an entity's, however capitalised; share < :data:`MAX_TABLES`).

The measurements are taken over *documents*: passages that carry a ``doc_id`` (the chunks of one
file of a folder of documents, of one long passage cut by ``--chunk-words``) count once, with
their document's title; a passage without one is its own document. So a folder of manuals is
judged by its manuals' titles, not by how many chunks each was cut into.

The result also records the measurements and the reason, so an index can say why it was built
the way it was (``hopgraph info`` shows it under ``detected``).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from hopgraph.corpus import Corpus
from hopgraph.corpus.convert import TABLE_KIND
from hopgraph.index.name_finder import CASED, LETTER, UNSPACED
from hopgraph.text.language import detect_language
from hopgraph.text.ner import strip_disambiguator

MIN_TITLED = 0.5
MIN_DISTINCT = 0.5
MAX_MEDIAN_WORDS = 6
MIN_NAME_LIKE = 0.75
"""Share of titles that must look like names. Entity-page corpora sit at 0.95 (HotpotQA, MuSiQue,
2Wiki); CACM's title-cased paper titles at 0.54 ("Two Square-Root Approximations" passes, "The
Use of Computers in Inspection Procedures" does not), where the threshold was 0.5 and the
``entity_titles`` ranker took them, 0.086 nDCG@10 below ``rrf`` (the ``plain_titles`` one: level
with it). Set between the two (docs/notes/any-corpus.md, issue 60): a guess informed by CACM."""
MAX_NAME_WORDS = 6
MAX_TABLES = 0.5
MAX_CASELESS = 0.5
"""Titles in a script without case turn title aliases off unless asked for: names and words
look alike there, and with the aliases on, cmrc_zh's single-hop questions (848 passages of as
many Chinese Wikipedia articles) lost 0.027 MRR against BM25 (docs/notes/languages.md). The
machinery works when asked (``entities.title_aliases=true``): names found without capitals,
two hops over linked pages in Chinese, Japanese and Arabic (tests/test_languages.py)."""

MIN_CASED_TEXT = 0.5
"""Below this share of letters with case in the texts (Chinese, Japanese, Arabic, Hindi, Thai),
a corpus whose titles are not names takes its entity mentions from terms its n-gram statistics
single out (``entities.ner=terms``, :mod:`hopgraph.index.terms`): the regex NER finds nothing
there. A cased corpus keeps the regex's capitalised words, German's every noun included: with
terms the default ranked below them on each of xquad_de, piaf_fr and squad_es (MRR −0.004
[−0.006, −0.002], −0.003 [−0.005, −0.001], R@10 −0.008 [−0.016, −0.001]), so the choice holds
with any one left out. On the five sets without case, terms and the regex rank alike (every
paired interval holds 0), and only terms give such a corpus an entity graph
(docs/notes/languages.md)."""
CASED_SAMPLE = 200  # passages read for cased_share, 1,000 characters each

DETECTED_PARTS: tuple[str, ...] = ("entities", "sparse")
"""The parts whose options :func:`detect_settings` sets."""

WHY = "why"
"""The key of :func:`detect_settings`' result holding the evidence (every other key is a part)."""

# lowercase words that names contain (``Battle of the Bulge``, ``Leonardo da Vinci``)
_PARTICLES = frozenset(
    "a an and as at by da de del della der des di du for from in la le of on or the to van "
    "von with y".split()
)
_SENTENCE_END = (".", "?", "!")
_FULL_STOPS = ("。", "？", "！", "؟", "।")  # sentence ends of scripts without case
MAX_UNSPACED_NAME_CHARS = 12  # "托拜厄斯·格伦尼克", "ロックウェル造船所"; a sentence runs longer


def looks_like_name(title: str) -> bool:
    """Whether ``title`` reads like an entity name rather than a sentence: at most
    :data:`MAX_NAME_WORDS` words once its disambiguator is removed, starting with a capital
    or a digit, at least half of its non-particle words capitalised, and no sentence-final
    ``.``, ``?`` or ``!`` (an abbreviation such as ``Jr.`` or ``Inc.`` may end it). In a script
    without case (Chinese, Japanese, Arabic, Hindi, Thai) there is no capital to read: a title
    of at most :data:`MAX_NAME_WORDS` words (:data:`MAX_UNSPACED_NAME_CHARS` characters where
    the script has no spaces) that ends no sentence."""
    base = strip_disambiguator(title).strip(" \"'“”‘’")
    words = base.split()
    if not words or len(words) > MAX_NAME_WORDS:
        return False
    if not CASED.search(base) and LETTER.search(base):  # a script without case: no capital
        if base.endswith(_SENTENCE_END + _FULL_STOPS):  # to read, so short and no sentence
            return False
        return not UNSPACED.search(base) or len(base) <= MAX_UNSPACED_NAME_CHARS
    if not (words[0][0].isupper() or words[0][0].isdigit()):
        return False
    last = words[-1]
    if last.endswith(_SENTENCE_END) and not (last.endswith(".") and len(last) <= 4):
        return False
    content = [w for w in words if w.lower() not in _PARTICLES]
    if not content:
        return False
    capitalised = sum(1 for w in content if w[0].isupper() or w[0].isdigit())
    return capitalised * 2 >= len(content)


def is_caseless(title: str) -> bool:
    """Whether ``title`` has letters and none of them has case (Chinese, Arabic, Hindi...)."""
    return bool(LETTER.search(title)) and not CASED.search(title)


def cased_share(passages: Sequence[Any]) -> float:
    """The share of letters with case in the texts of an even sample of ``passages``."""
    step = max(1, len(passages) // CASED_SAMPLE)
    letters = cased = 0
    for i in range(0, min(len(passages), step * CASED_SAMPLE), step):
        text = passages[i].text[:1000]
        letters += len(LETTER.findall(text))
        cased += len(CASED.findall(text))
    return round(cased / letters, 4) if letters else 1.0


def document_titles(passages: Iterable[Any]) -> tuple[list[str], int, int]:
    """The title of each document of ``passages`` (the first passage of each ``doc_id``; a
    passage without one is its own document), the number of passages, and how many of the
    documents are database tables (metadata ``kind`` :data:`TABLE_KIND`)."""
    titles: dict[str, str] = {}
    tables: set[str] = set()
    n = 0
    for p in passages:
        n += 1
        meta = p.metadata or {}
        key = f"doc:{meta['doc_id']}" if "doc_id" in meta else f"id:{p.id}"
        titles.setdefault(key, p.title)
        if meta.get("kind") == TABLE_KIND:
            tables.add(key)
    return list(titles.values()), n, len(tables)


def title_stats(
    titles: Iterable[str], passages: int | None = None, tables: int = 0
) -> dict[str, Any]:
    """The measurements :func:`detect_settings` decides on (shares in [0, 1], rounded), over
    ``titles`` (one per document); ``passages``: how many passages they came from; ``tables``:
    how many of the documents are database tables."""
    all_titles = [(t or "").strip() for t in titles]
    n = len(all_titles)
    titled = [t for t in all_titles if t]
    words = [len(strip_disambiguator(t).split()) for t in titled]
    counts = Counter(titled)
    return {
        "passages": n if passages is None else passages,
        "documents": n,
        "titled_share": round(len(titled) / n, 4) if n else 0.0,
        "distinct_share": round(len(counts) / len(titled), 4) if titled else 0.0,
        "table_share": round(tables / n, 4) if n else 0.0,
        "median_title_words": float(statistics.median(words)) if words else 0.0,
        "name_like_share": (
            round(sum(looks_like_name(t) for t in titled) / len(titled), 4) if titled else 0.0
        ),
        "caseless_share": (
            round(sum(is_caseless(t) for t in titled) / len(titled), 4) if titled else 0.0
        ),
    }


def detect_settings(corpus: Corpus | Iterable[Any]) -> dict[str, Any]:
    """Part options for the default pipeline over ``corpus``, and why.

    Returns ``{"entities": {"title_aliases": bool, "alias_mentions": bool}, "sparse":
    {"language": code}, "why": {...}}`` (aliases both on or both off; the language from a sample
    of the passages, :func:`~hopgraph.text.language.detect_language`): every key but ``"why"``
    is a part's options (as ``Index.build`` takes them); ``"why"`` holds the measurements of
    :func:`title_stats`, the thresholds, and a sentence saying what was decided.
    """
    titles, n_passages, tables = document_titles(corpus)
    stats = title_stats(titles, n_passages, tables)
    failed = []
    if stats["table_share"] >= MAX_TABLES:
        failed.append(
            f"{stats['table_share']:.0%} of documents are database tables (>= {MAX_TABLES:.0%}: "
            "their names are a schema's, not entities')"
        )
    if stats["titled_share"] < MIN_TITLED:
        failed.append(f"{stats['titled_share']:.0%} of documents have a title (< {MIN_TITLED:.0%})")
    else:
        if stats["distinct_share"] < MIN_DISTINCT:
            failed.append(
                f"{stats['distinct_share']:.0%} of documents' titles are distinct "
                f"(< {MIN_DISTINCT:.0%})"
            )
        if stats["median_title_words"] > MAX_MEDIAN_WORDS:
            failed.append(
                f"median title length {stats['median_title_words']:g} words (> {MAX_MEDIAN_WORDS})"
            )
        if stats["name_like_share"] < MIN_NAME_LIKE:
            failed.append(
                f"{stats['name_like_share']:.0%} of titles look like names (< {MIN_NAME_LIKE:.0%})"
            )
        if stats["caseless_share"] >= MAX_CASELESS:
            failed.append(
                f"{stats['caseless_share']:.0%} of titles are in a script without case "
                "(Chinese, Japanese, Arabic...): names and words look alike; for linked pages "
                "set entities.title_aliases=true and entities.alias_mentions=true"
            )
    aliases = not failed
    if aliases:
        reason = (
            f"titles look like entity names ({stats['titled_share']:.0%} titled, "
            f"{stats['distinct_share']:.0%} distinct, median {stats['median_title_words']:g} "
            f"words, {stats['name_like_share']:.0%} name-like): title aliases on, found in texts"
        )
    else:
        reason = (
            "titles do not look like entity names (" + "; ".join(failed) + "): title aliases off"
        )
    passages = corpus if isinstance(corpus, Sequence) else list(corpus)
    lang = detect_language(passages)
    entities: dict[str, Any] = {"title_aliases": aliases, "alias_mentions": aliases}
    if lang["language"] != "en":  # names in any script, found without capitals
        entities["normalize"] = "letters"
        stats["cased_text_share"] = cased_share(passages)
        if aliases:  # the mentions: the title aliases in the texts, not capitalised words
            entities["ner"] = "none"
        elif stats["cased_text_share"] < MIN_CASED_TEXT:  # no capitals to read: mined terms
            entities["ner"] = "terms"
        reason += "; names in any script, found without capital letters" + (
            "" if aliases or entities.get("ner") != "terms" else " (terms mined from the corpus)"
        )
    return {
        "entities": entities,
        "sparse": {"language": lang["language"]},
        WHY: {
            **stats,
            "language": lang,
            "thresholds": {
                "min_titled_share": MIN_TITLED,
                "min_distinct_share": MIN_DISTINCT,
                "max_median_title_words": MAX_MEDIAN_WORDS,
                "min_name_like_share": MIN_NAME_LIKE,
                "max_table_share": MAX_TABLES,
                "max_caseless_share": MAX_CASELESS,
                "min_cased_text_share": MIN_CASED_TEXT,
            },
            "reason": reason,
        },
    }


def detected_part_options(detected: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The part options of a :func:`detect_settings` result (without ``"why"``)."""
    return {k: dict(v) for k, v in detected.items() if k != WHY}


def describe_detected(detected: dict[str, Any] | None) -> str:
    """One line for the command line: what was detected and what it set."""
    if not detected:
        return "detected: nothing (no part built now takes detected options)"
    why = detected.get(WHY, {})
    sets = ", ".join(
        f"{part}.{k}={str(v).lower() if isinstance(v, bool) else v}"
        for part, opts in detected_part_options(detected).items()
        for k, v in opts.items()
    )
    line = f"detected: {why.get('reason', '')}"
    if "language" in why:
        line += f"; language: {why['language']['reason']}"
    line += f" [{sets}]"
    if "dense" in why:
        line += f"; {why['dense']}"
    if why.get("overridden"):
        line += f"; overridden by --set: {', '.join(why['overridden'])}"
    return line
