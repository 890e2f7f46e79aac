"""The hop *query* encoder (issues 17 and 37): measured set held out, and built for the package.
Table: docs/results.md, "Latency and memory per method and switch" (the ``hop_encoder=true``
switch). Run time on the 2-core machine: ``--ship`` about 25 min (``make hop-encoder``, recorded in
the Makefile); measuring, about 15 min per held-out set (estimated from the two fold encoders at
5.5 min each, recorded in docs/notes/realistic-pools-chain-round.md, and a ranker refit).

    .venv/bin/python benchmarks/hop_encoder.py --held-out musique --data-dir ../shared/data \
        [--epochs 2] [--anchors 3] [--models-dir WORK/hop-encoders] [--out FILE.json] \
        [--backend torch|onnx-fp32|onnx-int8] [--max-len 160] [--freeze-embeddings] \
        [--layers 0,3,5] [--synthetic N [--synthetic-kind bridge]] [--gate] [--bf16] [--seed N]
        [--ensemble 0,1 | --full-encoder] [--scale-work DIR] [--parts]
        [--student-layers 0,3,5 [--student-len 64] [--student-epochs 5]
         [--distil-extra xquad_en,pubmedqa,scifact,cacm,med,npl,time]]
    .venv/bin/python benchmarks/hop_encoder.py --ship src/hopgraph/models/hop-encoder \
        --freeze-embeddings --gate --data-dir ../shared/data --models-dir WORK   # make hop-encoder

With ``--ship`` no set is held out: the ranker is fitted on every set's out-of-fold features
(with ``--gate``, on its chain questions only), the encoder trained on every set's chains, and
both written as the hop encoder folder behind ``multihop``'s ``hop_encoder`` switch
(:mod:`hopgraph.models.hop_encoder`; training: :mod:`hopgraph.training.hop_encoder`). Otherwise
it measures. The encoder is the bundled MiniLM fine-tuned as a query tower only: its input is
the question plus one gold passage (``question [SEP] title. text``), its target the fixed index
vector of another gold passage of the same question (every ordered pair), against the first 8
non-gold candidates of the pipeline's first round (BM25's top first; fixed vectors; InfoNCE,
temperature 0.05, AdamW 3e-5, batch 16; ``--max-len`` tokens, 160 by default). The index and
its passage vectors do not change. Cheaper variants: ``--freeze-embeddings`` trains the
transformer layers only (the shipped form: its layers beside the bundled MiniLM),
``--layers`` keeps only those of MiniLM's layers (as the passage student does).

Protocol, "set held out" as docs/benchmarks.md's default-pipeline table: the training
questions are every entity-titled training set but ``--held-out`` (dev questions of the other
sets, and both train sets). They are split in two halves; an encoder trained on one half gives
the features of the other, so the LightGBM ranker (the shipped ranker's settings, the training
questions in the shipped recipe's order) is fitted on out-of-fold first-round features; the
held-out questions get the mean of both encoders' features. Two new features per candidate:
the best cosine of its vector with the hop vectors of the round's top ``--anchors`` anchors
(an anchor itself excluded), and that minus its plain cosine.

Printed: Recall@2/5/10 and R@5 by number of gold passages on the held-out set's dev questions,
with the default's features alone and with the hop encoder's two more, each for one round
(``chain=0``) and with the chain round (issue 37: the ranker's top ``chain`` anchor the next
hop; the hop features, the encoder's included, are taken again from them), on the set's own
pool and, for MuSiQue and HotpotQA, on its grown pool (``realistic_pools.py``), and with the
encoder's features in the chain round only (the first round is the default's own). The ranking
is the default's (``final_order``: BM25 fused where the corpus profile says so). Also the
encoder's cost: the median time to encode one round's ``--anchors`` hop texts, run as
``--backend`` says (PyTorch fp32 as trained, or hopgraph's ONNX Runtime encoder in fp32 or
int8, for the training features too). With ``--gate``, also rows where a comparison question
(:func:`hopgraph.text.questions.is_comparison`) keeps the default's ranking, with the ranker
fitted on every question or on the chain questions only ("(chains)"). With ``--gate
--bf16``, also the shipped form's rows ("(chains), bf16") with the encoders run in bf16 for the
evaluated questions (the ranker's training features stay fp32), as ``multihop``'s
``hop_encoder_precision=auto`` runs the shipped encoder on a CPU with native bf16.
``--ensemble 0,1`` makes each fold's encoder the mean of those draws' hop vectors;
``--full-encoder`` gives the evaluated questions the features of one encoder trained on every
training chain (as the shipped encoder is trained) in place of the two fold encoders' mean.
``--student-layers`` (issue 63: a hop encoder cheap enough for the default) distils each trained
encoder (each fold's, the full one's, the shipped one's) into those of its layers reading the
first ``--student-len`` tokens of a hop text (``training.hop_encoder.distil_hop_student``: the
teacher's vector of the whole text as the target), on the hop texts of every training question
(the held-out set's never) with its first round's anchors, its gold passages and its first 5
candidates; the students then give every hop feature, the ranker's training features included,
and ``--backend`` runs the students. ``--distil-extra`` adds, for the students only, the hop texts
of more questions, no label read: each question of those collections (English ones whose titles
are not entity names, so the hop encoder never runs on them and their own figures stay
untouched) with its first round's top ``--distil-extra-k`` candidates. A student fitted on a few
hundred questions' texts agrees with its teacher far less on new questions than on its own
(``experiments/hop_student_agreement.py``); these are more questions to learn from.

``--scale-work DIR`` also fits the ranker on the shipped ranker's scale training sets
(``default_ranker.SCALE``: the train sets buried in 100k passages, their corpora and indexes in
DIR, made there where missing), last, as the default's recipe does since issue 38. Their
questions are the train sets' own, so each gets the hop features of the fold encoder that did not
train on it; the encoders' training chains do not change. ``--parts`` (with ``--gate``) adds
the shipped form with ``benchmarks/experiments/decompose.py``'s part features beside the
encoder's two (all eight, and the three parts' cosines only), the ranker fitted on the chain
questions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from default_ranker import SCALE_WORK, TRAINING, default_index, scale_corpora, set_of  # noqa: E402
from realistic_pools import SIZES, grown_pool  # noqa: E402

from hopgraph.eval.metrics import compute_all  # noqa: E402
from hopgraph.models.embedder import DEFAULT_EMBEDDER, resolve_model  # noqa: E402
from hopgraph.models.hop_encoder import ANCHORS, hop_columns, hop_text  # noqa: E402
from hopgraph.retrieve.final_fusion import corpus_weights, final_order
from hopgraph.retrieve.hop_features import corpus_kind  # noqa: E402
from hopgraph.retrieve.multihop import (
    # noqa: E402
    MultihopParams,
    chain_round,
    score_candidates,
)
from hopgraph.text.questions import is_comparison  # noqa: E402
from hopgraph.training.hop_encoder import chain_pairs, train_hop_encoder  # noqa: E402
from hopgraph.training.ranker import LGB_PARAMS  # noqa: E402


def encoder(pairs: list, args: argparse.Namespace, path: Path | None) -> Any:
    """The hop encoder saved at ``path``, or one trained on ``pairs`` (and saved there)."""
    from sentence_transformers import SentenceTransformer

    if path is not None and path.exists():
        m = SentenceTransformer(str(path), device="cpu")
        m.max_seq_length = args.max_len
        return m.eval()
    layers = [int(i) for i in args.layers.split(",")] if args.layers else []
    model = train_hop_encoder(pairs, model=resolve_model(DEFAULT_EMBEDDER), epochs=args.epochs,
                              max_len=args.max_len, freeze_embeddings=args.freeze_embeddings,
                              layers=layers, seed=args.seed)  # fmt: skip
    if path is not None:
        model.save(str(path))
    return model


def replace_seed(args: argparse.Namespace, seed: int) -> argparse.Namespace:
    """``args`` with ``--seed seed`` (one draw of an ``--ensemble``)."""
    return argparse.Namespace(**{**vars(args), "seed": seed})


def synthetic_chains(C: dict, s: Any, n: int, cands: dict, shares: tuple = (0.0, 0.5, 0.5)) -> list:
    """Up to ``n`` synthetic two-passage chains (``shares``: of sentence, bridge and comparison
    questions, :func:`~hopgraph.training.synthetic.synthetic_questions`, seed 0) of each train
    set's corpus, added to ``cands`` as (name, "syn", k) items for the encoders' training
    pairs."""
    from hopgraph.training.synthetic import synthetic_questions

    items = []
    for name, c in C.items():
        if not name.endswith("_train"):
            continue
        qs = synthetic_questions(c.index.corpus, n, seed=0, shares=shares)
        vecs = c.index.part("dense").encode_queries([q.text for q in qs])
        pos = c.index.corpus.position
        for k, (q, v) in enumerate(zip(qs, vecs, strict=True)):
            gold = [pos(g) for g in q.gold]
            cands[(name, "syn", k)] = (score_candidates(c.index, s, q.text, v, None), gold, q.text)
            items.append((name, "syn", k))
    print(f"synthetic chains: {len(items)}", file=sys.stderr, flush=True)
    return items


class OnnxHopEncoder:
    """A trained hop encoder run by hopgraph's ONNX Runtime encoder (``precision`` fp32 or
    int8), with sentence-transformers' ``encode`` call."""

    def __init__(self, path: str, precision: str, max_len: int):
        from hopgraph.models.embedder import Embedder

        self.embedder = Embedder(path, backend="onnx", precision=precision, max_seq_length=max_len)

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        return self.embedder.encode(texts, batch_size=8)


