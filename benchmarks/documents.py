"""Real documents into clean passages: Debian's Python HTML documentation and PDF manuals.
Table: docs/results.md, "Documents, filters, updates, serving" (documents;
docs/notes/documents-filters.md). Run time on the 2-core machine: under a minute to read the sample
(2.7 + 0.5 + 6.6 s recorded in benchmarks/results/documents.json); ``--index`` about 4 min (its
build 199 s recorded).

    apt-get install python3.11-doc gnuplot-doc bzip2-doc libtasn1-doc nettle-dev \\
        shared-mime-info fontconfig
    .venv/bin/python benchmarks/documents.py --sample /tmp/realdocs   # copies the documents
    .venv/bin/python benchmarks/documents.py --sample /tmp/realdocs --index  # + build and search

The sample is the ``library/`` and ``tutorial/`` folders of Python 3.11's HTML documentation
(334 pages), gnuplot's LaTeX2HTML manual (no main landmark: the body-walk path) and six PDF
manuals. For each folder: passages, reading time and peak RSS, and the checks of issue 36 —
passages with Markdown escapes (``\\_`` and the like outside code, where the documentation
does not have them itself), pilcrows or code fences, titles ending in the site-wide suffix,
heading labels that are not a heading of their page (HTML), PDF passages that are a table of
contents or index (three dot-leader lines or more), PDF passages starting with a running header
(a line found at the top or bottom of at least a quarter of the document's raw pages), and what
the reading dropped. ``--trafilatura`` also reads the HTML the way hopgraph did before (the main
text as Markdown by trafilatura) and counts the same things.

``--index`` builds the default index of the whole sample with ``hopgraph index`` (a child
process: its time and peak RSS) and runs the developer questions below (gold: the pages that
answer them; five need two pages) with bm25 and the default, with ``max_per_doc`` none, 1, 2
and 3: distinct pages in the top 5 and the share of gold pages found there. Results:
``benchmarks/results/documents.json``.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import lxml.html

from hopgraph.corpus import iter_corpus
from hopgraph.corpus.documents.folder import new_report
from hopgraph.corpus.documents.titles import shared_affix

PY_DOCS = Path("/usr/share/doc/python3.11/html")
GNUPLOT_HTML = Path("/usr/share/doc/gnuplot/htmldocs")
PDFS = {
    "bzip2-manual.pdf": "/usr/share/doc/bzip2/manual.pdf.gz",
    "fontconfig-user.pdf": "/usr/share/doc/fontconfig/fontconfig-user.pdf.gz",
    "gnuplot.pdf": "/usr/share/doc/gnuplot/gnuplot.pdf",
    "libtasn1.pdf": "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "nettle.pdf": "/usr/share/doc/nettle-dev/nettle.pdf.gz",
    "shared-mime-info-spec.pdf": "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
}

# (question, gold documents): written by reading the pages, before any run
QUESTIONS: list[tuple[str, set[str]]] = [
    ("How do I cache the results of an expensive function call?", {"library/functools.html"}),
    ("class decorator that fills in the missing rich comparison methods",
     {"library/functools.html"}),
    ("parse command line arguments with subcommands", {"library/argparse.html"}),
    ("serialize a Python object to JSON with sorted keys", {"library/json.html"}),
    ("run an external command and capture its output", {"library/subprocess.html"}),
    ("read a CSV file whose first row is a header", {"library/csv.html"}),
    ("create a temporary directory that is removed automatically",
     {"library/tempfile.html"}),
    ("difference between lists and tuples", {"tutorial/datastructures.html"}),
    ("iterate over all permutations of a sequence", {"library/itertools.html"}),
    ("timezone aware datetime objects", {"library/datetime.html"}),
    ("match a regular expression only at the beginning of a string", {"library/re.html"}),
    ("count how many times each element occurs", {"library/collections.html"}),
    ("run coroutines concurrently and wait for all of them", {"library/asyncio-task.html"}),
    ("handle exceptions with try except finally clauses", {"tutorial/errors.html"}),
    ("compress a file with gzip", {"library/gzip.html"}),
    ("assert that a unit test raises an exception", {"library/unittest.html"}),
    ("recover data from a damaged bzip2 file", {"bzip2-manual.pdf"}),
    ("gnuplot logarithmic scale on the y axis", {"gnuplot.pdf", "gnuplot-html/node335.html"}),
    ("fontconfig configuration file rules to match and edit font properties",
     {"fontconfig-user.pdf"}),
    ("encrypt with AES in CBC mode using nettle", {"nettle.pdf"}),
    ("read a gzip-compressed CSV file", {"library/gzip.html", "library/csv.html"}),
    ("serialize a dataclass instance to JSON", {"library/dataclasses.html", "library/json.html"}),
    ("convert a datetime to another time zone from the IANA database",
     {"library/datetime.html", "library/zoneinfo.html"}),
    ("run several shell commands in parallel with a thread pool",
     {"library/subprocess.html", "library/concurrent.futures.html"}),
    ("list files matching a wildcard pattern and read them as text",
     {"library/glob.html", "library/pathlib.html"}),
]  # fmt: skip

_ESCAPE = re.compile(r"\\[_*\[\]#`>]")
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*\d+\s*$", re.M)


def make_sample(out: Path) -> None:
    """Copy the documents into ``out`` (html/, gnuplot-html/, pdf/)."""
    for sub in ("library", "tutorial"):
        shutil.copytree(PY_DOCS / sub, out / "python-html" / sub, dirs_exist_ok=True)
    (out / "gnuplot-html").mkdir(parents=True, exist_ok=True)
    for f in GNUPLOT_HTML.glob("*.html"):
        shutil.copy(f, out / "gnuplot-html" / f.name)
    (out / "pdf").mkdir(parents=True, exist_ok=True)
    for name, src in PDFS.items():
        data = Path(src).read_bytes()
        (out / "pdf" / name).write_bytes(gzip.decompress(data) if src.endswith(".gz") else data)


def _page_headings(path: Path) -> set[str]:
    root = lxml.html.parse(str(path)).getroot()
    for a in root.xpath("//a[contains(@class, 'headerlink')]"):
        a.drop_tree()
    found = root.xpath("//h1|//h2|//h3|//h4|//h5|//h6")
    return {" ".join(h.text_content().replace("¶", "").split()) for h in found}


def _raw_running_lines(pdf: Path) -> set[str]:
    """Lines (digits masked) at the top or bottom of at least a quarter of the raw pages."""
    import pypdf

    pages = [p.extract_text() or "" for p in pypdf.PdfReader(str(pdf)).pages]
    counts: Counter[str] = Counter()
    for text in pages:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for ln in {*lines[:1], *lines[-1:]}:
            counts[re.sub(r"\d+", "#", ln)] += 1
    return {ln for ln, n in counts.items() if n >= max(3, len(pages) / 4)}


def check_folder(folder: Path, kind: str) -> dict:
    report = new_report()
    t0 = time.perf_counter()
    passages = list(iter_corpus(folder, report=report))
    secs = time.perf_counter() - t0
    out = {
        "folder": str(folder),
        "passages": len(passages),
        "read_seconds": round(secs, 2),
        "escapes": sum(bool(_ESCAPE.search(p.text)) for p in passages),
        "escape_underscore": sum("\\_" in p.text for p in passages),
        "pilcrows": sum("¶" in p.text for p in passages),
        "fences": sum("```" in p.text for p in passages),
        "reading": report,
    }
    if kind == "html":
        raw = {}
        for f in sorted(folder.rglob("*.html")):
            m = re.search(rb"<title[^>]*>(.*?)</title", f.read_bytes()[:16384], re.I | re.S)
            text = html.unescape(m.group(1).decode("utf-8", "replace")) if m else ""
            raw[f] = " ".join(text.split()) or None
        _, suffix = shared_affix(list(raw.values()))
        out["site_suffix"] = suffix
        out["titles_with_suffix"] = sum(
            bool(suffix) and p.title.endswith(suffix.strip()) for p in passages
        )
        heads: dict[str, set[str]] = {}
        labelled = real = 0
        for p in passages:
            label = p.metadata.get("heading")
            if not label:
                continue
            src = p.metadata["source"]
            if src not in heads:
                heads[src] = _page_headings(folder / src)
            labelled += 1
            real += label.split(" > ")[-1] in heads[src]
        out["heading_labels"] = labelled
        out["heading_labels_real"] = round(real / labelled, 4) if labelled else None
    else:
        running = {f.name: _raw_running_lines(f) for f in sorted(folder.glob("*.pdf"))}
        out["contents_passages"] = sum(len(_DOT_LEADER.findall(p.text)) >= 3 for p in passages)
        firsts = [(p, re.sub(r"\d+", "#", p.text.strip().split("\n")[0].strip())) for p in passages]
        out["starts_with_running_header"] = sum(  # a bare number may be a table's cell
            first != "#" and first in running[p.metadata["source"]] for p, first in firsts
        )
        out["titles"] = sorted({p.title for p in passages})
    return out


def trafilatura_counts(folder: Path) -> dict:
    """The HTML read as hopgraph read it before: trafilatura's main text as Markdown."""
    import trafilatura

    t0 = time.perf_counter()
    texts = []
    for f in sorted(folder.rglob("*.html")):
        data = f.read_bytes()
        texts.append(trafilatura.extract(data, output_format="markdown", include_tables=True) or "")
    return {
        "pages": len(texts),
        "seconds": round(time.perf_counter() - t0, 2),
        "pages_with_escapes": sum(bool(_ESCAPE.search(t)) for t in texts),
        "pages_with_pilcrows": sum("¶" in t for t in texts),
        "pages_with_fences": sum("```" in t for t in texts),
    }


