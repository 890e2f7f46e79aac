"""Retrieval at scale: a deterministic N-passage corpus in the unified layout.

    python benchmarks/scale.py corpus --dataset 2wikimultihopqa --n 100000 --out DIR \
        [--data-dir ../shared/data] [--seed 0] [--overwrite]

``corpus`` writes ``DIR/corpus.jsonl`` (``{"idx", "title", "text"}``, idx = line number),
``DIR/questions.jsonl`` (the dataset's questions, copied unchanged) and ``DIR/scale.json`` (what
went in: passages per source, seed, sanity checks, sha256 of corpus.jsonl), so that
``hopgraph eval DIR`` and ``hopgraph index DIR/corpus.jsonl`` work on it. In order:

1. the dataset's own pool, unchanged and with its own idx, so its questions keep their gold;
2. every real passage of the other sets (2wikimultihopqa, hotpotqa, musique, hotpotqa_train,
   musique_train, scifact), exact duplicates (same title and text) of a passage already
   written left out;
3. synthetic wiki-like passages up to N: a real passage's first sentence under a new title
   (its name plus a disambiguator such as "(film)", "(1987 album)", "(footballer, born
   1961)") followed by 2-5 sentences of other real passages, so that names recur across
   many pages as in a wiki. They are made from the other QA sets' passages only: never from
   the pool (no gold sentence is copied into a distractor) nor from a BEIR set such as
   SciFact (paper titles are not names).

Below pool + real passages, the pool is kept whole and the other real passages are a
deterministic sample. The same arguments give a byte-identical corpus.jsonl; the output is
written as it is made (only the ~22k real source passages are held in memory).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

# The sets whose passages are buried with the pool (scifact is BEIR: _id, title, text).
SOURCES = ("2wikimultihopqa", "hotpotqa", "musique", "hotpotqa_train", "musique_train", "scifact")
MIN_EXTRA, MAX_EXTRA = 2, 5  # sentences of other passages after a synthetic first sentence

# Disambiguators of a synthetic title, and how a year combines with each when the plain one is
# taken: "{y} film" → "1987 film", "footballer, born {y}" → "footballer, born 1961".
KINDS: tuple[tuple[str, str], ...] = (
    ("film", "{y} film"),
    ("album", "{y} album"),
    ("song", "{y} song"),
    ("novel", "{y} novel"),
    ("TV series", "{y} TV series"),
    ("play", "{y} play"),
    ("video game", "{y} video game"),
    ("band", "band, formed {y}"),
    ("ship", "ship, launched {y}"),
    ("village", "village, founded {y}"),
    ("racehorse", "racehorse, foaled {y}"),
    ("newspaper", "newspaper, founded {y}"),
    ("footballer", "footballer, born {y}"),
    ("politician", "politician, born {y}"),
    ("painter", "painter, born {y}"),
    ("composer", "composer, born {y}"),
    ("actor", "actor, born {y}"),
    ("writer", "writer, born {y}"),
    ("cricketer", "cricketer, born {y}"),
    ("bishop", "bishop, died {y}"),
)
YEARS = range(1850, 2021)

_PAREN = re.compile(r"\s*\([^()]*\)")
# A sentence ends at . ! or ? (and any closing quotes or brackets) followed by white space and
# an upper-case letter, a digit or an opening quote/bracket.
_BOUNDARY = re.compile(r"[.!?][\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")
# Words after which a full stop is not a sentence end.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr st jr sr mt ft no nos vs co corp inc ltd bros gen col lt sgt capt cmdr adm "
    "gov sen rep rev prof fr pres hon ave blvd dept est approx ca c fl b d e.g i.e etc al "
    "jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k".split()
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` by a regular expression: a stop, then white space, then an upper-case
    letter, digit or opening quote; not after an initial ("J. Smith"), a dotted abbreviation
    ("U.S.") or a common abbreviation ("St.", "Dr.", "Jan.")."""
    text = " ".join(text.split())
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        if text[m.start()] == ".":
            word = _LAST_WORD.search(text, start, m.start())
            w = word.group(1).lstrip("\"'“‘([") if word else ""
            if len(w) == 1 and w.isalpha() or "." in w or w.lower() in _ABBREVIATIONS:
                continue
        sentence = text[start : m.end()].strip()
        if sentence:
            out.append(sentence)
        start = m.end()
    rest = text[start:].strip()
    if rest:
        out.append(rest)
    return out


def base_name(title: str) -> str:
    """A title without its "(...)" disambiguators: "Theodred II (Bishop of Elmham)" → "Theodred
    II" (the title itself if nothing would be left)."""
    name = " ".join(_PAREN.sub("", title).split())
    return name or title.strip()


@dataclass(frozen=True)
class Source:
    """A real passage: where it comes from and its content."""

    dataset: str
    title: str
    text: str
    wiki: bool  # from a unified-layout QA set (titles are entity names), not a BEIR one