class Bf16HopEncoder:
    """A trained hop encoder run with bf16 weights and activations, as hopgraph's
    :class:`~hopgraph.models.embedder.Embedder` runs ``precision="bf16"`` (vectors renormalised
    in float32), with sentence-transformers' ``encode`` call."""

    def __init__(self, model: Any):
        import copy

        import torch

        self.model = copy.deepcopy(model).to(torch.bfloat16).eval()

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        import torch

        with torch.inference_mode():
            emb = self.model.encode(texts, batch_size=8, convert_to_tensor=True)
        out = emb.float().cpu().numpy()
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


class MeanEncoder:
    """Several hop encoders as one: the mean of their unit hop vectors, renormalised."""

    def __init__(self, models: list):
        self.models = models

    def encode(self, texts: list[str], **_: Any) -> np.ndarray:
        V = sum(m.encode(texts, normalize_embeddings=True, batch_size=8) for m in self.models)
        return V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)


class HopColumns:
    """The two hop-encoder features of a round's candidates, from one or more encoders (their
    mean), with each (question, anchor) hop vector encoded once."""

    def __init__(self, models: list, anchors: int):
        self.models, self.anchors = models, anchors
        self.vecs: dict[tuple, np.ndarray] = {}
        self.seconds: list[float] = []

    def __call__(self, index: Any, text: str, found: Any) -> np.ndarray:
        A = [int(a) for a in found.anchors[: self.anchors]]
        out = np.zeros((len(found.rows), 2))
        for k, model in enumerate(self.models):
            todo = [a for a in A if (id(index), text, k, a) not in self.vecs]
            if todo:
                t0 = time.perf_counter()
                V = model.encode([hop_text(index.corpus, text, a) for a in todo],
                                 normalize_embeddings=True, batch_size=8)  # fmt: skip
                if k == 0 and len(todo) == len(A):
                    self.seconds.append(time.perf_counter() - t0)
                for a, v in zip(todo, V, strict=True):
                    self.vecs[(id(index), text, k, a)] = v
            hops = [self.vecs[(id(index), text, k, a)] for a in A]
            out += hop_columns(index.part("dense"), found.rows, A, hops, found.feats.X)
        return out / len(self.models)


