"""Where a hop-encoder student loses its teacher (issue 63): the tokens it reads or its layers?

    .venv/bin/python benchmarks/experiments/hop_student_agreement.py --data-dir ../shared/data \\
        --models-dir WORK [--sets musique,hotpotqa] [--limit 600] [--teacher full] \\
        [--students -student035-len64,-student035-len64-ep3-extra3-xquad_en+...]

For each set, the hop texts of its dev questions with each gold passage (``question [SEP] title.
text``, as :func:`hopgraph.models.hop_encoder.hop_text` writes them), the first ``--limit``:
the cosine of the full encoder trained with that set held out (``WORK/SET-full-frozen``, made by
``benchmarks/hop_encoder.py --held-out SET --full-encoder --models-dir WORK``) reading 64 and 48
tokens, and of its 3-layer 64-token student (``...-student035-len64``), to the same encoder
reading 160 tokens (as trained). The set's questions are in neither's training texts.
``--teacher fold0`` measures a fold encoder (``WORK/SET-fold0-frozen``) and its students
instead; ``--students`` names the students by their folders' suffixes (students distilled on
other texts, ``hop_encoder.py --distil-extra``, with other epochs or layers).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import numpy as np


def hop_texts(folder: Path, limit: int) -> list[str]:
    """The first ``limit`` hop texts of the dev questions with each of their gold passages."""
    from hopgraph.corpus import load_dataset
    from hopgraph.models.hop_encoder import hop_text

    data = load_dataset(folder)
    position = data.corpus.position
    texts = [hop_text(data.corpus, q.text, position(g)) for q in data.questions for g in q.gold]
    return texts[:limit]


def main() -> None:
    from sentence_transformers import SentenceTransformer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=os.environ.get("HOPGRAPH_DATA", "../shared/data"))
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--sets", default="musique,hotpotqa")
    ap.add_argument("--limit", type=int, default=600)
    ap.add_argument("--teacher", default="full", help="full, fold0 or fold1")
    ap.add_argument("--students", default="-student035-len64",
                    help="comma-separated suffixes of the teacher's students' folders")  # fmt: skip
    args = ap.parse_args()
    print("| set | texts | tokens (median) | over 64 | encoder | cosine to 160 tokens | 1st pct. |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sets.split(","):
        texts = hop_texts(Path(args.data_dir) / name, args.limit)
        teacher_dir = Path(args.models_dir) / f"{name}-{args.teacher}-frozen"
        teacher = SentenceTransformer(str(teacher_dir), device="cpu")
        n = np.array([len(teacher.tokenizer(t)["input_ids"]) for t in texts])
        runs = [("6 layers, 160 tokens", teacher, 160), ("6 layers, 64 tokens", teacher, 64),
                ("6 layers, 48 tokens", teacher, 48)]  # fmt: skip
        for suffix in args.students.split(","):
            student = SentenceTransformer(f"{teacher_dir}{suffix}", device="cpu")
            length = int(re.search(r"-len(\d+)", suffix).group(1))  # the tokens it was taught
            runs.append((f"student {suffix}", student, length))
        vecs = {}
        for label, model, length in runs:
            model.max_seq_length = length
            vecs[label] = model.encode(texts, batch_size=32, normalize_embeddings=True)
        ref = vecs.pop("6 layers, 160 tokens")
        for label, v in vecs.items():
            cos = np.sum(v * ref, axis=1)
            head = f"| {name} | {len(texts)} | {int(np.median(n))} | {np.mean(n > 64):.0%}"
            low = np.percentile(cos, 1)
            print(f"{head} | {label} | {cos.mean():.3f} | {low:.3f} |", flush=True)


if __name__ == "__main__":
    main()
