"""Evaluating against a prebuilt index (``hopgraph eval DATASET --index INDEX_DIR``): the index's
corpus may be much larger than the dataset's (a QA set's pool buried in a scale corpus), but it
must hold the questions' gold passages under the same ids and titles."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hopgraph.corpus import Dataset, Question
from hopgraph.errors import ConfigError, HopgraphError
from hopgraph.eval.runner import MethodSpec
from hopgraph.index import Index
from hopgraph.index.store import missing_parts_message
from hopgraph.retrieve.base import needed_parts

_REBUILD = (
    "build the index over a corpus that keeps every passage of {name} with its id (str(idx) "
    "of the unified layout), e.g. `hopgraph index DIR/corpus.jsonl -o INDEX_DIR` over a corpus "
    "written by `benchmarks/scale.py corpus --dataset {name}`"
)


class GoldNotInIndexError(HopgraphError):
    """The index does not hold the questions' gold passages (or holds others under their ids)."""


def check_gold_in_index(
    index: Index, dataset: Dataset, questions: Sequence[Question] | None = None
) -> int:
    """Check that ``index`` holds the gold passages of ``questions`` (default: all of the
    dataset's) under the dataset's ids, with the dataset's titles; returns the number of gold
    passages checked. Raises :class:`GoldNotInIndexError` saying what is wrong and what to do."""
    questions = dataset.questions if questions is None else questions
    where = str(index.path) if index.path else "the index"
    fix = _REBUILD.format(name=dataset.name)
    gold = list(dict.fromkeys(g for q in questions for g in q.gold))
    absent = [g for g in gold if g not in index.corpus]
    if gold and len(absent) == len(gold):
        raise GoldNotInIndexError(
            f"none of the {len(gold)} gold passages of {dataset.name}'s questions is in {where} "
            f"({len(index)} passages; no id such as {gold[0]!r}): it is not an index of a corpus "
            f"holding {dataset.name}; {fix}"
        )
    if absent:
        missing = set(absent)
        hit = [q for q in questions if any(g in missing for g in q.gold)]
        q = hit[0]
        example = next(g for g in q.gold if g in missing)
        raise GoldNotInIndexError(
            f"{len(hit)} of {len(questions)} questions of {dataset.name} have gold passages that "
            f"{where} lacks ({len(absent)} of {len(gold)} gold ids; e.g. {example!r}, gold of "
            f"question {q.id!r}); {fix}"
        )
    wrong = [
        (g, index.corpus.get(g).title, dataset.corpus.get(g).title)
        for g in gold
        if index.corpus.get(g).title != dataset.corpus.get(g).title
    ]
    if wrong:
        g, have, want = wrong[0]
        raise GoldNotInIndexError(
            f"{len(wrong)} of {len(gold)} gold passages of {dataset.name} have another title in "
            f"{where} (id {g!r}: {have!r} in the index, {want!r} in {dataset.name}): the index "
            f"holds a different corpus whose ids collide with {dataset.name}'s; {fix}"
        )
    return len(gold)


def load_prebuilt(
    folder: str,
    dataset: Dataset,
    specs: Sequence[MethodSpec],
    limit: int | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> Index:
    """Load the index in ``folder`` (timed, a line to ``log``) and check it has every method's
    parts and the gold passages of the dataset's first ``limit`` questions (all without one);
    returns the index. A missing part raises :class:`~hopgraph.errors.ConfigError`, a missing
    gold passage :class:`GoldNotInIndexError`."""
    say = log or (lambda _line: None)
    t0 = time.perf_counter()
    index = Index.load(folder)
    secs = time.perf_counter() - t0
    say(
        f"loaded index {index.path} ({len(index)} passages; parts: {', '.join(index.parts)}) "
        f"in {secs:.2f}s"
    )
    for spec in specs:
        missing = index.missing(
            needed_parts(spec.method, spec.params)
        )  # (the default: without vectors)
        if missing:
            raise ConfigError(missing_parts_message(index, missing, spec.method))
    questions = dataset.questions[:limit] if limit else dataset.questions
    n_gold = check_gold_in_index(index, dataset, questions)
    say(
        f"{dataset.name}: {len(questions)} questions, their {n_gold} gold passages found in the "
        f"index with the same titles"
    )
    return index