PART_ROWS = {  # label → the part columns (PartColumns' order) beside the encoder's two
    "+ hop encoder + parts (chains)": list(range(8)),
    "+ hop encoder + parts' cosines (chains)": [5, 6, 7],
}


class PartColumns:
    """``benchmarks/experiments/decompose.py``'s eight part features of a round's candidates:
    the five term shares, then the three parts' cosines (imported when asked for: decompose's
    protocol module imports this one)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parent / "experiments"))
        import decompose

        self.dc = decompose

    def __call__(self, index: Any, text: str, found: Any) -> np.ndarray:
        P = self.dc.Parts(index, text)
        return np.column_stack([self.dc.columns(index, P, found),
                                self.dc.dense_columns(index, text, found)])  # fmt: skip


class WithParts:
    """A hop-encoder column maker with part columns ``sel`` after its two."""

    def __init__(self, hop: HopColumns, parts: PartColumns, sel: list[int]):
        self.hop, self.parts, self.sel = hop, parts, sel
        self.seconds = hop.seconds

    def __call__(self, index: Any, text: str, found: Any) -> np.ndarray:
        return np.column_stack([self.hop(index, text, found),
                                self.parts(index, text, found)[:, self.sel]])  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", default="musique")
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--index-dir", default=None)
    ap.add_argument("--work", default=str(Path.home() / ".cache/hopgraph/datasets/realistic"))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--anchors", type=int, default=3)
    ap.add_argument("--models-dir", default=None, help="keep (and reuse) the trained encoders")
    ap.add_argument("--out", default=None, help="write the results here (JSON)")
    ap.add_argument("--max-len", type=int, default=160, help="tokens of a hop text")
    ap.add_argument("--layers", default="", help="keep these of MiniLM's layers (e.g. 0,3,5)")
    ap.add_argument(
        "--synthetic", type=int, default=0,
        help="also train the encoders on N synthetic bridge and comparison chains of each train "
        "set's corpus (training/synthetic.py; never the ranker)",
    )  # fmt: skip
    ap.add_argument(
        "--synthetic-kind", default="both", choices=("both", "bridge"),
        help="with --synthetic: half bridge and half comparison chains, or bridge chains only",
    )  # fmt: skip
    ap.add_argument(
        "--ship", default=None, metavar="FOLDER",
        help="hold no set out: fit the ranker on every set's out-of-fold features (with --gate: "
        "its chain questions only), train the encoder on every set's chains and write a hop "
        "encoder folder (multihop's hop_encoder; needs --freeze-embeddings)",
    )  # fmt: skip
    ap.add_argument(
        "--gate", action="store_true",
        help="also rows where a comparison question (is_comparison) keeps the default's ranking",
    )  # fmt: skip
    ap.add_argument(
        "--freeze-embeddings", action="store_true",
        help="train the transformer layers only (the token embeddings stay MiniLM's)",
    )  # fmt: skip
    ap.add_argument(
        "--backend", default="torch", choices=("torch", "onnx-fp32", "onnx-int8"),
        help="run the trained encoders so for every feature (onnx: hopgraph's ONNX Runtime "
        "encoder, its int8 copy as dense.precision=int8 makes it; needs --models-dir)",
    )  # fmt: skip
    ap.add_argument(
        "--seed", type=int, default=0,
        help="the encoders' training draw (pair order and dropout; the folds stay seed 0's)",
    )  # fmt: skip
    ap.add_argument(
        "--bf16", action="store_true",
        help="with --gate: also the shipped form with the encoders run in bf16 for the evaluated "
        "questions (as hop_encoder_precision=auto on a CPU with native bf16; the ranker's "
        "training features stay fp32)",
    )  # fmt: skip
    ap.add_argument(
        "--ensemble", default="",
        help="seeds (e.g. 0,1): each fold's encoder is the mean of these draws' hop vectors "
        "(each trained as --seed would, or reused from --models-dir)",
    )  # fmt: skip
    ap.add_argument(
        "--full-encoder", action="store_true",
        help="the evaluated questions' hop features from one encoder trained on every training "
        "chain, as --ship trains the shipped one (not the mean of the two fold encoders')",
    )  # fmt: skip
    ap.add_argument(
        "--parts", action="store_true",
        help="with --gate: also the shipped form with the question's part features "
        "(experiments/decompose.py) beside the encoder's: all eight, and the parts' cosines only",
    )  # fmt: skip
    ap.add_argument(
        "--student-layers", default="",
        help="distil each trained encoder into these of its layers (e.g. 0,3,5), reading "
        "--student-len tokens, on the hop texts of every training question's anchors, gold "
        "passages and first candidates; the students give every feature (needs --models-dir)",
    )  # fmt: skip
    ap.add_argument("--student-len", type=int, default=64, help="tokens a student reads")
    ap.add_argument("--student-epochs", type=int, default=5)
    ap.add_argument(
        "--distil-extra", default="",
        help="with --student-layers: also distil on the hop texts of these collections' questions "
        "(comma-separated, read from --data-dir, scifact's train split) with their first round's "
        "top --distil-extra-k candidates; no label is read",
    )  # fmt: skip
    ap.add_argument("--distil-extra-k", type=int, default=3)
    ap.add_argument(
        "--scale-work", nargs="?", const=str(SCALE_WORK), default=None,
        help="also fit the ranker on the recipe's scale training sets, their corpora and "
        f"indexes in this folder (default {SCALE_WORK}; made where missing)",
    )  # fmt: skip
    args = ap.parse_args()
    if args.full_encoder and (args.ship or args.ensemble):
        raise SystemExit("error: --full-encoder is a held-out experiment, one draw")
    if args.ensemble and (args.ship or args.backend != "torch"):
        raise SystemExit("error: --ensemble is an experiment in PyTorch (no --ship, no onnx)")
    if args.parts and not (args.gate and not args.ship):
        raise SystemExit("error: --parts is a held-out experiment with --gate")
    if args.bf16 and not (args.gate and args.backend == "torch"):
        raise SystemExit("error: --bf16 needs --gate and --backend torch")
    if args.ship and args.seed:
        raise SystemExit("error: --ship trains with seed 0 (the shipped encoder's draw)")
    if args.distil_extra and not args.student_layers:
        raise SystemExit("error: --distil-extra needs --student-layers (it is a student's texts)")
    if args.student_layers and not args.models_dir:
        raise SystemExit("error: --student-layers needs --models-dir (a student reads its teacher)")
    if args.ship and not (args.freeze_embeddings and args.backend == "torch" and not args.layers
                          and args.anchors == ANCHORS):  # fmt: skip
        raise SystemExit("error: --ship needs --freeze-embeddings, --backend torch, every layer "
                         f"and --anchors {ANCHORS} (the shipped encoder's form)")  # fmt: skip

    import lightgbm as lgb
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(2)
    data = Path(args.data_dir)
    sets = [default_index(n, f, data, args.index_dir, split) for n, split, f in TRAINING]
    C = {c.name: c for c in sets if corpus_kind(c.index) == "entity_titles"}
    E = "" if args.ship else args.held_out
    s = MultihopParams().settings()
    one = replace(s, chain=0)
    cands = {}  # (set, question) → (first round's candidates, gold rows, question text)
    for n, c in C.items():
        for qi, (q, v, g) in enumerate(zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True)):
            cands[(n, qi)] = (score_candidates(c.index, one, q.text, v, None), list(g), q.text)

    def pairs_of(items: list) -> list:
        return [p for it in items for p in chain_pairs(C[it[0]].index, cands[it][2], cands[it][1],
                                                         cands[it][0].rows)]  # fmt: skip

    train_items = [it for it in cands if it[0] != E]  # the recipe's order (TRAINING)
    shuffled = list(train_items)
    random.Random(0).shuffle(shuffled)
    folds = [shuffled[0::2], shuffled[1::2]]
    S = {}  # the scale training sets: the ranker's, after the others (the recipe's order)
    for c in scale_corpora(data, Path(args.scale_work)) if args.scale_work else []:
        if corpus_kind(c.index) == "entity_titles" and set_of(c.name) != E:
            S[c.name] = c
    scale_items = []
    for n, c in S.items():
        for qi, (q, v, g) in enumerate(zip(c.dataset.questions, c.qvecs, c.gold_rows, strict=True)):
            cands[(n, qi)] = (score_candidates(c.index, one, q.text, v, None), list(g), q.text)
            scale_items.append((n, qi))
    ranker_items = train_items + scale_items
    shares = (0.0, 0.5, 0.5) if args.synthetic_kind == "both" else (0.0, 1.0, 0.0)
    synthetic = synthetic_chains(C, one, args.synthetic, cands, shares) if args.synthetic else []
    models_dir = Path(args.models_dir) if args.models_dir else None
    if models_dir:
        models_dir.mkdir(parents=True, exist_ok=True)
    if args.backend != "torch" and models_dir is None:
        raise SystemExit("error: --backend onnx-* needs --models-dir (the export reads a folder)")
    distil_items = [it for it in train_items + synthetic if it[0] != E]
    texts = distil_texts(C, cands, distil_items) if args.student_layers else []  # once, for all
    if args.distil_extra:
        extra = [n for n in args.distil_extra.split(",") if n]
        texts += extra_texts(data, extra, args.index_dir, one, args.distil_extra_k)
    models, X_extra = [], {}
    seeds = [int(x) for x in args.ensemble.split(",")] if args.ensemble else [args.seed]
    for k in range(2):
        draws = []
        for seed in seeds:
            variant = (
                ("" if args.max_len == 160 else f"-len{args.max_len}")
                + ("-frozen" if args.freeze_embeddings else "")
                + (f"-layers{args.layers.replace(',', '')}" if args.layers else "")
                + (f"-syn{args.synthetic}" if args.synthetic else "")
                + ("-bridge" if args.synthetic and args.synthetic_kind == "bridge" else "")
                + (f"-seed{seed}" if seed else "")
            )
            path = models_dir / f"{E or 'all'}-fold{k}{variant}" if models_dir else None
            pairs = pairs_of(folds[1 - k] + synthetic)
            draws.append(encoder(pairs, replace_seed(args, seed), path))
        models.append(draws[0] if len(draws) == 1 else MeanEncoder(draws))
        if args.student_layers:
            path = distilled(path, texts, args)
            models[k] = student_model(path, args)
        if args.backend != "torch":
            length = args.student_len if args.student_layers else args.max_len
            models[k] = OnnxHopEncoder(str(path), args.backend.split("-")[1], length)
        cols = HopColumns([models[k]], args.anchors)
        for it in folds[k]:
            X_extra[it] = cols(C[it[0]].index, cands[it][2], cands[it][0])
        held = set(folds[k])  # a scale copy of a question: the encoder that did not train on it
        for it in scale_items:
            if (set_of(it[0]), it[1]) in held:
                X_extra[it] = cols(S[it[0]].index, cands[it][2], cands[it][0])

    if args.full_encoder:  # the evaluated questions' encoder: every training chain
        path = models_dir / f"{E}-full{variant}" if models_dir else None
        models = [encoder(pairs_of(train_items + synthetic), args, path)]
        if args.student_layers:
            path = distilled(path, texts, args)
            models = [student_model(path, args)]
        if args.backend != "torch":
            length = args.student_len if args.student_layers else args.max_len
            models = [OnnxHopEncoder(str(path), args.backend.split("-")[1], length)]

    def index_of(it: tuple) -> Any:
        return (S[it[0]] if it[0] in S else C[it[0]]).index

    part_cols = PartColumns() if args.parts else None
    P_extra = {it: part_cols(index_of(it), cands[it][2], cands[it][0])
               for it in ranker_items} if part_cols else {}  # fmt: skip

    def fit(extra: bool, chains_only: bool = False, parts: list | None = None) -> Any:
        items = [it for it in ranker_items if not (chains_only and is_comparison(cands[it][2]))]
        X = [np.column_stack([cands[it][0].feats.X, X_extra[it]]) if extra
             else cands[it][0].feats.X for it in items]  # fmt: skip
        if parts is not None:
            X = [
                np.column_stack([x, P_extra[it][:, parts]]) for x, it in zip(X, items, strict=True)
            ]
        y = [np.isin(cands[it][0].rows, cands[it][1]).astype(int) for it in items]
        ranker = lgb.LGBMRanker(**LGB_PARAMS)
        ranker.fit(np.concatenate(X), np.concatenate(y), group=[len(x) for x in X])
        return ranker.booster_

    boosters = {"default features": (fit(False), None),
                "+ hop encoder": (fit(True), HopColumns(models, args.anchors))}  # fmt: skip
    if args.gate:  # fitted on the chain questions only, for the gated rows
        boosters["+ hop encoder (chains)"] = (fit(True, True), boosters["+ hop encoder"][1])
    for label, sel in PART_ROWS.items() if args.parts else ():
        hop = boosters["+ hop encoder"][1]
        boosters[label] = (fit(True, True, sel), WithParts(hop, part_cols, sel))
    if args.bf16:  # the same ranker over features of the encoders run in bf16
        bf16 = HopColumns([MeanEncoder([Bf16HopEncoder(d) for d in m.models])
                           if isinstance(m, MeanEncoder) else Bf16HopEncoder(m)
                           for m in models], args.anchors)  # fmt: skip
        boosters["+ hop encoder (chains), bf16"] = (boosters["+ hop encoder (chains)"][0], bf16)
    if args.ship:  # the ranker: fitted on the chain questions only with --gate
        pairs = pairs_of(train_items + synthetic)
        label = "+ hop encoder (chains)" if args.gate else "+ hop encoder"
        ranked = [it for it in ranker_items if not (args.gate and is_comparison(cands[it][2]))]
        full = models_dir / f"all-full{variant}" if models_dir else None
        ship(Path(args.ship), args, pairs, boosters[label][0], train_items, ranked, texts, full)
        return
    pools = {"own": C[E]}
    if E in SIZES:
        folder, _ = grown_pool(E, data, Path(args.work))
        pools[str(SIZES[E])] = default_index(folder.name, E, folder.parent, args.index_dir, "test")
    results: dict[str, Any] = {}
    for pool, pc in pools.items():
        weight = corpus_weights(pc.index, True)
        ids = pc.index.corpus.ids
        rows: dict[str, list] = {}
        for q, v in zip(pc.dataset.questions, pc.qvecs, strict=True):

            def scored(found: Any, label: str, text: str = q.text, pc: Any = pc) -> Any:
                booster, cols = boosters[label]
                X = found.feats.X if cols is None else np.column_stack(
                    [found.feats.X, cols(pc.index, text, found)])  # fmt: skip
                return replace(found, scores=booster.predict(X, num_threads=1))

            def chained(found: Any, label: str, pc: Any = pc) -> Any:
                return scored(chain_round(pc.index, s, found, lambda X: np.zeros(len(X))), label)

            first = score_candidates(pc.index, one, q.text, v, None)
            r1 = {label: scored(first, label) for label in boosters}
            runs = {f"{label}, one round": r1[label] for label in boosters}
            runs.update({f"{label}, chain={s.chain}": chained(r1[label], label) for label in r1})
            # the encoder in the chain round only: the first round is the default's own
            runs[f"+ hop encoder in the chain round only, chain={s.chain}"] = chained(
                r1["default features"], "+ hop encoder"
            )
            if args.gate:  # a comparison keeps the default's ranking, a chain gets the encoder
                only = f"in the chain round only, chain={s.chain}"
                runs[f"+ hop encoder (chains) {only}"] = chained(
                    r1["default features"], "+ hop encoder (chains)"
                )
                default = runs[f"default features, chain={s.chain}"]
                for label in (f"+ hop encoder, chain={s.chain}", f"+ hop encoder {only}",
                              f"+ hop encoder (chains), chain={s.chain}",
                              f"+ hop encoder (chains) {only}",
                              *([f"+ hop encoder (chains), bf16, chain={s.chain}"]
                                if args.bf16 else []),
                              *([f"{p}, chain={s.chain}" for p in PART_ROWS]
                                if args.parts else [])):  # fmt: skip
                    runs[f"{label}, gated"] = default if is_comparison(q.text) else runs[label]
            for label, found in runs.items():
                order = found.rows[final_order(found, weight, s.k_rrf)[0]]
                m = compute_all([ids[r] for r in order], q.gold, [2, 5, 10])
                rows.setdefault(label, []).append((len(q.gold), m))
        results[pool] = {label: summary(r) for label, r in rows.items()}
        for label, r in results[pool].items():
            print(E, pool, label, json.dumps(r), flush=True)

    def p50(cols: Any) -> float | None:
        return round(1000 * statistics.median(cols.seconds), 1) if cols.seconds else None

    report = {"held_out": E, "anchors": args.anchors, "epochs": args.epochs,
              "backend": args.backend, "max_len": args.max_len,
              "freeze_embeddings": args.freeze_embeddings, "layers": args.layers,
              "synthetic": args.synthetic,
              "synthetic_kind": args.synthetic_kind,
              "seed": args.seed,
              "ensemble": args.ensemble,
              "full_encoder": args.full_encoder,
              "student_layers": args.student_layers,
              "student_len": args.student_len if args.student_layers else None,
              "scale_sets": list(S),
              "pools": results,
              "encode_ms_p50": p50(boosters["+ hop encoder"][1])}  # fmt: skip
    if args.bf16:
        report["encode_ms_p50_bf16"] = p50(boosters["+ hop encoder (chains), bf16"][1])
    print(json.dumps({k: v for k, v in report.items() if k.startswith("encode_ms")}))
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


def distil_texts(C: dict, cands: dict, items: list) -> list[str]:
    """The texts a student learns from: each question of ``items`` with its first round's
    anchors, its gold passages and its first 5 candidates (distinct), in ``items``' order."""
    from hopgraph.training.hop_encoder import hop_texts

    out = []
    for it in items:
        found, gold, text = cands[it]
        rows = [*found.anchors, *gold, *found.rows[:5].tolist()]
        out += hop_texts(C[it[0]].index, text, rows)
    return out


