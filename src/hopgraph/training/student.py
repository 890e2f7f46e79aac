"""Distil a shallower passage encoder from the query encoder (``benchmarks/student_encoder.py``).

A large build spends nearly all its time encoding passages with the 6-layer MiniLM. A student
with ``layers`` of the teacher's transformer layers (the teacher's own weights to start with,
its embeddings frozen and shared) is trained to give the teacher's vectors for passages: the
loss is, per batch, the mean squared error between the two final-layer token states (masked,
in the teacher's units) plus ``1 - cosine`` of the two pooled, unit-length passage vectors.
Queries stay with the teacher, so an index whose passages the student encoded is searched by
the same query vectors as any other. The student is only ever the *passage* encoder.

The teacher's token states are computed once (bf16) and every epoch trains on them. Texts are
trained on in length-sorted batches (shuffled batch order, re-drawn every epoch) for speed; the
teacher runs with bf16 autocast where the CPU has it, the student in fp32 with bf16 autocast
there. Everything is seeded; on one machine a rerun gives the same weights bit for bit.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hopgraph.errors import ConfigError
from hopgraph.models.embedder import DEFAULT_EMBEDDER, cpu_has_bf16, resolve_model
from hopgraph.models.student import cut_layers


@dataclass
class StudentConfig:
    teacher: str = DEFAULT_EMBEDDER
    layers: tuple[int, ...] = (0, 3, 5)  # the teacher's layers the student starts from
    max_seq_length: int = 256
    teacher_max_seq_length: int = 0  # the teacher reads this many tokens (0: max_seq_length)
    epochs: int = 5
    lr: float = 2e-4
    weight_decay: float = 0.01
    warmup: float = 0.06
    batch_size: int = 16
    token_weight: float = 1.0  # weight of the token-state MSE beside 1 - cosine
    seed: int = 0

    def validate(self) -> None:
        if not self.layers or len(set(self.layers)) != len(self.layers):
            raise ConfigError(f"layers must be distinct teacher layers, got {self.layers}")
        for name in ("epochs", "batch_size", "max_seq_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1")
        if 0 < self.teacher_max_seq_length < self.max_seq_length:
            raise ConfigError("the teacher must read at least the student's max_seq_length")

    def teacher_len(self) -> int:
        return self.teacher_max_seq_length or self.max_seq_length

    def same_text(self) -> bool:
        """Whether teacher and student read the same tokens (else the student reads the first
        ``max_seq_length`` of the teacher's ``teacher_max_seq_length``)."""
        return self.teacher_len() == self.max_seq_length


@dataclass
class StudentResult:
    model: Any  # the student's transformers model (fp32)
    tokenizer: Any
    history: list[dict[str, float]]
    validation: dict[str, float]
    n_train: int
    n_val: int
    seconds: float


def _teacher(config: StudentConfig) -> tuple[Any, Any]:
    from transformers import AutoModel, AutoTokenizer

    path = resolve_model(config.teacher)
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot load the teacher {config.teacher!r}: {exc}") from exc
    model.eval()
    return model, tok


def _pool(states: Any, mask: Any) -> Any:
    """Mean of the token states over the attention mask, unit length (sentence-transformers'
    mean pooling + Normalize)."""
    import torch

    m = mask.unsqueeze(-1).to(states.dtype)
    pooled = (states * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled.float(), dim=-1)


def _batches(lengths: list[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Indices in batches of similar length, the batch order shuffled."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches = [order[lo : lo + batch_size] for lo in range(0, len(order), batch_size)]
    rng.shuffle(batches)
    return batches


def _encode(tok: Any, texts: list[str], max_len: int) -> Any:
    return tok(texts, truncation=True, max_length=max_len, padding=True, return_tensors="pt")


def cosine_to_teacher(
    student: Any, teacher: Any, tok: Any, texts: list[str], config: StudentConfig
) -> np.ndarray:
    """Per text: cosine of the student's pooled vector to the teacher's (each reading its own
    number of tokens)."""
    import torch

    out = np.empty(len(texts))
    lengths = [len(t) for t in texts]
    with torch.inference_mode():
        for batch in _batches(lengths, 32, random.Random(0)):
            enc = _encode(tok, [texts[i] for i in batch], config.max_seq_length)
            tenc = enc if config.same_text() else _encode(
                tok, [texts[i] for i in batch], config.teacher_len())  # fmt: skip
            t = _pool(_run(teacher, tenc), tenc["attention_mask"])
            s = _pool(_run(student, enc), enc["attention_mask"])
            out[batch] = (t * s).sum(-1).numpy()
    return out


def _teacher_states(
    teacher: Any, tok: Any, texts: list[str], config: StudentConfig, progress: bool
) -> tuple[list[Any], Any]:
    """The teacher's final token states of every text (bf16, unpadded) and, where it reads
    more tokens than the student, its pooled vectors (else None: pooled from the states):
    computed once, as every epoch trains on the same targets."""
    import torch

    out: list[Any] = [None] * len(texts)
    pooled = None if config.same_text() else torch.zeros(len(texts), teacher.config.hidden_size)
    order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
    with torch.inference_mode():
        for lo in tqdm(range(0, len(order), 32), desc="teacher", disable=not progress):
            batch = order[lo : lo + 32]
            enc = _encode(tok, [texts[i] for i in batch], config.teacher_len())
            full = _run(teacher, enc)
            if pooled is not None:
                pooled[batch] = _pool(full, enc["attention_mask"])
            states = full.to(torch.bfloat16)
            for row, i in enumerate(batch):
                out[i] = states[row, : int(enc["attention_mask"][row].sum())].clone()
    return out, pooled


def _run(model: Any, enc: Any) -> Any:
    import torch

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_has_bf16()):
        return model(**enc).last_hidden_state.float()


def distil_student(
    texts: list[str], val_texts: list[str], config: StudentConfig, progress: bool = True
) -> StudentResult:
    """Train the student on ``texts``; report its cosine to the teacher on ``val_texts``."""
    import torch

    config.validate()
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    start = time.perf_counter()
    teacher, tok = _teacher(config)
    student, _ = _teacher(config)
    cut_layers(student, config.layers)
    for p in student.embeddings.parameters():
        p.requires_grad_(False)
    student.train()
    for m in student.modules():  # dropout off: the targets are exact
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    params = [p for p in student.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)
    targets, pooled = _teacher_states(teacher, tok, texts, config, progress)
    lengths = [len(t) for t in targets]
    steps = config.epochs * -(-len(texts) // config.batch_size)
    warm = max(1, int(config.warmup * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))
    )
    history: list[dict[str, float]] = []
    bar = tqdm(total=steps, desc="distilling", unit="batch", disable=not progress)
    for epoch in range(config.epochs):
        losses = []
        for batch in _batches(lengths, config.batch_size, rng):
            enc = _encode(tok, [texts[i] for i in batch], config.max_seq_length)
            mask = enc["attention_mask"]
            target = torch.nn.utils.rnn.pad_sequence(  # the teacher's states of the same tokens
                [targets[i][: int(n)] for i, n in zip(batch, mask.sum(1), strict=True)],
                batch_first=True,
            ).float()
            states = _run(student, enc)
            m = mask.unsqueeze(-1).float()
            token_mse = (((states - target) ** 2) * m).sum() / (m.sum() * states.shape[-1])
            aim = _pool(target, mask) if pooled is None else pooled[batch]
            cos = (_pool(states, mask) * aim).sum(-1)
            loss = config.token_weight * token_mse + (1 - cos).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.4f}")
        student.eval()
        cos_val = cosine_to_teacher(student, teacher, tok, val_texts, config)
        student.train()
        history.append(
            {
                "epoch": epoch + 1,
                "loss": float(np.mean(losses)),
                "val_cos_mean": float(cos_val.mean()),
                "val_cos_p01": float(np.percentile(cos_val, 1)),
                "val_cos_min": float(cos_val.min()),
            }
        )
    bar.close()
    student.eval()
    return StudentResult(
        model=student,
        tokenizer=tok,
        history=history,
        validation=history[-1],
        n_train=len(texts),
        n_val=len(val_texts),
        seconds=time.perf_counter() - start,
    )


def student_card(
    result: StudentResult, config: StudentConfig, sources: list[dict[str, Any]]
) -> dict[str, Any]:
    cfg = asdict(config)
    cfg["layers"] = list(config.layers)
    return {
        "kind": "hopgraph passage student",
        "config": cfg,
        "sources": sources,
        "train_texts": result.n_train,
        "validation_texts": result.n_val,
        "history": result.history,
        "validation": result.validation,
        "train_seconds": round(result.seconds, 1),
    }
