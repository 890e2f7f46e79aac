"""Fine-tune a cross-encoder reranker on CPU (``hopgraph train-reranker``).

No pretrained cross-encoder weights can be had offline, so the reranker starts from a sentence
encoder (by default the bundled MiniLM, optionally cut to its first ``layers`` transformer layers
for speed) with a new one-logit classification head, and learns from training questions only.

Each training question gives its gold passages and *hard negatives*: the base retriever's top
``candidates`` that are not gold, plus random passages. A training group is one gold passage
against ``negatives`` hard and ``random_negatives`` random negatives, re-sampled every epoch;
the loss is the softmax cross-entropy of the gold passage in its group (listwise, as for
MS MARCO rerankers), plus ``distill`` × the KL divergence from the bi-encoder's distribution
over the group (softmax of ``teacher_scale`` × cosine, from the index's ``dense`` part). With
a thousand training questions the labels alone teach the reranker less than the bi-encoder
already knows; the teacher keeps what it knows while the labels add what it misses. A share of
the questions is held out: after each epoch the model reranks their base candidates, and the
epoch with the best validation nDCG@10 is kept. Each epoch is also checkpointed.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hopgraph.corpus import Dataset
from hopgraph.errors import ConfigError
from hopgraph.eval.metrics import ndcg_at_k, recall_at_k, reciprocal_rank
from hopgraph.index import Index
from hopgraph.models.embedder import DEFAULT_EMBEDDER, cpu_has_bf16, resolve_model
from hopgraph.retrieve import get_retriever
from hopgraph.training.synthetic import SYNTHETIC_SUFFIX


@dataclass
class RerankerConfig:
    model: str = DEFAULT_EMBEDDER
    layers: int = 0  # keep the first N transformer layers (0: all)
    max_length: int = 128
    epochs: int = 2
    lr: float = 1e-4
    dropout: float = 0.0
    weight_decay: float = 0.01
    warmup: float = 0.1
    negatives: int = 4
    groups_per_step: int = 4
    candidates: int = 30
    base: str = "hybrid"
    random_negatives: int = 3
    val_fraction: float = 0.1
    seed: int = 0
    precision: str = "auto"
    distill: float = 1.0  # weight of the distillation loss (0: labels only)
    teacher_scale: float = 20.0  # teacher logits = scale × cosine

    def validate(self) -> None:
        for name in ("max_length", "epochs", "negatives", "groups_per_step", "candidates"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.layers < 0 or self.random_negatives < 0:
            raise ConfigError("layers and random_negatives must be >= 0")
        if not 0 < self.val_fraction < 1:
            raise ConfigError(f"val_fraction must be in (0, 1), got {self.val_fraction}")
        if self.lr <= 0 or not 0 <= self.warmup < 1:
            raise ConfigError("lr must be > 0 and warmup in [0, 1)")
        if self.distill < 0 or self.teacher_scale <= 0:
            raise ConfigError("distill must be >= 0 and teacher_scale > 0")
        if self.precision not in ("auto", "bf16", "fp32"):
            raise ConfigError(f"precision must be auto, bf16 or fp32, got {self.precision!r}")


RANDOM_POOL = 24  # random passages kept per question to draw easy negatives from


@dataclass
class RerankExample:
    """One training question: its gold texts, and its base candidates with labels."""

    qid: str
    query: str
    positives: list[str]
    candidates: list[str]  # base top-n, best first
    labels: list[bool]
    extra_negatives: list[str] = field(default_factory=list)  # random passages
    source: str = ""  # the dataset it came from
    teacher: dict[str, float] = field(default_factory=dict)  # text -> bi-encoder cosine

    def hard_negatives(self) -> list[str]:
        return [t for t, y in zip(self.candidates, self.labels, strict=True) if not y]


def rerank_examples(
    index: Index, dataset: Dataset, config: RerankerConfig, *, progress: bool = True
) -> list[RerankExample]:
    """Training examples of ``dataset``'s questions over ``index``."""
    base = get_retriever(index, config.base)
    corpus = index.corpus
    rng = random.Random(config.seed)
    n = min(config.candidates, len(corpus))
    # the method's own ranking (no per-document limit): candidates are passages, gold chunks
    rankings = base.search_batch([q.text for q in dataset.questions], n, max_per_doc=0)
    if config.distill:
        dense = index.part("dense")
        qvecs = dense.encode_queries([q.text for q in dataset.questions])
    out = []
    for i, (q, r) in enumerate(
        tqdm(
            list(zip(dataset.questions, rankings, strict=True)),
            desc=f"candidates {dataset.name}",
            disable=not progress,
        )
    ):
        gold = set(q.gold)
        rows = [corpus.position(i) for i in r.ids]
        extra = [
            j
            for j in rng.sample(range(len(corpus)), min(len(corpus), RANDOM_POOL))
            if corpus[j].id not in gold and j not in rows
        ]
        positives = [corpus.position(g) for g in q.gold if g in corpus]
        teacher = {}
        if config.distill:
            used = [*positives, *rows, *extra]
            cos = dense.embeddings[used] @ qvecs[i]
            teacher = {corpus[j].content: float(c) for j, c in zip(used, cos, strict=True)}
        out.append(
            RerankExample(
                qid=q.id,
                query=q.text,
                positives=[corpus[j].content for j in positives],
                candidates=[corpus[j].content for j in rows],
                labels=[corpus[j].id in gold for j in rows],
                extra_negatives=[corpus[j].content for j in extra],
                source=dataset.name,
                teacher=teacher,
            )
        )
    return [e for e in out if e.positives]