def extra_texts(data: Path, names: list[str], index_dir: Any, s: Any, k: int) -> list[str]:
    """More texts for a student, no label read: each question of the collections ``names`` (in
    ``data``; scifact's train split, the others' test) with its first round's top ``k``
    candidates, the hop texts the default would encode there."""
    from hopgraph.training.hop_encoder import hop_texts

    out = []
    for name in names:
        c = default_index(name, name, data, index_dir, "train" if name == "scifact" else "test")
        for q, v in zip(c.dataset.questions, c.qvecs, strict=True):
            found = score_candidates(c.index, s, q.text, v, None)
            out += hop_texts(c.index, q.text, found.rows[:k].tolist())
    print(f"distillation texts of {','.join(names)}: {len(out)}", file=sys.stderr, flush=True)
    return out


def distilled(teacher: Path, texts: list[str], args: argparse.Namespace) -> Path:
    """The folder of ``teacher``'s student (``--student-layers``, ``--student-len``), distilled
    on ``texts`` where it is not there yet."""
    from hopgraph.training.hop_encoder import distil_hop_student

    layers = [int(i) for i in args.student_layers.split(",")]
    out = Path(
        f"{teacher}-student{''.join(map(str, layers))}-len{args.student_len}"
        + ("" if args.student_epochs == 5 else f"-ep{args.student_epochs}")
        + (f"-extra{args.distil_extra_k}-{args.distil_extra.replace(',', '+')}"
           if args.distil_extra else "")
    )  # fmt: skip
    if not out.exists():
        st, record = distil_hop_student(
            texts, teacher, layers=layers, max_len=args.student_len, teacher_len=args.max_len,
            epochs=args.student_epochs,
        )  # fmt: skip
        st.save(str(out))
        (out / "distilled.json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"student {out.name}: cosine to its teacher "
              f"{record['history'][-1]['val_cos_mean']:.4f}", flush=True)  # fmt: skip
    return out


