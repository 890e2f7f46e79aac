"""Distil the bundled passage student: three of MiniLM's six layers, trained to give its vectors.
Table: docs/results.md, "Documents, filters, updates, serving" (encoding speed); ``train`` builds
the packaged passage student. Run time on the 2-core machine: ``train`` 25 to 60 min (the fold
students of docs/notes/encoding.md, 25 min each quiet; the shipped one's card records 3,738 s;
the first student, without the extra collections, 741 s); ``evaluate`` about 12 min
(estimated from benchmarks/results/student_encoder.json: 537 s of dense rebuilds, then the speed
rounds).

    PYTHONPATH=src python benchmarks/student_encoder.py train --data-dir ../shared/data \
        [--out src/hopgraph/models/passage-student] [--epochs 5] [--layers 0,3,5] \
        [--extra-sets scifact,cacm,time,med,npl,pubmedqa] [--extra-per-set 600] \
        [--student-tokens 256] [--teacher-tokens 0]

Training texts: the passages of ``hotpotqa_train`` and ``musique_train`` (title + text, as an
index encodes them), the tables of ``spider`` and ``bird`` serialised as an index of them encodes
them, 600 passages (a seeded sample) of each ``--extra-sets`` collection (unlabelled text of
other kinds: science and medical abstracts, news, computing abstracts; no question or label of
them is read), and as many longer texts made of two of those passages joined (same corpus,
seeded pairs), so that the student also sees passages near the 256-token limit, and one crop of each
passage of two sentences or more (a random run of its sentences under its title). Every 20th
text is held out for the training card's validation cosine. The run is seeded: on one machine
the same command gives the same ``layers.safetensors`` bit for bit (``sha256`` printed and kept
in the card). ``--student-tokens N --teacher-tokens M`` (M > N): the student reads a text's
first N tokens and learns the teacher's vector of its first M (its token targets are the
teacher's states of those N tokens, read in the context of M).

``evaluate`` measures the student against the teacher as a large build runs it (PyTorch, bf16
weights where the CPU has them: ``dense.passage_encoder=torch-bf16``):

    PYTHONPATH=src python benchmarks/student_encoder.py evaluate --data-dir ../shared/data \
        [--passages 800] [--repeats 3] [--out benchmarks/results/student_encoder.json]

Speed: ``--passages`` passages of the 1M scale corpus' kind (every 997th line of
``--speed-corpus`` past the first 30,000; default: the first passages of 2wikimultihopqa), one
whole ``encode`` call per encoder, teacher and student interleaved in each of ``--repeats``
rounds after a warm-up; the median passages/s and their ratio. Cosine of the student's vector
to the teacher's, per passage, on every evaluated corpus. Recall: each evaluated set's cached
default index (``default_ranker.py``'s), its dense part rebuilt by each encoder through
``Index.add_parts`` (the real build path), then ``dense`` and the default (no method, the
shipped ranker) evaluated: R@2/5/10 and nDCG@10, with the paired bootstrap of the default's
ΔR@5. The shipped student has seen 600 unlabelled passages of SciFact's corpus, none of the
other three; the per-collection agreement of students that never saw a collection is
``agreement``'s, run on the fold students (docs/notes/encoding.md). The student reads
``dense.student_max_seq_length`` tokens (160), the teacher 256, in both.

    PYTHONPATH=src python benchmarks/student_encoder.py agreement --data-dir ../shared/data \
        [--student FOLDER] [--student-tokens 160] [--corpora C100K/corpus.jsonl] [--out FILE]

``agreement`` is the gate's cosine (both encoders reading ``--student-tokens``) on each
collection and each corpus of ``--corpora``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.corpus import load_dataset
from hopgraph.corpus.convert import tables_dataset
from hopgraph.models.student import BUNDLED_STUDENT, WEIGHTS, save_student
from hopgraph.training.student import StudentConfig, distil_student, student_card

TRAIN_SETS = ("hotpotqa_train", "musique_train")
TABLE_SETS = ("spider", "bird")
EXTRA_SETS = ("scifact", "cacm", "time", "med", "npl", "pubmedqa")
"""The shipped student's other kinds of text: 600 unlabelled passages of each (issue 62; chosen
by two fold students, each trained with three of them and measured on the other three)."""
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _crop(title: str, text: str, rng: random.Random) -> str | None:
    """A shorter passage: a random run of the text's sentences (fewer than all), its title kept;
    None for a text of one sentence."""
    sentences = SENTENCE_END.split(text.strip())
    if len(sentences) < 2:
        return None
    n = rng.randrange(1, len(sentences))
    a = rng.randrange(0, len(sentences) - n + 1)
    body = " ".join(sentences[a : a + n])
    return f"{title}\n{body}" if title else body


def training_texts(
    data_dir: Path, seed: int, extra: tuple[str, ...] = (), extra_per_set: int = 0
) -> tuple[list[str], list[dict[str, object]]]:
    """The student's training texts: the train sets' passages and the tables, each with a
    joined pair and a crop per passage; ``extra``: collections whose passages (the first
    ``extra_per_set`` of a seeded shuffle) join them the same way (unlabelled text: a
    collection given here is not a held-out one for the student any more)."""
    rng = random.Random(seed)
    texts: list[str] = []
    sources: list[dict[str, object]] = []
    for name in TRAIN_SETS + TABLE_SETS + tuple(extra):
        path = data_dir / name
        ds = tables_dataset(path) if name in TABLE_SETS else load_dataset(path)
        if name in extra:
            keep = list(range(len(ds.corpus)))
            rng.shuffle(keep)
            ds.corpus = [ds.corpus[i] for i in sorted(keep[:extra_per_set])]
        own = [p.content for p in ds.corpus]
        order = list(range(len(own)))
        rng.shuffle(order)
        joined = [f"{own[a]}\n{own[b]}" for a, b in zip(order, order[1:] + order[:1], strict=True)]
        crops = [c for p in ds.corpus if (c := _crop(p.title, p.text, rng))]
        texts += own + joined + crops
        sources.append({"set": name, "passages": len(own), "joined_pairs": len(joined),
                        "crops": len(crops)})  # fmt: skip
    return texts, sources


def train(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    extra = tuple(x for x in args.extra_sets.split(",") if x)
    texts, sources = training_texts(Path(args.data_dir), args.seed, extra, args.extra_per_set)
    val = texts[::20]
    fit = [t for i, t in enumerate(texts) if i % 20]
    config = StudentConfig(
        layers=tuple(int(x) for x in args.layers.split(",")),
        epochs=args.epochs,
        lr=args.lr,
        batch_size=args.batch_size,
        seed=args.seed,
        max_seq_length=args.student_tokens,
        teacher_max_seq_length=args.teacher_tokens,
    )
    print(f"{len(fit)} training texts, {len(val)} held out", file=sys.stderr)
    result = distil_student(fit, val, config)
    card = student_card(result, config, sources)
    out = save_student(args.out, result.model, card)
    digest = hashlib.sha256((out / WEIGHTS).read_bytes()).hexdigest()
    card["sha256"] = digest
    (out / "meta.json").write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"out": str(out), "sha256": digest, **result.validation}, indent=1))


EVAL_SETS = ("2wikimultihopqa", "hotpotqa", "musique", "scifact")
ENCODERS = ("torch-bf16", "student")
METRICS = ("recall@2", "recall@5", "recall@10", "ndcg@10")


def speed_texts(args: argparse.Namespace) -> list[str]:
    if not args.speed_corpus:
        ds = load_dataset(Path(args.data_dir) / "2wikimultihopqa")
        return [p.content for p in ds.corpus][: args.passages]
    texts: list[str] = []
    with open(args.speed_corpus) as f:
        for i, line in enumerate(f):
            if i >= 30_000 and i % 997 == 0:
                d = json.loads(line)
                texts.append(f"{d['title']}\n{d['text']}" if d.get("title") else d["text"])
                if len(texts) >= args.passages:
                    break
    return texts


def speed(texts: list[str], repeats: int, student: str, tokens: int = 0) -> dict[str, Any]:
    from hopgraph.config import make_options
    from hopgraph.index.dense_options import DenseOptions

    opts = make_options(DenseOptions, {"student": student, **student_tokens(tokens)})
    encoders = {e: opts.embedder_for(e) for e in ENCODERS}
    for emb in encoders.values():
        emb.encode(texts[:64], batch_size=opts.batch_size)  # warm-up
    runs: dict[str, list[float]] = {e: [] for e in encoders}
    vectors: dict[str, np.ndarray] = {}
    for r in range(repeats):
        for e, emb in encoders.items():
            t0 = time.perf_counter()
            vectors[e] = emb.encode(texts, batch_size=opts.batch_size)
            runs[e].append(len(texts) / (time.perf_counter() - t0))
            print(f"round {r + 1} {e}: {runs[e][-1]:.1f} passages/s", file=sys.stderr)
    cos = np.sum(vectors["torch-bf16"] * vectors["student"], axis=1)
    med = {e: statistics.median(v) for e, v in runs.items()}
    ratios = [s / t for s, t in zip(runs["student"], runs["torch-bf16"], strict=True)]
    return {
        "passages": len(texts),
        "passages_per_s": {e: round(v, 1) for e, v in med.items()},
        "runs": {e: [round(x, 1) for x in v] for e, v in runs.items()},
        "ratio_median_of_rounds": round(statistics.median(ratios), 3),
        "cosine": {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5)},
    }


def student_tokens(tokens: int) -> dict[str, int]:
    """``dense.student_max_seq_length`` as given (0: the option's default)."""
    return {"student_max_seq_length": tokens} if tokens else {}


def recall(data_dir: Path, sets: list[str], student: str, tokens: int = 0) -> dict[str, Any]:
    from default_ranker import set_corpus

    from hopgraph.cache import index_cache_dir
    from hopgraph.eval import MethodSpec, evaluate
    from hopgraph.eval.bootstrap import paired_bootstrap
    from hopgraph.index import Index

    out: dict[str, Any] = {}
    for name in sets:
        c = set_corpus(name, "test", data_dir, None)
        row: dict[str, Any] = {"passages": len(c.dataset.corpus),
                               "questions": len(c.dataset.questions)}  # fmt: skip
        per_query: dict[str, list[float]] = {}
        vecs = {}
        for enc in ENCODERS:
            index = Index.load(index_cache_dir(data_dir / name, c.dataset.name))
            chosen = {"passage_encoder": enc, "student": student, **student_tokens(tokens)}
            dense = asdict(index.part("dense").options) | chosen
            t0 = time.perf_counter()
            index.add_parts(["dense"], {"dense": dense}, progress=False, rebuild_changed=True)
            build = time.perf_counter() - t0
            vecs[enc] = np.asarray(index.part("dense").embeddings, np.float32)
            specs = [MethodSpec("dense"), MethodSpec("multihop", label="default")]
            res = {r.label: r for r in evaluate(index, c.dataset, specs, progress=False)}
            row[enc] = {
                label: {m: round(r.metrics[m], 4) for m in METRICS} for label, r in res.items()
            }
            row[enc]["dense_build_s"] = round(build, 1)
            per_query[enc] = [x["recall@5"] for x in res["default"].per_query]
            print(f"{name} {enc}: {row[enc]}", file=sys.stderr)
        cos = np.sum(vecs["torch-bf16"] * vecs["student"], axis=1)
        row["cosine"] = {"mean": round(float(cos.mean()), 5), "min": round(float(cos.min()), 5),
                         "p01": round(float(np.percentile(cos, 1)), 5)}  # fmt: skip
        row["default_delta_recall@5"] = paired_bootstrap(
            per_query["torch-bf16"], per_query["student"], seed=0, n_resamples=2000
        )
        out[name] = row
    return out


AGREEMENT_SETS = ("hotpotqa", "musique", "2wikimultihopqa", "time", "xquad_en", "med", "npl",
                  "pubmedqa", "scifact", "cacm")  # fmt: skip


def agreement(args: argparse.Namespace) -> None:
    """The gate's measure (``DenseOptions.student_agreement``: 256 passages spread over the
    corpus, both encoders reading ``--student-tokens``) for the student in ``--student`` on
    each collection, and the corpora in ``--corpora`` (jsonl files)."""
    from hopgraph.config import make_options
    from hopgraph.corpus import load_corpus
    from hopgraph.index.dense_options import DenseOptions

    opts = make_options(
        DenseOptions, {"student": args.student, **student_tokens(args.student_tokens)}
    )
    out: dict[str, float] = {}
    for name in args.sets.split(","):
        out[name] = round(
            opts.student_agreement(load_dataset(Path(args.data_dir) / name).corpus), 4
        )
        print(name, out[name], file=sys.stderr, flush=True)
    for path in (x for x in args.corpora.split(",") if x):
        out[path] = round(opts.student_agreement(load_corpus(path)), 4)
        print(path, out[path], file=sys.stderr, flush=True)
    report = {"command": " ".join(sys.argv), "student": args.student,
              "student_tokens": opts.student_length(), "agreement": out}  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


def evaluate_student(args: argparse.Namespace) -> None:
    report: dict[str, Any] = {"command": " ".join(sys.argv)}
    report["speed"] = speed(speed_texts(args), args.repeats, args.student, args.student_tokens)
    print(json.dumps(report["speed"]), file=sys.stderr)
    if not args.no_recall:
        report["recall"] = recall(
            Path(args.data_dir), args.sets.split(","), args.student, args.student_tokens
        )
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="distil the student")
    t.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    t.add_argument("--out", default=str(BUNDLED_STUDENT))
    t.add_argument("--layers", default="0,3,5")
    t.add_argument("--epochs", type=int, default=5)
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument(
        "--extra-sets", default=",".join(EXTRA_SETS),
        help="collections whose passages join the texts (empty: none, the first student's recipe)",
    )  # fmt: skip
    t.add_argument("--extra-per-set", type=int, default=600)
    t.add_argument("--student-tokens", type=int, default=256, help="tokens the student reads")
    t.add_argument(
        "--teacher-tokens", type=int, default=0,
        help="tokens the teacher reads for the targets (0: as the student)",
    )  # fmt: skip
    g = sub.add_parser("agreement", help="the gate's cosine on each collection")
    g.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    g.add_argument("--student", default="bundled", help="a student folder (default: bundled)")
    g.add_argument("--sets", default=",".join(AGREEMENT_SETS))
    g.add_argument("--corpora", default="", help="more corpora (jsonl files), comma-separated")
    g.add_argument(
        "--student-tokens", type=int, default=0,
        help="dense.student_max_seq_length (default: the option's default)",
    )  # fmt: skip
    g.add_argument("--out", default="")
    e = sub.add_parser("evaluate", help="speed, cosine and recall of the student")
    e.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    e.add_argument("--speed-corpus", default="")
    e.add_argument("--passages", type=int, default=800)
    e.add_argument("--repeats", type=int, default=3)
    e.add_argument("--no-recall", action="store_true")
    e.add_argument("--out", default="benchmarks/results/student_encoder.json")
    e.add_argument("--sets", default=",".join(EVAL_SETS))
    e.add_argument("--student", default="bundled", help="a student folder (default: bundled)")
    e.add_argument(
        "--student-tokens", type=int, default=0,
        help="dense.student_max_seq_length (default: the option's default)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.cmd == "train":
        train(args)
    elif args.cmd == "agreement":
        agreement(args)
    else:
        evaluate_student(args)


if __name__ == "__main__":
    main()