@dataclass
class RerankerResult:
    model: Any
    tokenizer: Any
    best_epoch: int
    history: list[dict[str, float]]
    base_validation: dict[str, float]
    n_train: int
    n_val: int
    seconds: float


def load_base_model(config: RerankerConfig) -> tuple[Any, Any]:
    """The starting point: the encoder with a fresh one-logit head, cut to ``layers``."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    path = resolve_model(config.model)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "classifier newly initialised" is expected here
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(
            path, num_labels=1, local_files_only=True
        )
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot load {config.model!r} to train a reranker from: {exc}") from exc
    finally:
        hf_logging.set_verbosity(verbosity)
    if config.layers:
        layers = _encoder_layers(model)
        if config.layers > len(layers):
            raise ConfigError(f"the model has {len(layers)} layers; cannot keep {config.layers}")
        del layers[config.layers :]
        model.config.num_hidden_layers = config.layers
    set_dropout(model, config.dropout)
    return model, tok


def set_dropout(model: Any, p: float) -> None:
    """Set every dropout of ``model`` to ``p`` (and in its config, so it is saved).

    A sentence encoder's [CLS] vector barely differs between pairs (std ~0.01 per dimension for
    MiniLM, which was trained with mean pooling): with the usual dropout of 0.1 the noise swamps
    that signal and the reranker does not learn at all (loss stays at ln(group size)); without
    dropout it learns in a few steps."""
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = p
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
        if getattr(model.config, key, None) is not None:
            setattr(model.config, key, p)


def _encoder_layers(model: Any) -> Any:
    base = model.base_model
    for attr in ("encoder.layer", "transformer.layer"):
        obj = base
        try:
            for a in attr.split("."):
                obj = getattr(obj, a)
            return obj
        except AttributeError:
            continue
    raise ConfigError(f"cannot find the transformer layers of {type(model).__name__} to cut")


def _scores(model: Any, tok: Any, query: str, texts: list[str], max_length: int) -> np.ndarray:

    out = np.empty(len(texts))
    for lo in range(0, len(texts), 32):
        enc = tok(
            [query] * len(texts[lo : lo + 32]),
            texts[lo : lo + 32],
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        out[lo : lo + 32] = model(**enc).logits[:, 0].float().numpy()
    return out


def validation_metrics(
    examples: list[RerankExample], order_of: Any, k: int = 10
) -> dict[str, float]:
    """nDCG@k, Recall@k and MRR of each example's candidates ordered by ``order_of(example)``
    (gold outside the candidates counts as missed)."""
    nd, rc, rr = [], [], []
    for e in examples:
        order = order_of(e)
        ranking = [str(i) for i in order]
        gold = {str(i) for i, y in enumerate(e.labels) if y}
        gold |= {f"missing-{j}" for j in range(len(e.positives) - len(gold))}
        nd.append(ndcg_at_k(ranking, gold, k))
        rc.append(recall_at_k(ranking, gold, k))
        rr.append(reciprocal_rank(ranking, gold, k))
    return {
        f"ndcg@{k}": float(np.mean(nd)),
        f"recall@{k}": float(np.mean(rc)),
        f"mrr@{k}": float(np.mean(rr)),
    }


def validation_report(examples: list[RerankExample], order_of: Any) -> dict[str, float]:
    """:func:`validation_metrics` over all examples, and nDCG@10 per source dataset."""
    orders = {id(e): order_of(e) for e in examples}
    out = validation_metrics(examples, lambda e: orders[id(e)])
    for source in sorted({e.source for e in examples}):
        sub = [e for e in examples if e.source == source]
        out[f"ndcg@10/{source}"] = validation_metrics(sub, lambda e: orders[id(e)])["ndcg@10"]
    return out


def train_reranker(
    examples: list[RerankExample],
    config: RerankerConfig,
    *,
    checkpoints: Path | None = None,
    progress: bool = True,
) -> RerankerResult:
    """Fine-tune on ``examples``; returns the model of the best validation epoch."""
    import torch

    config.validate()
    if len(examples) < 2:
        raise ConfigError("need at least 2 training questions with gold passages")
    t0 = time.perf_counter()
    rng = random.Random(config.seed)
    torch.manual_seed(config.seed)
    # Validation on real questions (synthetic ones, sources "*-synthetic", only train).
    real = [e for e in examples if not e.source.endswith(SYNTHETIC_SUFFIX)] or examples[:]
    rng.shuffle(real)
    n_val = max(1, round(len(real) * config.val_fraction))
    val = real[:n_val]
    held = {id(e) for e in val}
    train = [e for e in examples if id(e) not in held]
    rng.shuffle(train)
    model, tok = load_base_model(config)
    bf16 = config.precision == "bf16" or (config.precision == "auto" and cpu_has_bf16())
    groups_per_epoch = sum(len(e.positives) for e in train)
    steps = config.epochs * math.ceil(groups_per_epoch / config.groups_per_step)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    warm = max(1, int(steps * config.warmup))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )

    def rerank_order(e: RerankExample) -> np.ndarray:
        return np.argsort(
            -_scores(model, tok, e.query, e.candidates, config.max_length), kind="stable"
        )

    base_val = validation_report(val, lambda e: np.arange(len(e.candidates)))
    history: list[dict[str, float]] = []
    best, best_state, best_epoch = -1.0, None, 1
    bar = tqdm(total=steps, desc="train-reranker", unit="step", disable=not progress)
    for epoch in range(1, config.epochs + 1):
        model.train()
        groups = [(e, pos, _negatives(e, config, rng)) for e in train for pos in e.positives]
        rng.shuffle(groups)
        losses = []
        for lo in range(0, len(groups), config.groups_per_step):
            chunk = groups[lo : lo + config.groups_per_step]
            width = 1 + config.negatives + config.random_negatives
            queries = [e.query for e, _, _ in chunk for _ in range(width)]
            texts = [t for _, pos, negs in chunk for t in [pos, *negs]]
            enc = tok(
                queries,
                texts,
                truncation=True,
                max_length=config.max_length,
                padding=True,
                return_tensors="pt",
            )
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(**enc).logits[:, 0].float().view(len(chunk), width)
            loss = torch.nn.functional.cross_entropy(
                logits, torch.zeros(len(chunk), dtype=torch.long)
            )
            if config.distill:
                teacher = torch.tensor(
                    [[e.teacher.get(t, 0.0) for t in [pos, *negs]] for e, pos, negs in chunk]
                )
                target = torch.softmax(config.teacher_scale * teacher, dim=1)
                kl = torch.nn.functional.kl_div(
                    torch.log_softmax(logits, dim=1), target, reduction="batchmean"
                )
                loss = loss + config.distill * kl
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(epoch=epoch, loss=f"{np.mean(losses[-50:]):.3f}")
        model.eval()
        with torch.inference_mode():
            metrics = validation_report(val, rerank_order)
        row = {"epoch": epoch, "loss": float(np.mean(losses)), **metrics}
        history.append(row)
        bar.write(
            f"epoch {epoch}: loss {row['loss']:.3f}, validation nDCG@10 {metrics['ndcg@10']:.3f} "
            f"(base {base_val['ndcg@10']:.3f})"
        )
        if checkpoints is not None:
            card = {"max_length": config.max_length, "epoch": row}
            save_reranker(model, tok, checkpoints / f"epoch-{epoch}", card, True)
        if metrics["ndcg@10"] > best:
            best = metrics["ndcg@10"]
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            best_epoch = epoch
    bar.close()
    assert best_state is not None
    model.load_state_dict(best_state)
    model.eval()
    return RerankerResult(
        model, tok, best_epoch, history, base_val, len(train), n_val, time.perf_counter() - t0
    )


def _negatives(e: RerankExample, config: RerankerConfig, rng: random.Random) -> list[str]:
    """``negatives`` hard ones and ``random_negatives`` random ones: with hard negatives
    alone, a multi-hop set teaches the model that passages sharing words with the question are
    *not* relevant (the hard negatives do, the second-hop gold passages often do not)."""
    hard = e.hard_negatives() or e.extra_negatives
    easy = e.extra_negatives or hard
    return _sample(hard, config.negatives, rng) + _sample(easy, config.random_negatives, rng)


def _sample(items: list[str], n: int, rng: random.Random) -> list[str]:
    if len(items) >= n:
        return rng.sample(items, n)
    return items + [rng.choice(items) for _ in range(n - len(items))] if items else [""] * n


def save_reranker(
    model: Any, tokenizer: Any, folder: str | Path, card: dict[str, Any], overwrite: bool = False
) -> Path:
    """A Hugging Face model folder (loadable by :class:`~hopgraph.models.CrossEncoder`,
    sentence-transformers' ``CrossEncoder`` or transformers) plus the training card."""
    from hopgraph.atomic import replace_folder
    from hopgraph.models.cross_encoder import CARD

    folder = Path(folder).expanduser().resolve()
    if folder.exists() and not overwrite:
        raise ConfigError(f"{folder} exists; pass --overwrite to replace it")
    with replace_folder(folder) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / CARD).write_text(json.dumps(card, indent=2, sort_keys=True))
    return folder


def model_card(
    result: RerankerResult, config: RerankerConfig, sources: list[dict[str, Any]]
) -> dict[str, Any]:
    best = result.history[result.best_epoch - 1]
    return {
        "kind": "hopgraph cross-encoder reranker",
        "max_length": config.max_length,
        "config": asdict(config),
        "sources": sources,
        "train_questions": result.n_train,
        "validation_questions": result.n_val,
        "best_epoch": result.best_epoch,
        "best_validation": best,
        "base_validation": result.base_validation,
        "history": result.history,
        "train_seconds": round(result.seconds, 1),
    }