def student_model(path: Path, args: argparse.Namespace) -> Any:
    """A distilled student, loaded to read ``--student-len`` tokens."""
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(str(path), device="cpu")
    m.max_seq_length = args.student_len
    return m.eval()


def ship(
    folder: Path,
    args: argparse.Namespace,
    pairs: list,
    booster: Any,
    items: list,
    ranked: list,
    texts: list[str],
    full: Path | None,
) -> None:
    """Train the shipped encoder on every set's chains (the questions ``items``) and write it
    with ``booster`` (fitted on the questions ``ranked``, on the out-of-fold features of two
    half-trained encoders, or of their students) as a hop encoder folder; with
    ``--student-layers``, the trained encoder's student (distilled on ``texts``) is shipped.
    The trained encoder is kept at ``full`` (and taken from there when it is)."""
    import lightgbm as lgb

    from hopgraph.training.hop_encoder import BATCH, LR, NEGATIVES, TAU, save_hop_encoder

    def count(its: list) -> dict[str, int]:
        return {n: sum(1 for it in its if it[0] == n) for n in dict.fromkeys(i[0] for i in its)}

    questions = count(items)
    model = encoder(pairs, args, full)
    layers = list(range(model[0].auto_model.config.num_hidden_layers))
    length = args.max_len
    if args.student_layers:
        model = student_model(distilled(full, texts, args), args)
        layers = [int(i) for i in args.student_layers.split(",")]
        length = args.student_len
    card = {
        "config": {
            "teacher": DEFAULT_EMBEDDER,
            "layers": layers,
            "max_seq_length": length,
            "epochs": args.epochs,
            "lr": LR,
            "batch_size": BATCH,
            "temperature": TAU,
            "negatives": NEGATIVES,
            "seed": 0,
            "freeze_embeddings": True,
            "anchors": ANCHORS,
            "synthetic": args.synthetic,
        },  # fmt: skip
        "sources": questions,
        "train_pairs": len(pairs),
        "made_by": "make hop-encoder (benchmarks/hop_encoder.py --ship FOLDER --freeze-embeddings "
        "--gate)",
    }
    meta = {
        "trained_on": count(ranked),
        "questions": (
            "chain questions only: comparisons (text/questions.py) keep the default ranker"
            if args.gate
            else "every question"
        ),
        "features": "out of fold: each half's hop features from an encoder trained on the other",
        "lightgbm": {"version": lgb.__version__, **LGB_PARAMS},
    }
    out = save_hop_encoder(folder, model, booster, card, meta)
    print(f"hop encoder written to {out} ({len(pairs)} pairs, {sum(questions.values())} "
          "questions)", flush=True)  # fmt: skip


def summary(rows: list) -> dict[str, Any]:
    out: dict[str, Any] = {f"R@{k}": round(float(np.mean([m[f"recall@{k}"] for _, m in rows])), 4)
                           for k in (2, 5, 10)}  # fmt: skip
    by: dict[int, list[float]] = {}
    for n, m in rows:
        by.setdefault(n, []).append(m["recall@5"])
    if len(by) > 1:
        out["R@5_by_gold"] = {str(n): round(float(np.mean(v)), 4) for n, v in sorted(by.items())}
    return out


if __name__ == "__main__":
    main()
