"""Training the hop query encoder (:mod:`hopgraph.models.hop_encoder`) on gold chains.

Every ordered pair of a question's gold passages (a, b) is one example: the input is the
question with ``a`` (``question [SEP] title. text``), the target the index's own vector of ``b``,
against the first :data:`NEGATIVES` non-gold candidates of the pipeline's first round (fixed
vectors; InfoNCE at temperature :data:`TAU`, AdamW). The bundled MiniLM is the starting point; its
token embeddings stay frozen (``freeze_embeddings``), so only the transformer layers are saved.
The passage vectors of the index do not change. Deterministic on one machine: a fixed seed for
the pair order and for dropout.

A cheaper hop encoder (issue 63) is distilled from a trained one (:func:`distil_hop_student`):
a few of its layers, reading the first tokens of a hop text only, trained to give the vectors
the teacher gives for the whole text (:mod:`hopgraph.training.student`'s loss), on the hop texts
of many (question, anchor) pairs: no gold labels, so any question's anchors serve.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from hopgraph.models.hop_encoder import hop_text, save_ranker

NEGATIVES, TAU, BATCH, LR = 8, 0.05, 16, 3e-5


@dataclass(frozen=True)
class HopPair:
    """One training example: ``text`` (question and one gold passage) should be closest to the
    vector of passage ``target`` of ``index``, not to those of ``negatives``."""

    index: Any
    text: str
    target: int
    negatives: tuple[int, ...]


def chain_pairs(
    index: Any, question: str, gold: Sequence[int], candidates: Sequence[int]
) -> list[HopPair]:
    """Every ordered pair of ``gold`` rows as an example, with the first :data:`NEGATIVES`
    non-gold ``candidates`` (in the pipeline's order) as negatives; none when there are fewer."""
    golds = set(gold)
    negs = tuple(int(r) for r in candidates if int(r) not in golds)[:NEGATIVES]
    if len(negs) < NEGATIVES:
        return []
    return [
        HopPair(index, hop_text(index.corpus, question, a), int(b), negs)
        for a in gold
        for b in gold
        if a != b
    ]


def train_hop_encoder(
    pairs: Sequence[HopPair],
    *,
    model: str,
    epochs: int = 2,
    max_len: int = 160,
    freeze_embeddings: bool = True,
    layers: Sequence[int] = (),
    seed: int = 0,
    progress: bool = True,
) -> Any:
    """A sentence-transformers query tower started from ``model`` (a local folder) and
    fine-tuned on ``pairs``; ``layers`` keeps only those of its layers (all when empty)."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(seed)
    st = SentenceTransformer(model, device="cpu")
    st.max_seq_length = max_len
    if layers:
        from hopgraph.models.student import cut_layers

        cut_layers(st[0].auto_model, list(layers))
    if freeze_embeddings:
        st[0].auto_model.embeddings.requires_grad_(False)
    opt = torch.optim.AdamW([p for p in st.parameters() if p.requires_grad], lr=LR)
    order = list(pairs)
    rng = random.Random(seed)
    for epoch in range(epochs):
        rng.shuffle(order)
        st.train()
        total, t0 = 0.0, time.time()
        steps = range(0, len(order), BATCH)
        for lo in tqdm(steps, desc=f"hop encoder epoch {epoch + 1}", disable=not progress):
            batch = order[lo : lo + BATCH]
            hq = st(st.preprocess([b.text for b in batch]))["sentence_embedding"]
            hq = torch.nn.functional.normalize(hq, dim=-1)
            targets = np.stack(
                [b.index.part("dense").vectors(np.asarray([b.target, *b.negatives])) for b in batch]
            )
            logits = torch.einsum("bd,bkd->bk", hq, torch.from_numpy(targets)) / TAU
            loss = torch.nn.functional.cross_entropy(
                logits, torch.zeros(len(batch), dtype=torch.long)
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(batch)
        if progress:
            mean = total / max(len(order), 1)
            tqdm.write(f"epoch {epoch + 1}: {len(order)} pairs, loss {mean:.3f}, "
                       f"{time.time() - t0:.0f} s")  # fmt: skip
    return st.eval()


def hop_texts(index: Any, question: str, rows: Sequence[int]) -> list[str]:
    """The hop texts of ``question`` with each anchor row of ``rows`` (distinct, in order)."""
    return [hop_text(index.corpus, question, int(r)) for r in dict.fromkeys(rows)]


def distil_hop_student(
    texts: Sequence[str],
    teacher: str | Path,
    *,
    layers: Sequence[int],
    max_len: int,
    teacher_len: int = 160,
    epochs: int = 5,
    seed: int = 0,
    progress: bool = True,
) -> tuple[Any, dict[str, Any]]:
    """A hop encoder of ``layers`` of ``teacher``'s (a sentence-transformers folder of a trained
    hop encoder, reading ``teacher_len`` tokens), reading ``max_len`` tokens, distilled on
    ``texts`` (every 20th held out to measure its cosine to the teacher). Returns the student as
    a sentence-transformers model and its training record."""
    from sentence_transformers import SentenceTransformer

    from hopgraph.models.student import cut_layers
    from hopgraph.training.student import StudentConfig, distil_student

    texts = list(texts)
    val = texts[::20]
    train = [t for k, t in enumerate(texts) if k % 20]
    config = StudentConfig(
        teacher=str(teacher),
        layers=tuple(layers),
        max_seq_length=max_len,
        teacher_max_seq_length=teacher_len,
        epochs=epochs,
        seed=seed,
    )
    result = distil_student(train, val, config, progress=progress)
    st = SentenceTransformer(str(teacher), device="cpu")
    cut_layers(st[0].auto_model, list(layers))
    st[0].auto_model.load_state_dict(result.model.state_dict())
    st.max_seq_length = max_len
    record = {"train_texts": result.n_train, "validation_texts": result.n_val,
              "history": result.history, "train_seconds": round(result.seconds, 1)}  # fmt: skip
    return st.eval(), record


def save_hop_encoder(
    folder: str | Path, st: Any, booster: Any, card: dict[str, Any], ranker_meta: dict[str, Any]
) -> Path:
    """Write a hop encoder folder: the tower's layers (bf16) with ``card`` as its ``meta.json``
    (:func:`~hopgraph.models.student.save_student`) and the ranker fitted with its features."""
    from hopgraph.models.student import save_student

    card = {**card, "kind": "hopgraph hop encoder"}
    out = save_student(folder, st[0].auto_model, card)
    save_ranker(out, booster, ranker_meta)
    return out