def search_checks(index_dir: Path) -> dict:
    from hopgraph.index import Index
    from hopgraph.retrieve import get_retriever

    index = Index.load(index_dir)
    doc = {pid: index.corpus.get(pid).metadata.get("doc_id") for pid in index.corpus.ids}

    def top(method: str, query: str, k: int, **kw) -> list[str]:
        ranking = get_retriever(index, method).search(query, k=k, **kw)
        return [doc[i] for i in ranking.ids]

    out_titles = [index.corpus.get(pid).title for pid in index.corpus.ids]
    functools = "python-html/library/functools.html"
    out: dict = {
        "titles_with_python_suffix": sum(
            t.endswith("Python 3.11.2 documentation") for t in out_titles
        ),
        "reading": index.reading,
        "total_ordering_rank": {},
    }
    for method in ("bm25", "default"):
        docs = top(method, "total_ordering", 5, max_per_doc=0)
        rank = docs.index(functools) + 1 if functools in docs else None
        out["total_ordering_rank"][method] = rank
    for method in ("bm25", "default"):
        for cap in (0, 1, 2, 3):
            distinct, found = [], []
            for query, gold in QUESTIONS:
                docs = top(method, query, 5, max_per_doc=cap)
                gold_ids = {_sample_id(g) for g in gold}
                distinct.append(len(set(docs)))
                found.append(len(gold_ids & set(docs)) / len(gold_ids))
            two = [f for f, (_, g) in zip(found, QUESTIONS, strict=True) if len(g) > 1]
            out[f"{method} max_per_doc={cap or 'none'}"] = {
                "distinct_pages_top5": round(statistics.mean(distinct), 2),
                "gold_pages_in_top5": round(statistics.mean(found), 3),
                "two_page_questions": round(statistics.mean(two), 3),
            }
    return out


