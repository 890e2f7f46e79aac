"""What a hop encoder of each size costs a round (issue 37: could a smaller one join the default?).

    PYTHONPATH=src .venv/bin/python benchmarks/experiments/hop_encoder_cost.py \
        [--repeats 60] [--threads 2]

Encodes one round's 3 hop texts (``question [SEP] title. text``, a composed question and a
passage longer than every cut) with the bundled MiniLM cut to 6, 3 (0, 3, 5: the passage
student's) and 2 (0, 5) layers, at 160, 64 and 48 tokens, in fp32 and in bf16, through
sentence-transformers' ``encode`` as the switch does; prints the median time of a round over the
repeats after 10 warm-up rounds. Untrained layers cost what trained ones do.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

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
    args = ap.parse_args()

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


if __name__ == "__main__":
    main()