def read_set(data_dir: Path, name: str) -> list[Source]:
    """The passages of one set's ``corpus.jsonl`` (unified ``idx`` records in idx order, or
    BEIR ``_id`` records in file order)."""
    path = data_dir / name / "corpus.jsonl"
    if not path.is_file():
        raise SystemExit(f"error: no corpus at {path} (is --data-dir the shared data folder?)")
    out: list[Source] = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f):
            if not line.strip():
                continue
            rec = json.loads(line)
            if "idx" in rec and rec["idx"] != lineno:
                raise SystemExit(f"error: {path}:{lineno + 1}: idx {rec['idx']} is not the line")
            out.append(Source(name, rec.get("title") or "", rec["text"], "idx" in rec))
    return out


def plan(n_pool: int, others: Sequence[Source], n: int, seed: int) -> tuple[list[Source], int]:
    """The other real passages to write (all, or a sorted sample of them when ``n`` is smaller
    than pool + others) and the number of synthetic passages to make."""
    if n < n_pool:
        raise SystemExit(f"error: --n {n} is smaller than the pool ({n_pool} passages)")
    room = n - n_pool
    if room >= len(others):
        return list(others), room - len(others)
    keep = sorted(random.Random(seed).sample(range(len(others)), room))
    return [others[i] for i in keep], 0


class Synthesizer:
    """Makes synthetic passages from real ones, each title new to the corpus."""

    def __init__(self, sources: Sequence[Source], taken: set[str], rng: random.Random):
        self.rng = rng
        self.taken = taken
        self.sentences = [split_sentences(s.text) for s in sources]
        self.names = [base_name(s.title) for s in sources]
        usable = [i for i, sents in enumerate(self.sentences) if sents and self.names[i]]
        if not usable:
            raise SystemExit("error: no source passages to make synthetic passages from")
        self.usable = usable
        # every sentence of every usable passage: (passage, sentence) pairs, for the extras
        self.flat = [(i, j) for i in usable for j in range(len(self.sentences[i]))]

    def title(self, name: str) -> str:
        rng = self.rng
        kind, with_year = KINDS[rng.randrange(len(KINDS))]
        title = f"{name} ({kind})"
        for _ in range(50):
            if title not in self.taken:
                self.taken.add(title)
                return title
            kind, with_year = KINDS[rng.randrange(len(KINDS))]
            year = YEARS[rng.randrange(len(YEARS))]
            title = f"{name} ({with_year.format(y=year)})"
        # every random pick taken (a name with thousands of pages): the first free one in order
        for _kind, with_year in KINDS:
            for year in YEARS:
                title = f"{name} ({with_year.format(y=year)})"
                if title not in self.taken:
                    self.taken.add(title)
                    return title
        k = 2
        while f"{name} ({kind} {k})" in self.taken:
            k += 1
        title = f"{name} ({kind} {k})"
        self.taken.add(title)
        return title

    def passage(self) -> tuple[str, str]:
        """``(title, text)`` of one new passage."""
        rng = self.rng
        src = self.usable[rng.randrange(len(self.usable))]
        parts = [self.sentences[src][0]]
        want = rng.randint(MIN_EXTRA, MAX_EXTRA)
        while len(parts) < want + 1:
            i, j = self.flat[rng.randrange(len(self.flat))]
            if i != src:
                parts.append(self.sentences[i][j])
        return self.title(self.names[src]), " ".join(parts)


@dataclass
class _Stats:
    count: int = 0
    chars: int = 0

    def add(self, text: str) -> None:
        self.count += 1
        self.chars += len(text)

    def to_json(self) -> dict[str, Any]:
        mean = round(self.chars / self.count, 1) if self.count else 0.0
        return {"passages": self.count, "mean_chars": mean}


