"""What a hop encoder of each size costs a round (issues 37 and 63: could a smaller one join the
default?).

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/hop_encoder_cost.py \
        [--repeats 60] [--threads 2] [--backend torch|onnx|onnx-sessions]

Encodes one round's 3 hop texts (``question [SEP] title. text``, a composed question and a
passage longer than every cut) with the bundled MiniLM cut to 6, 3 (0, 3, 5: the passage
student's) and 2 (0, 5) layers, at 160, 64 and 48 tokens; prints the median time of a round over
the repeats after 10 warm-up rounds. Untrained layers cost what trained ones do. ``--backend
torch`` (issue 37): in fp32 and in bf16, through sentence-transformers' ``encode`` as the
switch's bf16 path does. ``--backend onnx`` (issue 63): the shipped hop encoder's layers cut to
each size as a student folder, run as ``multihop``'s ``hop_encoder_precision=fp32`` and
``int8`` run it (hopgraph's ONNX Runtime encoder over the composed export), with ONNX Runtime's
threads spinning after a run (its default) and not (``HOPGRAPH_ORT_SPINNING=0``); between two
rounds a query-encoder run, as in a search. ``--backend onnx-sessions`` (issue 63): a search's
two sessions, int8, 3 layers at 64 tokens and 2 at 48: a query-encoder run, 5 ms (the first
round's work), then a round; each session with spinning on or off (ONNX Runtime reads it when a
session is made), and the hop session on ``--threads`` and on 1 thread with both off; prints the
median ms of the query run and of the round.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hopgraph.models.embedder import DEFAULT_EMBEDDER, resolve_model
from hopgraph.models.student import cut_layers

QUESTION = (
    "Who is the spouse of the performer of the song Green that was released in the year the "
    "company founded by the mayor was dissolved?"
)
PASSAGE = (
    "Green (song). Green is a song by the American band Whatever released in 1999 on the album "
    "Colours. It was written by the lead singer John Smith who later married the actress Jane "
    "Doe and moved to Los Angeles where he worked as a producer for many years. "
) * 2
SIZES = ([0, 1, 2, 3, 4, 5], [0, 3, 5], [0, 5])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--backend", choices=("torch", "onnx", "onnx-sessions"), default="torch")
    args = ap.parse_args()
    if args.backend == "onnx":
        onnx_costs(args.repeats)
        return
    if args.backend == "onnx-sessions":
        session_costs(args.repeats, args.threads)
        return

    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    base = SentenceTransformer(resolve_model(DEFAULT_EMBEDDER), device="cpu")
    texts = [f"{QUESTION} [SEP] {PASSAGE}"] * 3
    print("| layers | tokens | fp32 ms | bf16 ms |\n|---|---|---|---|")
    for layers in SIZES:
        for length in (160, 64, 48):
            ms = []
            for bf16 in (False, True):
                m = copy.deepcopy(base)
                if len(layers) < 6:
                    cut_layers(m[0].auto_model, layers)
                m.max_seq_length = length
                m = (m.to(torch.bfloat16) if bf16 else m).eval()
                times = []
                with torch.inference_mode():
                    for _ in range(10 + args.repeats):
                        t0 = time.perf_counter()
                        m.encode(texts, batch_size=8)
                        times.append(time.perf_counter() - t0)
                ms.append(1000 * statistics.median(times[10:]))
            print(f"| {len(layers)} | {length} | {ms[0]:.1f} | {ms[1]:.1f} |", flush=True)


def cut_folder(layers: list[int], length: int, out: Path) -> Path:
    """A hop encoder folder holding the shipped encoder's ``layers`` (renumbered from 0) and a
    card saying ``length`` tokens."""
    from safetensors.torch import load_file, save_file

    from hopgraph.models.hop_encoder import BUNDLED_HOP_ENCODER

    src = load_file(str(BUNDLED_HOP_ENCODER / "layers.safetensors"))
    tensors = {}
    for new, old in enumerate(layers):
        head = f"encoder.layer.{old}."
        for name, t in src.items():
            if name.startswith(head):
                tensors[f"encoder.layer.{new}.{name[len(head) :]}"] = t
    meta = json.loads((BUNDLED_HOP_ENCODER / "meta.json").read_text())
    meta["config"] = {**meta["config"], "layers": layers, "max_seq_length": length}
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "layers.safetensors"))
    (out / "meta.json").write_text(json.dumps(meta))
    shutil.copyfile(BUNDLED_HOP_ENCODER / "ranker.json", out / "ranker.json")
    return out


def onnx_costs(repeats: int) -> None:
    """Each size in fp32 and int8, spinning on and off: the median ms of a round."""
    from hopgraph.models.embedder import Embedder

    texts = [f"{QUESTION} [SEP] {PASSAGE}"] * 3
    print("| layers | tokens | fp32 ms | int8 ms | fp32, no spinning | int8, no spinning |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for layers in SIZES:
            for length in (160, 64, 48):
                folder = cut_folder(list(layers), length, Path(tmp) / f"{len(layers)}-{length}")
                ms = []
                for spin in ("1", "0"):
                    os.environ["HOPGRAPH_ORT_SPINNING"] = spin
                    query = Embedder(DEFAULT_EMBEDDER, backend="onnx")
                    for precision in ("fp32", "int8"):
                        enc = Embedder(DEFAULT_EMBEDDER, backend="onnx", precision=precision,
                                       max_seq_length=length, student=str(folder))  # fmt: skip
                        times = []
                        for _ in range(10 + repeats):
                            query.encode([QUESTION])
                            t0 = time.perf_counter()
                            enc.encode(texts)
                            times.append(time.perf_counter() - t0)
                        ms.append(1000 * statistics.median(times[10:]))
                print(f"| {len(layers)} | {length} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} "
                      f"| {ms[3]:.1f} |", flush=True)  # fmt: skip


def session_costs(repeats: int, threads: int) -> None:
    """The query encoder's run and a hop round in turn, each session spinning or not."""
    from hopgraph.models.embedder import Embedder
    from hopgraph.models.onnx_backend import OnnxEncoder

    texts = [f"{QUESTION} [SEP] {PASSAGE}"] * 3
    cases = [("1", "1", threads), ("1", "0", threads), ("0", "1", threads), ("0", "0", threads),
             ("0", "0", 1)]  # fmt: skip
    print("| layers | tokens | query spins | hop spins | hop threads | query ms | hop round ms |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for layers, length in (([0, 3, 5], 64), ([0, 5], 48)):
            folder = cut_folder(layers, length, Path(tmp) / f"{len(layers)}-{length}")
            for query_spins, hop_spins, n in cases:
                os.environ["HOPGRAPH_ORT_SPINNING"] = query_spins  # read as a session is made
                query = Embedder(DEFAULT_EMBEDDER, backend="onnx")
                os.environ["HOPGRAPH_ORT_SPINNING"] = hop_spins
                hop = Embedder(DEFAULT_EMBEDDER, backend="onnx", precision="int8",
                               max_seq_length=length, student=str(folder))  # fmt: skip
                hop._onnx = OnnxEncoder(hop._onnx.folder, max_seq_length=length, threads=n)
                tq, th = [], []
                for _ in range(10 + repeats):
                    t0 = time.perf_counter()
                    query.encode([QUESTION])
                    tq.append(time.perf_counter() - t0)
                    time.sleep(0.005)
                    t0 = time.perf_counter()
                    hop.encode(texts)
                    th.append(time.perf_counter() - t0)
                q_ms, h_ms = (1000 * statistics.median(t[10:]) for t in (tq, th))
                yes = {"1": "yes", "0": "no"}
                print(f"| {len(layers)} | {length} | {yes[query_spins]} | {yes[hop_spins]} | {n} "
                      f"| {q_ms:.1f} | {h_ms:.1f} |", flush=True)  # fmt: skip
    os.environ.pop("HOPGRAPH_ORT_SPINNING", None)


if __name__ == "__main__":
    main()
