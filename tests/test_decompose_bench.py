"""benchmarks/experiments/decompose.py: a question's parts and the part features (issue 37)."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
EXPERIMENTS = BENCH / "experiments"


@pytest.fixture(scope="module")
def decompose():
    sys.path.insert(0, str(BENCH))  # the script imports its sibling modules
    spec = importlib.util.spec_from_file_location(
        "hopgraph_bench_decompose", EXPERIMENTS / "decompose.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
        sys.path.remove(str(BENCH))


def test_parts_split_where_a_composed_question_joins(decompose):
    parts = decompose.parts
    assert parts(
        "What is the name of the famous bridge in the birthplace of Gloria in D Major's composer?"
    ) == [
        "What is the name",
        "the famous bridge in the birthplace",
        "Gloria in D Major",
        "composer",
    ]
    assert parts(
        "Who is the spouse of the person who voices Jarvis in the Avengers Age of Ultron?"
    ) == [
        "is the spouse",  # a leading question word is a connector too: it only drops
        "the person",
        "voices Jarvis in the Avengers Age of Ultron",  # "of" inside a name does not split
    ]
    assert parts("Which film came out first, Blind Shaft or The Mask Of Fu Manchu?") == [
        "film came out first",
        "Blind Shaft or The Mask Of Fu Manchu",
    ]
    assert parts("  ?") == []


def test_part_features_against_shares_counted_from_the_text(decompose, default_index, demo_dataset):
    from hopgraph.retrieve.multihop import MultihopParams, score_candidates

    index = default_index
    q = demo_dataset.questions[0]  # "In which town was the director of The Lantern Keeper born?"
    s = replace(MultihopParams().settings(), chain=0)
    qvec = index.part("dense").encode_queries([q.text])[0]
    found = score_candidates(index, s, q.text, qvec, None)
    P = decompose.Parts(index, q.text)
    assert len(P.sets) >= 2
    X = decompose.columns(index, P, found)
    assert X.shape == (len(found.rows), len(decompose.NAMES))
    assert (X >= 0).all() and (X <= 1 + 1e-12).all()

    # part_best, recounted from each passage's own words with the index's tokenizer and idf
    sparse = index.part("sparse")
    n = sparse.n_docs
    df = {t: int(d) for t, d in enumerate(sparse._doc_freqs())}
    vocab = sparse.vocab
    for i, r in enumerate(found.rows.tolist()[:20]):
        p = index.corpus[r]
        words = {vocab[t] for t in sparse.tokenizer(p.content) if t in vocab}
        best = 0.0
        for ids in P.sets:
            idf = {int(t): np.log((n + 1.0) / (df[int(t)] + 1.0)) for t in ids}
            best = max(best, sum(v for t, v in idf.items() if t in words) / sum(idf.values()))
        assert X[i, 0] == pytest.approx(best)

    # an anchor is not its own next part, nor half of its own pair
    a = int(found.anchors[0])
    alone = decompose.columns(index, P, replace(found, anchors=[a]))
    assert (alone[found.rows == a][:, 1:] == 0).all()
    assert (alone[found.rows != a][:, 3] > 0).any()
    # a linked anchor is one of the anchors: part_linked_new never exceeds part_new
    assert (X[:, 2] <= X[:, 1] + 1e-12).all()

    D = decompose.dense_columns(index, q.text, found)
    assert D.shape == (len(found.rows), len(decompose.DENSE_NAMES))
    assert (D[:, 2] <= D[:, 1] + 1e-12).all()


def test_an_unknown_feature_is_a_clear_error(decompose, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["decompose.py", "--use", "part_best,bogus"])
    with pytest.raises(SystemExit) as e:
        decompose.main()
    assert e.value.code == 2
    assert "unknown feature(s) bogus" in capsys.readouterr().err