def make_corpus(
    dataset: str,
    n: int,
    out: str | os.PathLike[str],
    data_dir: str | os.PathLike[str],
    seed: int = 0,
    *,
    sources: Sequence[str] = SOURCES,
    overwrite: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Write the ``n``-passage corpus of ``dataset`` (a set under ``data_dir`` with
    ``corpus.jsonl`` and ``questions.jsonl``) to the folder ``out``; returns what
    ``out/scale.json`` records. ``sources``: the sets buried with the pool (the dataset itself
    is skipped among them)."""
    data, folder = Path(data_dir), Path(out)
    if n < 1:
        raise SystemExit(f"error: --n must be >= 1, got {n}")
    questions = data / dataset / "questions.jsonl"
    if not questions.is_file():
        raise SystemExit(f"error: no questions at {questions}")
    if (folder / "corpus.jsonl").exists() and not overwrite:
        raise SystemExit(f"error: {folder / 'corpus.jsonl'} exists; pass --overwrite")
    pool = read_set(data, dataset)
    seen = {(p.title, p.text) for p in pool}
    others: list[Source] = []
    duplicates: dict[str, int] = {}
    for name in sources:
        if name == dataset:
            continue
        for p in read_set(data, name):
            if (p.title, p.text) in seen:
                duplicates[name] = duplicates.get(name, 0) + 1
                continue
            seen.add((p.title, p.text))
            others.append(p)
    del seen
    chosen, n_synthetic = plan(len(pool), others, n, seed)
    # synthetic passages come from every real passage of the other QA sets, written or not
    makers = [p for p in others if p.wiki]
    real_titles = {p.title for p in pool} | {p.title for p in others}
    taken = set(real_titles)
    synth = Synthesizer(makers, taken, random.Random(f"synthetic-{seed}")) if n_synthetic else None

    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / "corpus.jsonl.tmp"
    digest = hashlib.sha256()
    by_source: dict[str, _Stats] = {}
    written_titles: dict[str, int] = {}
    shared_titles = 0  # real passages whose title an earlier real passage has
    total_chars = 0
    bar = tqdm(total=n, desc=f"{dataset} x{n}", unit="passage", disable=not progress)

    def rows() -> Iterator[tuple[str, str, str]]:
        for p in pool:
            yield "pool:" + dataset, p.title, p.text
        for p in chosen:
            yield p.dataset, p.title, p.text
        for _ in range(n_synthetic):
            assert synth is not None
            title, text = synth.passage()
            yield "synthetic", title, text

    t0 = time.perf_counter()
    collisions = 0  # synthetic titles equal to a title already written: none by construction
    with open(tmp, "wb") as f:
        buf: list[str] = []

        def flush() -> None:
            chunk = "".join(buf).encode("utf-8")
            digest.update(chunk)
            f.write(chunk)
            bar.update(len(buf))
            buf.clear()

        for idx, (src, title, text) in enumerate(rows()):
            line = json.dumps({"idx": idx, "title": title, "text": text}, ensure_ascii=False)
            buf.append(line + "\n")
            by_source.setdefault(src, _Stats()).add(text)
            total_chars += len(text)
            if title in written_titles:
                if src == "synthetic":
                    collisions += 1
                else:
                    shared_titles += 1
            written_titles[title] = written_titles.get(title, 0) + 1
            if len(buf) >= 4096:
                flush()
        flush()
    bar.close()
    seconds = time.perf_counter() - t0
    os.replace(tmp, folder / "corpus.jsonl")
    shutil.copyfile(questions, folder / "questions.jsonl")

    written = sum(s.count for s in by_source.values())
    info: dict[str, Any] = {
        "dataset": dataset,
        "n": n,
        "seed": seed,
        "passages": written,
        "order": ["pool:" + dataset, *[s for s in sources if s != dataset], "synthetic"],
        "by_source": {k: v.to_json() for k, v in by_source.items()},
        "duplicates_skipped": duplicates,
        "real_passages_available": len(pool) + len(others),
        "synthetic_made_from": sorted({p.dataset for p in makers}),
        "checks": {
            "distinct_titles": len(written_titles),
            "titles_unique": len(written_titles) == written,
            # real sets share some titles (the same article in two sets, different text);
            # every synthetic title is new
            "real_passages_with_an_earlier_real_title": shared_titles,
            "synthetic_title_collisions": collisions,
            "mean_chars": round(total_chars / written, 1),
        },
        "sha256": digest.hexdigest(),
    }
    (folder / "scale.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    info["seconds"] = round(seconds, 1)
    return info


def corpus_cmd(args: argparse.Namespace) -> None:
    data_dir = args.data_dir or os.environ.get("HOPGRAPH_DATA")
    if not data_dir:
        raise SystemExit("error: give --data-dir or set HOPGRAPH_DATA")
    t0 = time.perf_counter()
    info = make_corpus(
        args.dataset, args.n, args.out, data_dir, args.seed, overwrite=args.overwrite,
        progress=not args.quiet,
    )  # fmt: skip
    secs = time.perf_counter() - t0
    size = (Path(args.out) / "corpus.jsonl").stat().st_size
    print(f"wrote {args.out}: {info['passages']} passages, {size / 1e6:.1f} MB, {secs:.1f}s")
    for src, s in info["by_source"].items():
        print(f"  {src:<24} {s['passages']:>9} passages, mean {s['mean_chars']} chars")
    if info["duplicates_skipped"]:
        print(f"  duplicates skipped: {info['duplicates_skipped']}")
    print(f"  checks: {json.dumps(info['checks'])}")
    print(f"  sha256 {info['sha256']}")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus", help="write a deterministic N-passage corpus (unified layout)")
    c.add_argument("--dataset", required=True, help="the set whose pool and questions are kept")
    c.add_argument("--n", type=int, required=True, help="passages in the corpus")
    c.add_argument("--out", required=True, help="folder to write (outside the repository)")
    c.add_argument("--data-dir", default=None, help="shared data folder (or $HOPGRAPH_DATA)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--overwrite", action="store_true", help="replace an existing corpus.jsonl")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=corpus_cmd)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.exit(main())
