"""The default index: the parts of the default method, and their options detected from the
corpus (:mod:`hopgraph.index.detect`).

``Index.build(corpus)`` without parts, streaming builds without parts, ``hopgraph index``
without ``--parts`` and ``hopgraph add-parts`` build :data:`DEFAULT_PARTS` with
:func:`detected_options`. The parts are written down here, below the retrievers, so that building
an index needs none of them (the index imports nothing from :mod:`hopgraph.retrieve`);
:mod:`hopgraph.defaults`, which chooses the default method, offers the same names, and the
tests check that :data:`DEFAULT_PARTS` are what that method needs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from hopgraph.corpus import Corpus
from hopgraph.index.detect import DETECTED_PARTS, WHY, detect_settings, detected_part_options
from hopgraph.index.registry import PartOptions, dependency_order

DEFAULT_PARTS: tuple[str, ...] = ("sparse", "dense", "entities")
"""The index parts :data:`hopgraph.defaults.DEFAULT_METHOD` uses (with its default parameters:
``full_parts(DEFAULT_METHOD)``, the parts it needs and the passage vectors it ranks better
with; tests/test_detect.py holds it to that)."""


def detected_options(
    corpus: Corpus,
    parts: Iterable[str],
    options: PartOptions | None = None,
    *,
    have: Iterable[str] = (),
) -> tuple[PartOptions, dict[str, Any] | None]:
    """Options for building ``parts`` (and the parts they are built from) over ``corpus``.

    Detection fills in the options of the parts it covers (``entities.title_aliases``) that are
    built now (not in ``have``, the parts already built); ``options`` given by the caller win,
    option by option. Returns ``(options, detected)``: ``detected`` is the
    :func:`~hopgraph.index.detect.detect_settings` record (with ``why.overridden`` listing the
    detected options the caller replaced), or None when no part detection covers is built.
    """
    given: PartOptions = {p: dict(o) for p, o in (options or {}).items()}
    have = set(have)
    built = [p for p in dependency_order(list(parts), given) if p not in have]
    if not any(p in DETECTED_PARTS for p in built):
        return given, None
    detected = detect_settings(corpus)
    overridden: list[str] = []
    merged = copy.deepcopy(given)
    for part, opts in detected_part_options(detected).items():
        if part not in built:
            continue
        mine = given.get(part, {})
        overridden += [f"{part}.{k}" for k in opts if k in mine]
        merged[part] = {**opts, **mine}
    detected[WHY]["overridden"] = overridden
    return merged, detected


def language_options(
    corpus: Corpus, parts: Iterable[str], options: PartOptions | None = None
) -> PartOptions:
    """``options`` with the corpus's language for the parts that read it, where the caller
    gives none: ``sparse.language`` (its analyzer) and, for a corpus not in English,
    ``entities.normalize=letters`` (the ``simple`` normalisation keeps ASCII only). For builds
    that take no other detected option (``hopgraph eval`` of methods other than the default,
    which keep their papers' settings): the language is the corpus's, not a method's, and a
    Chinese corpus analysed as English ranked xquad_zh at R@10 0.20 against 0.99."""
    given: PartOptions = {p: dict(o) for p, o in (options or {}).items()}
    built = dependency_order(list(parts), given)
    if "sparse" not in built or "language" in given.get("sparse", {}):
        return given
    from hopgraph.text.language import detect_language

    language = detect_language(list(corpus))["language"]
    if language == "en":  # English's options stay as they were (and so its cached indexes)
        return given
    given.setdefault("sparse", {})["language"] = language
    if "entities" in built:
        given.setdefault("entities", {}).setdefault("normalize", "letters")
    return given


def default_build(
    corpus: Corpus, options: PartOptions | None = None
) -> tuple[list[str], PartOptions, dict[str, Any] | None]:
    """``(parts, options, detected)`` of the default index of ``corpus``: :data:`DEFAULT_PARTS`
    (without ``dense`` where :func:`vectors_unused` says so), their detected options under
    ``options`` (which win), and the detection record."""
    parts = list(DEFAULT_PARTS)
    merged, detected = detected_options(corpus, parts, options)
    return default_parts(merged, detected, parts), merged, detected


def vectors_unused(options: PartOptions, detected: dict[str, Any] | None) -> str:
    """Why the default index of a corpus gets no ``dense`` part, or "": its detected language
    is one the default encoder was not trained on (the default ranks such a corpus without
    passage vectors, ``multihop.vectors=auto``: encoding them would be most of the build for
    nothing). A ``dense`` part asked for with options of its own (another model) is built."""
    if not detected or options.get("dense"):
        return ""
    language = (options.get("sparse") or {}).get("language", "en")
    from hopgraph.index.dense_options import DEFAULT_EMBEDDER
    from hopgraph.text.language import encoder_gap

    gap = encoder_gap(DEFAULT_EMBEDDER, str(language))
    if gap is None:
        return ""
    langs, speaks = gap
    return (
        f"no passage vectors: the corpus is in {', '.join(langs)}, the default encoder "
        f"({DEFAULT_EMBEDDER}) was trained on {', '.join(sorted(speaks))} text, and the default "
        "ranks without them (add them with: hopgraph add-parts INDEX --parts dense "
        "--set dense.model=A_MODEL_FOR_THE_LANGUAGE)"
    )


def default_parts(
    options: PartOptions, detected: dict[str, Any] | None, parts: list[str]
) -> list[str]:
    """``parts`` (the default index's), less ``dense`` where :func:`vectors_unused` gives a
    reason, which is then recorded in ``detected`` (``why.dense``)."""
    why = vectors_unused(options, detected)
    if not why:
        return parts
    assert detected is not None
    detected[WHY]["dense"] = why
    return [p for p in parts if p != "dense"]