def _sample_id(gold: str) -> str:
    if gold.endswith(".pdf"):
        return f"pdf/{gold}"
    if gold.startswith("gnuplot-html/"):
        return gold
    return f"python-html/{gold}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=Path, required=True, help="folder for the sample")
    ap.add_argument("--trafilatura", action="store_true", help="also the previous HTML path")
    ap.add_argument("--index", action="store_true", help="build the index and search it")
    ap.add_argument("--out", default="benchmarks/results/documents.json")
    args = ap.parse_args()
    if not (args.sample / "pdf").exists():
        make_sample(args.sample)
    results: dict = {"machine": _machine()}
    for name, kind in (("python-html", "html"), ("gnuplot-html", "html"), ("pdf", "pdf")):
        results[name] = check_folder(args.sample / name, kind)
        if args.trafilatura and kind == "html":
            results[name]["trafilatura_markdown"] = trafilatura_counts(args.sample / name)
        print(json.dumps({name: results[name]}, indent=1, ensure_ascii=False), flush=True)
    if args.index:
        ix = args.sample.parent / (args.sample.name + "-index")
        t0 = time.perf_counter()
        subprocess.run(
            [str(Path(sys.executable).parent / "hopgraph"), "index", str(args.sample), "-o",
             str(ix), "--force", "-q"],
            check=True,
        )  # fmt: skip
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        results["index"] = {
            "build_seconds": round(time.perf_counter() - t0, 1),
            "build_peak_rss_mb": rss // 1024,
            "disk_mb": round(sum(f.stat().st_size for f in ix.rglob("*") if f.is_file()) / 2**20),
            **search_checks(ix),
        }
        print(json.dumps({"index": results["index"]}, indent=1), flush=True)
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def _machine() -> str:
    import os
    import platform

    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    simd = "AVX-512 bf16" if "avx512_bf16" in flags else "AVX2" if "avx2" in flags else "?"
    return f"{os.cpu_count()} cores, {simd}, {platform.python_version()}"


if __name__ == "__main__":
    main()
